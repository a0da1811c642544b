package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/study"
)

// ErrPair marks an Analyze failure caused by one of the requested pairs
// (a -pair flag): its message starts "pair A,B[,COLUMN]:".
var ErrPair = errors.New("pair")

// PairSpec names a paired comparison: condition A minus condition B on a
// column, within each (model, prompt) arm.
type PairSpec struct {
	A, B   study.Condition
	Column Column
	// Isolates says what a predeclared comparison of the factorial or the
	// delivery channels isolates: the factor and the levels held fixed
	// ("format at label, no statement") or the channel dropped; "" for
	// the paper's two and for requested pairs.
	Isolates string
}

// String returns "A,B,column".
func (p PairSpec) String() string { return fmt.Sprintf("%s,%s,%s", p.A, p.B, p.Column) }

// Predeclared lists the comparisons fixed in advance, all on Strict:
// STUDY.md section 4's code_only − normalized (the only answer-free
// comparison) and structured − prose (two ways of disclosing the answer);
// then the twelve simple effects of the format × wording ×
// failure-statement factorial (FactorialContrasts); then the two delivery
// channels of the category contract against both (ChannelContrasts). A
// comparison is computed in every arm that has both of its conditions.
var Predeclared = slices.Concat([]PairSpec{
	{A: study.CodeOnly, B: study.Normalized, Column: Strict},
	{A: study.Structured, B: study.Prose, Column: Strict},
}, FactorialContrasts(), ChannelContrasts)

// ChannelContrasts compare the category contract with one channel dropped
// against both channels (category), on Strict: what a host that shows the
// model only structuredContent, or only the text copy, changes.
var ChannelContrasts = []PairSpec{
	{A: study.CategoryStructured, B: study.Category, Column: Strict, Isolates: "channel: text copy dropped"},
	{A: study.CategoryText, B: study.Category, Column: Strict, Isolates: "channel: structuredContent dropped"},
}

// FactorialContrasts returns the twelve simple effects of the format ×
// wording × failure-statement factorial (study.FactorialConditions) on
// Strict: each pairs two cells that differ in exactly one factor, at each
// level of the other two. Format is JSON − sentence, wording label −
// paraphrase, the statement with − without; four of each, in that order.
func FactorialContrasts() []PairSpec {
	level := func(c study.Cell, factor string) string {
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
	var out []PairSpec
	add := func(a, b study.Cell, factor string) {
		out = append(out, PairSpec{A: study.FactorialCondition(a), B: study.FactorialCondition(b), Column: Strict, Isolates: level(a, factor)})
	}
	for _, failed := range []bool{false, true} {
		for _, w := range []study.Wording{study.LabelWording, study.ParaphraseWording} {
			add(study.Cell{Format: study.JSONFormat, Wording: w, Failed: failed}, study.Cell{Format: study.SentenceFormat, Wording: w, Failed: failed}, "format")
		}
	}
	for _, failed := range []bool{false, true} {
		for _, f := range []study.Format{study.JSONFormat, study.SentenceFormat} {
			add(study.Cell{Format: f, Wording: study.LabelWording, Failed: failed}, study.Cell{Format: f, Wording: study.ParaphraseWording, Failed: failed}, "wording")
		}
	}
	for _, f := range []study.Format{study.JSONFormat, study.SentenceFormat} {
		for _, w := range []study.Wording{study.LabelWording, study.ParaphraseWording} {
			add(study.Cell{Format: f, Wording: w, Failed: true}, study.Cell{Format: f, Wording: w}, "failure statement")
		}
	}
	return out
}

// ParsePairSpec parses "condA,condB" or "condA,condB,column"; column is
// used when the spec names none.
func ParsePairSpec(s string, column Column) (PairSpec, error) {
	parts := strings.Split(s, ",")
	if len(parts) < 2 || len(parts) > 3 {
		return PairSpec{}, fmt.Errorf("pair %q: want condA,condB or condA,condB,column", s)
	}
	p := PairSpec{A: study.Condition(strings.TrimSpace(parts[0])), B: study.Condition(strings.TrimSpace(parts[1])), Column: column}
	for _, c := range []study.Condition{p.A, p.B} {
		if !c.Valid() {
			return PairSpec{}, fmt.Errorf("pair %q: unknown condition %q (want one of %v)", s, c, study.AllConditions)
		}
	}
	if p.A == p.B {
		return PairSpec{}, fmt.Errorf("pair %q: the two conditions are the same", s)
	}
	if len(parts) == 3 {
		c, err := ParseColumn(parts[2])
		if err != nil {
			return PairSpec{}, fmt.Errorf("pair %q: %w", s, err)
		}
		p.Column = c
	}
	if p.Column == "" {
		p.Column = Strict
	}
	if p.Column.bit() == 0 {
		return PairSpec{}, fmt.Errorf("pair %q: unknown column %q (want one of %v)", s, p.Column, Columns)
	}
	return p, nil
}

// Pair is a paired comparison of two conditions within one arm.
type Pair struct {
	Model       string          `json:"model"`
	Prompt      string          `json:"prompt"`
	A           study.Condition `json:"a"`
	B           study.Condition `json:"b"`
	Column      Column          `json:"column"`
	Predeclared bool            `json:"predeclared"`
	// Isolates is PairSpec.Isolates: what a predeclared comparison of the
	// factorial or the delivery channels isolates; absent for the others.
	Isolates string `json:"isolates,omitempty"`
	PairStats
}

// PairStats are the paired statistics of A − B over decisions matched one
// to one (both counted, status ok; for a lab column, both with lab
// outcomes).
type PairStats struct {
	N            int    `json:"n"`             // matched pairs
	CountA       int    `json:"count_a"`       // pairs with the outcome under A
	CountB       int    `json:"count_b"`       // pairs with the outcome under B
	Diff         Num    `json:"diff"`          // (CountA − CountB) / N ∈ [−1, 1]; null when N = 0
	DiscordantAB int    `json:"discordant_ab"` // pairs with the outcome under A only
	DiscordantBA int    `json:"discordant_ba"` // pairs with the outcome under B only
	McNemarP     Num    `json:"mcnemar_p"`     // exact two-sided McNemar p; null when N = 0
	Bootstrap    Bounds `json:"bootstrap"`     // percentile cluster-bootstrap interval of Diff
	// Unpaired counts decisions of either side left without a counted
	// partner (a missing decision, or a transport error on either side;
	// for a lab column, a partner without lab outcomes).
	Unpaired int             `json:"unpaired"`
	Warnings []stats.Warning `json:"warnings,omitempty"`
}

// pairAgg accumulates matched pairs per server.
type pairAgg struct {
	n, ab, ba, a, b int
}

// pair records the decisions fa and fb of one unit on column bit when
// both have the bits need (Column.need), and returns how many of them
// lacked a partner (0, or 1 when exactly one has them).
func (p *pairAgg) pair(fa, fb, bit, need uint16) int {
	okA, okB := fa&need == need, fb&need == need
	if okA && okB {
		p.add(fa&bit != 0, fb&bit != 0)
		return 0
	}
	if okA || okB {
		return 1
	}
	return 0
}

// add records one matched pair's outcomes.
func (p *pairAgg) add(x, y bool) {
	p.n++
	if x {
		p.a++
	}
	if y {
		p.b++
	}
	switch {
	case x && !y:
		p.ab++
	case y && !x:
		p.ba++
	}
}

// pairStats turns per-server aggregates (indexed by server, visited in
// order) into paired statistics. Per cluster N = pairs, Sum = Σ(aᵢ − bᵢ).
func pairStats(per []pairAgg, order []int32, unpaired int, opt Options) PairStats {
	var t pairAgg
	var clusters []stats.Cluster
	for _, si := range order {
		if int(si) >= len(per) || per[si].n == 0 {
			continue
		}
		p := per[si]
		t.n, t.a, t.b, t.ab, t.ba = t.n+p.n, t.a+p.a, t.b+p.b, t.ab+p.ab, t.ba+p.ba
		clusters = append(clusters, stats.Cluster{N: p.n, Sum: float64(p.ab - p.ba)})
	}
	ps := PairStats{N: t.n, CountA: t.a, CountB: t.b, DiscordantAB: t.ab, DiscordantBA: t.ba, Unpaired: unpaired,
		Diff: Num(math.NaN()), McNemarP: Num(math.NaN()), Bootstrap: Bounds{math.NaN(), math.NaN()}}
	if t.n == 0 {
		ps.Warnings = []stats.Warning{{Kind: stats.NoPairs, Message: "no matched pairs"}}
		return ps
	}
	ps.Diff = Num(float64(t.ab-t.ba) / float64(t.n))
	ps.McNemarP = Num(stats.McNemarExact(t.ab, t.ba))
	iv := stats.ClusterBootstrap(clusters, opt.boot())
	ps.Bootstrap = Bounds{iv.Lo, iv.Hi}
	ps.Warnings = iv.Warnings
	return ps
}

// pairs computes the predeclared and requested comparisons in every arm
// that has both conditions (no pooling across arms).
func (a *Accumulator) pairs(opt Options) ([]Pair, error) {
	var specs []PairSpec
	var pre []bool
	if !opt.NoPredeclared {
		for _, s := range Predeclared {
			specs, pre = append(specs, s), append(pre, true)
		}
	}
	for _, s := range opt.Pairs {
		if s.Column.bit() == 0 {
			return nil, fmt.Errorf("%w %s: unknown column %q (want one of %v)", ErrPair, s, s.Column, Columns)
		}
		specs, pre = append(specs, s), append(pre, false)
	}
	order := a.serverOrder()
	out := []Pair{}
	for i, s := range specs {
		found := false
		for g, arm := range a.groupArm {
			if !a.hasCond(int32(g), s.A) || !a.hasCond(int32(g), s.B) {
				continue
			}
			found = true
			ps := a.pairWithin(int32(g), s, order, opt)
			out = append(out, Pair{Model: arm.Model, Prompt: arm.Prompt, A: s.A, B: s.B, Column: s.Column, Predeclared: pre[i], Isolates: s.Isolates, PairStats: ps})
		}
		if !found && !pre[i] {
			return nil, fmt.Errorf("%w %s: no model/prompt arm of the bundle has decisions under both %s and %s", ErrPair, s, s.A, s.B)
		}
	}
	return out, nil
}

// pairWithin pairs the decisions of arm g under s.A and s.B by (scenario,
// replicate).
func (a *Accumulator) pairWithin(g int32, s PairSpec, order []int32, opt Options) PairStats {
	nc := len(study.AllConditions)
	ia, ib := condIndex(s.A), condIndex(s.B)
	bit, need := s.Column.bit(), s.Column.need()
	per := make([]pairAgg, len(a.servers.names))
	unpaired := 0
	for u, k := range a.unitKeys {
		if k.group != g {
			continue
		}
		unpaired += per[a.unitServer[u]].pair(a.unitFlags[u*nc+ia], a.unitFlags[u*nc+ib], bit, need)
	}
	return pairStats(per, order, unpaired, opt)
}
