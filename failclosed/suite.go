package failclosed

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/study"
)

// suiteFS holds the conformance suite's data files, one case per suite/*.json
// file: the 2 transient and 17 malformed cases of
// docs/specification.md section 6 and the category-contract cases. The 21
// control cases are not files: Controls builds them from a corpus.
//
//go:embed suite/*.json
var suiteFS embed.FS

// suiteDir is the directory of suiteFS that holds the cases.
const suiteDir = "suite"

// BuiltinSuite loads the embedded suite (suite/*.json).
func BuiltinSuite() ([]Case, error) { return loadSuite(suiteFS, suiteDir) }

// Kind is the family a conformance case belongs to.
type Kind string

// The case families: the three of docs/specification.md section 6, decided
// by Decide, and the error-category contract of seed 002, decided by
// DecideCategory.
const (
	KindControl   Kind = "control"   // a counterfactual control envelope of a corpus scenario
	KindTransient Kind = "transient" // a synthetic transient failure with a safe replay
	KindMalformed Kind = "malformed" // a malformed or unsafe input that must fail closed
	KindCategory  Kind = "category"  // an input of the error-category contract, accepted or not
	KindShape     Kind = "shape"     // an input of an error shape proposed for MCP (Case.Shape), accepted or not
)

// Kinds lists the case families in canonical order.
var Kinds = []Kind{KindControl, KindTransient, KindMalformed, KindCategory, KindShape}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool { return slices.Contains(Kinds, k) }

// Paper reports whether k is a family of the paper's suite
// (docs/specification.md section 6: control, transient, malformed).
func (k Kind) Paper() bool { return k == KindControl || k == KindTransient || k == KindMalformed }

// Case is one conformance case: an input and the decision expected in each
// listed mode. It is stored as one JSON file (see loadSuite).
type Case struct {
	ID         string          `json:"id"`                   // unique case id
	Kind       Kind            `json:"kind"`                 // case family
	Note       string          `json:"note,omitempty"`       // what the case exercises, for people
	Modes      []Mode          `json:"modes"`                // modes the expectation holds in; at least one
	WantPolicy study.Policy    `json:"want_policy"`          // expected policy
	WantReason Reason          `json:"want_reason"`          // expected reason; "" for an actionable policy
	WantDelay  int64           `json:"want_delay_ms"`        // expected Decision.Delay, in milliseconds (≥ 0)
	Input      json.RawMessage `json:"input,omitempty"`      // the input as raw JSON
	InputText  string          `json:"input_text,omitempty"` // the input as text, for inputs that are not JSON objects
	// Shape is the error shape of a KindShape case: study.ToolFailureShape
	// (a tool result, DecideToolFailure) or study.RateLimited (a JSON-RPC
	// error object, DecideRateLimited).
	Shape study.Condition `json:"shape,omitempty"`
	// Idempotent is what the client knows of the failing tool in a
	// ToolFailure case: idempotentHint true. The client's clock reads
	// study.ShapeEpoch.
	Idempotent bool `json:"idempotent,omitempty"`
	// Protocol is the MCP version the session of a ToolFailure case
	// negotiated (Call.Protocol); "" when the client does not know it.
	Protocol string `json:"protocol,omitempty"`
}

// Decide runs the client the case's family calls for: DecideCategory for
// KindCategory, DecideToolFailure or DecideRateLimited for KindShape (by
// Shape), Decide for the others.
func (c Case) Decide(m Mode) Decision {
	switch {
	case c.Kind == KindCategory:
		return DecideCategory(c.Raw(), m)
	case c.Kind == KindShape && c.Shape == study.RateLimited:
		return DecideRateLimited(c.Raw(), m)
	case c.Kind == KindShape:
		return DecideToolFailure(c.Raw(), m, Call{Idempotent: c.Idempotent, Now: study.ShapeEpoch, Protocol: c.Protocol})
	}
	return Decide(c.Raw(), m)
}

// Raw returns the bytes handed to the client: Input if set, else InputText.
func (c Case) Raw() []byte {
	if c.Input != nil {
		return c.Input
	}
	return []byte(c.InputText)
}

// check reports the first inconsistency of a loaded case, or nil.
func (c Case) check() error {
	switch {
	case c.ID == "":
		return fmt.Errorf("id is empty")
	case !c.Kind.Valid():
		return fmt.Errorf("kind %q is not control, transient, malformed, category or shape", c.Kind)
	case (c.Kind == KindShape) != (c.Shape != ""):
		return fmt.Errorf("shape %q goes with kind shape only, and kind shape needs one", c.Shape)
	case c.Shape != "" && c.Shape != study.ToolFailureShape && c.Shape != study.RateLimited:
		return fmt.Errorf("shape %q is not %s or %s", c.Shape, study.ToolFailureShape, study.RateLimited)
	case c.Idempotent && c.Shape != study.ToolFailureShape:
		return fmt.Errorf("idempotent goes with shape %s only", study.ToolFailureShape)
	case c.Protocol != "" && c.Shape != study.ToolFailureShape:
		return fmt.Errorf("protocol goes with shape %s only", study.ToolFailureShape)
	case c.Protocol != "" && !protocolVersion(c.Protocol):
		return fmt.Errorf("protocol %q is not an MCP version (YYYY-MM-DD)", c.Protocol)
	case len(c.Modes) == 0:
		return fmt.Errorf("modes is empty")
	case !c.WantPolicy.Valid():
		return fmt.Errorf("want_policy %q is not a policy label", c.WantPolicy)
	case c.WantReason != "" && !c.WantReason.Valid():
		return fmt.Errorf("want_reason %q is not a reason", c.WantReason)
	case (c.WantReason == "") != (c.WantPolicy != study.StopOrEscalate):
		return fmt.Errorf("want_policy %q and want_reason %q disagree: a reason goes with stop_or_escalate only", c.WantPolicy, c.WantReason)
	case c.Kind == KindMalformed && c.WantReason == "":
		return fmt.Errorf("a malformed case needs a want_reason")
	case c.WantDelay < 0:
		return fmt.Errorf("want_delay_ms %d is negative", c.WantDelay)
	case c.WantDelay > 0 && c.WantPolicy != study.RetryLater:
		return fmt.Errorf("want_delay_ms %d goes with retry_later only", c.WantDelay)
	case (c.Input != nil) == (c.InputText != ""):
		return fmt.Errorf("exactly one of input and input_text must be given")
	}
	for _, m := range c.Modes {
		if !m.Valid() {
			return fmt.Errorf("mode %q is not registry or explicit_action", m)
		}
	}
	return nil
}

// loadSuite reads every *.json file in dir of fsys, one Case per file, in
// file-name order, and checks ids are unique and expectations consistent.
func loadSuite(fsys fs.FS, dir string) ([]Case, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	var cases []Case
	seen := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		name := path.Join(dir, e.Name())
		b, err := input.ReadFS(fsys, name, name, input.ScenarioSet)
		if err != nil {
			return nil, fmt.Errorf("suite: %w", err)
		}
		if err := input.CheckJSON(b); err != nil {
			return nil, fmt.Errorf("suite: %s: %w", name, err)
		}
		var c Case
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("suite: %s: %w", name, err)
		}
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("suite: %s: %w", name, err)
		}
		if prev, ok := seen[c.ID]; ok {
			return nil, fmt.Errorf("suite: %s: id %q already used by %s", name, c.ID, prev)
		}
		seen[c.ID] = name
		cases = append(cases, c)
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("suite: no *.json cases in %s", dir)
	}
	return cases, nil
}

// CaseResult is the outcome of one case in one mode.
type CaseResult struct {
	ID   string   // case id
	Kind Kind     // case family
	Mode Mode     // mode Decide ran in
	Got  Decision // what Decide returned
	Pass bool     // Got matches the expected policy, reason and delay
	Diff string   // what differs when Pass is false, else ""
}

// Run decides every case in each of its modes and compares the decision
// with the expectation; results follow the order of cases and their modes.
func Run(cases []Case) []CaseResult {
	var out []CaseResult
	for _, c := range cases {
		for _, m := range c.Modes {
			got := c.Decide(m)
			var diffs []string
			if got.Policy != c.WantPolicy {
				diffs = append(diffs, fmt.Sprintf("policy %s, want %s", got.Policy, c.WantPolicy))
			}
			if got.Reason != c.WantReason {
				diffs = append(diffs, fmt.Sprintf("reason %q, want %q", got.Reason, c.WantReason))
			}
			if want := time.Duration(c.WantDelay) * time.Millisecond; got.Delay != want {
				diffs = append(diffs, fmt.Sprintf("delay %v, want %v", got.Delay, want))
			}
			out = append(out, CaseResult{
				ID: c.ID, Kind: c.Kind, Mode: m, Got: got,
				Pass: len(diffs) == 0, Diff: strings.Join(diffs, "; "),
			})
		}
	}
	return out
}

// Controls returns the control cases of a corpus
// (docs/specification.md section 6): one per scenario, id the scenario id,
// input its control envelope, expecting the preferred policy in both modes
// (with the envelope's retry.afterMs as the delay when that policy is
// retry_later).
func Controls(scenarios []study.Scenario) []Case {
	out := make([]Case, 0, len(scenarios))
	for _, s := range scenarios {
		c := Case{
			ID: s.ID, Kind: KindControl, Note: fmt.Sprintf("%s control envelope of %s", s.Cause, s.Server),
			Modes: allModes, WantPolicy: s.Preferred, Input: s.ControlEnvelope,
		}
		if s.Preferred == study.RetryLater {
			var env struct {
				Error struct {
					Retry struct {
						AfterMs int64 `json:"afterMs"`
					} `json:"retry"`
				} `json:"error"`
			}
			if json.Unmarshal(s.ControlEnvelope, &env) == nil {
				c.WantDelay = env.Error.Retry.AfterMs
			}
		}
		out = append(out, c)
	}
	return out
}

// protocolVersion reports whether v is written as an MCP version is, a
// date YYYY-MM-DD.
func protocolVersion(v string) bool {
	_, err := time.Parse(time.DateOnly, v)
	return err == nil
}
