package conditions

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpstress/stress/study"
)

// Spec is one condition: everything the project says of it, in one place
// (Table). Adding a condition is its name in study (study.AllConditions,
// which manifests validate), its entry here with its renderer, the
// contrasts it takes part in (Contrasts, below the table), and its
// goldens; an error shape that combines proposals already served needs
// no renderer of its own (shape reads its parts from its name).
type Spec struct {
	Name   study.Condition
	Family Family
	// Contracts are the machine-readable contracts the rendering can
	// carry, each after its label line (ContractAt); nil for none.
	Contracts []Contract
	// Cell is the condition's place in the format × wording ×
	// failure-statement factorial; nil outside it.
	Cell *Cell
	// RevealsPolicy says the rendering discloses the preferred policy:
	// the control envelope carries it in error.policy, every factorial
	// cell as a label or a paraphrase, prose in words, agentGuidance in
	// words. The misplaced-trust envelopes disclose a policy too, but not
	// the preferred one.
	RevealsPolicy bool

	// annotate renders what the condition adds below the observation
	// (annotation); nil adds nothing unless result is set.
	annotate func(s *study.Scenario, c study.Condition) (string, error)
	// result renders the complete tool result a contract condition shows
	// after its label (contractResult); ok is false where it has none.
	result func(s *study.Scenario, c study.Condition) (raw json.RawMessage, ok bool, err error)
	// reshape renders what an error shape shows in place of the recorded
	// observation (ShapeResult).
	reshape func(s *study.Scenario, c study.Condition) (raw json.RawMessage, label string, ok bool, err error)
	// expresses reports whether the rendering of s carries what defines
	// the condition (Expresses); nil: every scenario does.
	expresses func(s *study.Scenario, c study.Condition) bool
}

// Family is a group of conditions built the same way.
type Family string

// The families of Table.
const (
	// FamilyPaired: the paper's four paired conditions (study.Conditions).
	FamilyPaired Family = "paired"
	// FamilyCounterfactual: the control envelope and the error-category
	// contract of seed 002, each a tool result beside the observation.
	FamilyCounterfactual Family = "counterfactual"
	// FamilyFactorial: the cells of the format × wording × failure-statement
	// factorial other than structured (which is paired).
	FamilyFactorial Family = "factorial"
	// FamilyChannel: the category contract with one delivery channel dropped.
	FamilyChannel Family = "channel"
	// FamilyTrust: misplaced trust, a contract that contradicts the observation.
	FamilyTrust Family = "trust"
	// FamilyShape: the error shapes proposed for MCP (study.ShapeConditions),
	// shown in place of the recorded observation.
	FamilyShape Family = "shape"
)

// Contract is a machine-readable contract a rendering carries, as a
// client finds it: by the label line that opens it (ContractAt). Its
// value is what models/failclosed records as the contract it read.
type Contract string

// The contracts of Table.
const (
	ContractEnvelope    Contract = "envelope"     // EnvelopeLabel: the control envelope
	ContractCategory    Contract = "category"     // CategoryLabel: the error-category result
	ContractShapeResult Contract = "shape_result" // ShapeResultLabel: a tool result under an error shape
	ContractShapeError  Contract = "shape_error"  // ShapeErrorLabel: a JSON-RPC error under an error shape
)

// contractLabels are the label lines that open each contract.
var contractLabels = map[string]Contract{
	EnvelopeLabel:    ContractEnvelope,
	CategoryLabel:    ContractCategory,
	ShapeResultLabel: ContractShapeResult,
	ShapeErrorLabel:  ContractShapeError,
}

// ContractAt reports which contract follows line, when line (without
// its line break) is the label that opens one.
func ContractAt(line string) (Contract, bool) {
	k, ok := contractLabels[line]
	return k, ok
}

// Contracts a condition's rendering carries.
var (
	envelopeContracts = []Contract{ContractEnvelope}
	categoryContracts = []Contract{ContractCategory}
	shapeContracts    = []Contract{ContractShapeResult, ContractShapeError}
)

// Table lists every condition in the order of study.AllConditions: what
// each renders (annotation, contractResult, ShapeResult), its family, the
// contracts it carries, its factorial cell, whether it reveals the
// preferred policy, and which scenarios it expresses (Expresses).
var Table = []Spec{
	{Name: study.Normalized, Family: FamilyPaired},
	{Name: study.CodeOnly, Family: FamilyPaired, annotate: codeOnly},
	cell(study.Structured, FamilyPaired, Cell{JSONFormat, LabelWording, false}),
	{Name: study.Prose, Family: FamilyPaired, RevealsPolicy: true, annotate: prose},
	{Name: study.Envelope, Family: FamilyCounterfactual, Contracts: envelopeContracts, RevealsPolicy: true, result: controlEnvelope},
	{Name: study.Category, Family: FamilyCounterfactual, Contracts: categoryContracts, result: categoryResultOf, expresses: hasCategory},

	cell(study.StructuredParaphrase, FamilyFactorial, Cell{JSONFormat, ParaphraseWording, false}),
	cell(study.SentenceLabel, FamilyFactorial, Cell{SentenceFormat, LabelWording, false}),
	cell(study.SentenceParaphrase, FamilyFactorial, Cell{SentenceFormat, ParaphraseWording, false}),
	cell(study.StructuredFailed, FamilyFactorial, Cell{JSONFormat, LabelWording, true}),
	cell(study.StructuredParaphraseFailed, FamilyFactorial, Cell{JSONFormat, ParaphraseWording, true}),
	cell(study.SentenceLabelFailed, FamilyFactorial, Cell{SentenceFormat, LabelWording, true}),
	cell(study.SentenceParaphraseFailed, FamilyFactorial, Cell{SentenceFormat, ParaphraseWording, true}),

	{Name: study.CategoryStructured, Family: FamilyChannel, Contracts: categoryContracts, result: categoryResultOf, expresses: hasCategory},
	{Name: study.CategoryText, Family: FamilyChannel, Contracts: categoryContracts, result: categoryResultOf, expresses: hasCategory},

	{Name: study.EnvelopeFalseReplay, Family: FamilyTrust, Contracts: envelopeContracts, result: falseEnvelopeResult},
	{Name: study.EnvelopeFalseTarget, Family: FamilyTrust, Contracts: envelopeContracts, result: falseEnvelopeResult},
	{Name: study.CategoryFalseRetryable, Family: FamilyTrust, Contracts: categoryContracts, result: categoryResultOf, expresses: hasCategory},

	arm(study.SEP2145),
	arm(study.ToolFailureShape),
	arm(study.RateLimited),
	arm(study.ToolFailureSEP2145),
	arm(study.SEP2145RateLimited),
	arm(study.ToolFailureGuidance),
	arm(study.ToolFailureApplied),
}

// Contrast is a predeclared comparison of two conditions, A − B, on the
// strict outcome, and what it isolates ("" for the paper's two).
type Contrast struct {
	A, B     study.Condition
	Isolates string
}

// Contrasts are the comparisons fixed in advance, in the order analysis
// computes them (analysis.Predeclared): docs/specification.md section 4's
// code_only − normalized (the only answer-free comparison) and structured
// − prose (two ways of disclosing the answer); the twelve simple effects
// of the factorial (factorialContrasts); the two delivery channels of the
// category contract against both; then the error shapes: each against
// structured (how near the shape comes to disclosing the policy label),
// ToolFailure's classification against seed 002's category contract,
// SEP-2145's move against the normalized observation (it changes only
// failures the server answered with a JSON-RPC error, unknown tools among
// them), and what a part adds to an arm (SEP-3304 on SEP-2145, the
// counter-proposal's applied and ToolFailure's agentGuidance each beside
// ToolFailure alone). A contrast with an error shape is like-for-like
// (analysis: made on the scenarios both conditions express).
var Contrasts = slices.Concat([]Contrast{
	{A: study.CodeOnly, B: study.Normalized},
	{A: study.Structured, B: study.Prose},
}, factorialContrasts(), []Contrast{
	{A: study.CategoryStructured, B: study.Category, Isolates: "channel: text copy dropped"},
	{A: study.CategoryText, B: study.Category, Isolates: "channel: structuredContent dropped"},

	{A: study.SEP2145, B: study.Structured, Isolates: "shape: SEP-2145 against the policy label"},
	{A: study.ToolFailureShape, B: study.Structured, Isolates: "shape: ToolFailure against the policy label"},
	{A: study.RateLimited, B: study.Structured, Isolates: "shape: RateLimited against the policy label"},
	{A: study.ToolFailureSEP2145, B: study.Structured, Isolates: "shape: ToolFailure with SEP-2145 against the policy label"},
	{A: study.ToolFailureShape, B: study.Category, Isolates: "classification: ToolFailure against the category contract"},
	{A: study.SEP2145, B: study.Normalized, Isolates: "channel: protocol errors as isError results"},
	{A: study.SEP2145RateLimited, B: study.SEP2145, Isolates: "SEP-3304 on SEP-2145: the server's own rate limit as -32023"},
	{A: study.ToolFailureApplied, B: study.ToolFailureShape, Isolates: "counter-proposal: applied beside ToolFailure's fields"},
	{A: study.ToolFailureGuidance, B: study.ToolFailureShape, Isolates: "agentGuidance: the answer in words beside ToolFailure's fields"},
})

// factorialContrasts returns the twelve simple effects of the factorial:
// each pairs two cells that differ in exactly one factor, at each level
// of the other two. Format is JSON − sentence, wording label −
// paraphrase, the statement with − without; four of each, in that order.
func factorialContrasts() []Contrast {
	level := func(c Cell, factor string) string {
		var parts []string
		if factor != "format" {
			parts = append(parts, string(c.Format))
		}
		if factor != "wording" {
			parts = append(parts, string(c.Wording))
		}
		if factor != "failure statement" {
			parts = append(parts, map[bool]string{true: "statement", false: "no statement"}[c.Failed])
		}
		return factor + " at " + strings.Join(parts, ", ")
	}
	var out []Contrast
	add := func(a, b Cell, factor string) {
		out = append(out, Contrast{A: factorialCondition(a), B: factorialCondition(b), Isolates: level(a, factor)})
	}
	for _, failed := range []bool{false, true} {
		for _, w := range []Wording{LabelWording, ParaphraseWording} {
			add(Cell{JSONFormat, w, failed}, Cell{SentenceFormat, w, failed}, "format")
		}
	}
	for _, failed := range []bool{false, true} {
		for _, f := range []Format{JSONFormat, SentenceFormat} {
			add(Cell{f, LabelWording, failed}, Cell{f, ParaphraseWording, failed}, "wording")
		}
	}
	for _, f := range []Format{JSONFormat, SentenceFormat} {
		for _, w := range []Wording{LabelWording, ParaphraseWording} {
			add(Cell{f, w, true}, Cell{f, w, false}, "failure statement")
		}
	}
	return out
}

// cell is the entry of the factorial cell c: it reveals the preferred
// policy (a label or a paraphrase) and renders Factorial of its cell.
func cell(c study.Condition, f Family, cell Cell) Spec {
	return Spec{Name: c, Family: f, Cell: &cell, RevealsPolicy: true,
		annotate: func(s *study.Scenario, _ study.Condition) (string, error) { return factorial(s, cell) }}
}

// arm is the entry of error shape c (study.ShapeConditions): what a
// server following its proposals sends, in place of the recorded
// observation (ShapeResult, which reads the parts from c's name); it
// reveals the preferred policy when it carries agentGuidance.
func arm(c study.Condition) Spec {
	return Spec{Name: c, Family: FamilyShape, Contracts: shapeContracts, RevealsPolicy: c.Guides(), reshape: ShapeResult, expresses: shapeActs}
}

// specs indexes Table by name.
var specs = func() map[study.Condition]*Spec {
	m := make(map[study.Condition]*Spec, len(Table))
	for i := range Table {
		m[Table[i].Name] = &Table[i]
	}
	return m
}()

// Lookup returns the entry of condition c in Table; ok is false for an
// unknown condition.
func Lookup(c study.Condition) (spec Spec, ok bool) {
	p, ok := specs[c]
	if !ok {
		return Spec{}, false
	}
	return *p, true
}

// unknown is the error of a condition without an entry.
func unknown(c study.Condition) error {
	return fmt.Errorf("unknown condition %q (want one of %v)", c, study.AllConditions)
}

// Format is how a factorial cell states the code and the policy.
type Format string

// The two formats of the factorial.
const (
	JSONFormat     Format = "json"     // Error details: {"code": …, "policy": …}
	SentenceFormat Format = "sentence" // Error details: the code is …, and the policy is to ….
)

// Wording is how a factorial cell names the policy.
type Wording string

// The two wordings of the factorial.
const (
	LabelWording      Wording = "label"      // the exact policy label
	ParaphraseWording Wording = "paraphrase" // a fixed paraphrase of the action, per label
)

// Cell is a condition's place in the format × wording × failure-statement
// factorial. Failed adds the explicit failure statement.
type Cell struct {
	Format  Format
	Wording Wording
	Failed  bool
}

// CellOf returns c's place in the factorial (Spec.Cell); ok is false for
// a condition outside it.
func CellOf(c study.Condition) (cell Cell, ok bool) {
	if p, ok := specs[c]; ok && p.Cell != nil {
		return *p.Cell, true
	}
	return Cell{}, false
}

// factorialCondition returns the condition of a factorial cell, or ""
// for a cell no condition has.
func factorialCondition(cell Cell) study.Condition {
	for _, sp := range Table {
		if sp.Cell != nil && *sp.Cell == cell {
			return sp.Name
		}
	}
	return ""
}
