package analysis

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mcpstress/stress/study"
)

// coverage is how many of a bundle's scenarios one of its conditions
// expresses (conditions.Expresses: its rendering carries what defines
// the condition, such as a shape's classification), for a condition that
// does not express every one: what a like-for-like contrast
// (PairSpec.LikeForLike) leaves out, shown apart from the decisions on
// the scenarios both of its conditions express.
type coverage struct {
	Condition study.Condition `json:"condition"`
	// Expressed counts the bundle's scenarios the condition expresses,
	// from 0 to Scenarios.
	Expressed int `json:"expressed"`
	// Scenarios counts the bundle's scenarios (those with a decision).
	Scenarios int `json:"scenarios"`
	// Unexpressed are the ids of the others, sorted.
	Unexpressed []string `json:"unexpressed"`
}

// coverage lists, in the order the cells first show them, the bundle's
// conditions that do not express every one of its scenarios, as its
// defaults table records them (NoteCoverage); none when it records none.
func (a *Accumulator) coverage() []coverage {
	masks := a.unexpressedMasks()
	if masks == nil {
		return nil
	}
	var out []coverage
	var seen []study.Condition
	for _, c := range a.Cells() {
		ci := condIndex(c.Condition)
		if ci < 0 || slices.Contains(seen, c.Condition) {
			continue
		}
		seen = append(seen, c.Condition)
		var not []string
		for i, m := range masks {
			if m&(1<<ci) != 0 {
				not = append(not, a.scenarios.names[i])
			}
		}
		if len(not) == 0 {
			continue
		}
		slices.Sort(not)
		out = append(out, coverage{Condition: c.Condition, Expressed: len(masks) - len(not), Scenarios: len(masks), Unexpressed: not})
	}
	return out
}

// CoverageText is the paragraph above the coverage table.
const CoverageText = "Coverage: of the bundle's scenarios, how many each condition expresses (its rendering carries what " +
	"defines it: the category contract, a shape's move, classification or -32023 error; docs/error-shapes.md), and which " +
	"it does not; a condition not listed expresses every one. A like-for-like contrast pairs only the scenarios both of its " +
	"conditions express and names those it leaves out."

// maxNamed bounds the scenario ids a line of text names; -json lists
// every one.
const maxNamed = 50

// named joins ids, at most maxNamed of them, saying how many more there
// are.
func named(ids []string) string {
	if len(ids) <= maxNamed {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s, and %d more (-json lists them)", strings.Join(ids[:maxNamed], ", "), len(ids)-maxNamed)
}

// WriteCoverage prints CoverageText and a line per condition of
// an.Coverage (nothing when it is empty), followed by a blank line.
func WriteCoverage(w io.Writer, an *Analysis) error {
	if len(an.Coverage) == 0 {
		return nil
	}
	fmt.Fprintln(w, wrap(CoverageText, 100))
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "condition\texpresses\tnot expressed")
	for _, c := range an.Coverage {
		fmt.Fprintf(tw, "%s\t%d of %d\t%s\n", c.Condition, c.Expressed, c.Scenarios, named(c.Unexpressed))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// leftOut is, for a like-for-like contrast, the scenarios its rows left
// out, over every arm and column: A and B name the contrast.
type leftOut struct {
	A, B      string
	Scenarios []string
}

// LeftOutOf gathers the scenarios the like-for-like pairs left out, a
// leftOut per (A, B) in the order of pairs (none when nothing was left
// out).
func LeftOutOf(pairs []Pair) []leftOut {
	var out []leftOut
	for _, p := range pairs {
		if p.Excluded == nil {
			continue
		}
		i := slices.IndexFunc(out, func(l leftOut) bool { return l.A == p.A && l.B == p.B })
		if i < 0 {
			out = append(out, leftOut{A: p.A, B: p.B})
			i = len(out) - 1
		}
		for _, s := range p.Excluded.Scenarios {
			if !slices.Contains(out[i].Scenarios, s) {
				out[i].Scenarios = append(out[i].Scenarios, s)
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].Scenarios)
	}
	return out
}

// leftOutNote is the sentence under a table of pairs that names the
// scenarios each like-for-like contrast left out; "" when none did.
func leftOutNote(pairs []Pair) string {
	lo := LeftOutOf(pairs)
	if len(lo) == 0 {
		return ""
	}
	var parts []string
	for _, l := range lo {
		parts = append(parts, fmt.Sprintf("%s − %s: %s (%d)", l.A, l.B, named(l.Scenarios), len(l.Scenarios)))
	}
	return "Like-for-like contrasts pair only the scenarios both conditions express (see Coverage); left out " +
		"(their decisions neither paired nor unpaired): " + strings.Join(parts, "; ") + "."
}
