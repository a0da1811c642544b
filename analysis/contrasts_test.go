package analysis_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestFactorialContrasts checks the predeclared comparisons of issue 18:
// the paper's two first and unchanged, then twelve factorial contrasts,
// each pairing two cells that differ in exactly one factor (A at the
// first level: JSON, label, with the statement), four per factor, every
// cell in three of them, each edge once; then the two channel contrasts;
// then the nine error-shape contrasts, each pairing a shape condition with
// a reference, or (the last three) with the arm it adds a part to.
func TestFactorialContrasts(t *testing.T) {
	pre := analysis.Predeclared
	for i, p := range pre[16:] {
		// The first six set a shape against a reference condition, the
		// last three an arm against the arm it adds a part to.
		if !study.Condition(p.A).Shape() || p.Isolates == "" || p.Column != simulator.Strict || !study.Condition(p.B).Valid() || study.Condition(p.B).Shape() != (i >= 6) || !p.LikeForLike {
			t.Errorf("%v: not a like-for-like shape contrast against a reference condition (or, last, an arm)", p)
		}
	}
	if len(pre) != 25 || pre[0] != (analysis.PairSpec{Factor: analysis.FactorCondition, A: string(study.CodeOnly), B: string(study.Normalized), Column: simulator.Strict}) ||
		pre[1] != (analysis.PairSpec{Factor: analysis.FactorCondition, A: string(study.Structured), B: string(study.Prose), Column: simulator.Strict}) {
		t.Fatalf("predeclared %v: want the paper's two, 12 factorial, 2 channel and 9 shape contrasts", pre)
	}
	factors := map[string]int{}
	uses := map[study.Condition]int{}
	edges := map[[2]study.Condition]bool{}
	for _, p := range pre[2:14] {
		pa, pb := study.Condition(p.A), study.Condition(p.B)
		a, okA := conditions.CellOf(pa)
		b, okB := conditions.CellOf(pb)
		if !okA || !okB || p.Factor != analysis.FactorCondition || p.Column != simulator.Strict || edges[[2]study.Condition{pa, pb}] {
			t.Fatalf("%v: not a new pair of factorial cells on Strict", p)
		}
		edges[[2]study.Condition{pa, pb}] = true
		uses[pa]++
		uses[pb]++
		var factor string
		n := 0
		if a.Format != b.Format {
			n, factor = n+1, "format"
			if a.Format != conditions.JSONFormat {
				t.Errorf("%v: A is not the JSON cell", p)
			}
		}
		if a.Wording != b.Wording {
			n, factor = n+1, "wording"
			if a.Wording != conditions.LabelWording {
				t.Errorf("%v: A is not the label cell", p)
			}
		}
		if a.Failed != b.Failed {
			n, factor = n+1, "failure statement"
			if !a.Failed {
				t.Errorf("%v: A is not the cell with the statement", p)
			}
		}
		if n != 1 || len(p.Isolates) <= len(factor) || p.Isolates[:len(factor)+4] != factor+" at " {
			t.Errorf("%v isolates %q: differs in %d factors (%s)", p, p.Isolates, n, factor)
		}
		factors[factor]++
	}
	if factors["format"] != 4 || factors["wording"] != 4 || factors["failure statement"] != 4 || len(uses) != 8 {
		t.Errorf("factors %v, cells %v", factors, uses)
	}
	for c, n := range uses {
		if n != 3 {
			t.Errorf("%s is in %d contrasts, want 3", c, n)
		}
	}
	if pre[2].Isolates != "format at label, no statement" || pre[13].Isolates != "failure statement at sentence, paraphrase" {
		t.Errorf("isolates %q, %q", pre[2].Isolates, pre[13].Isolates)
	}
	for i, want := range []study.Condition{study.CategoryStructured, study.CategoryText} {
		t.Run(fmt.Sprint(want), func(t *testing.T) {
			if p := pre[14+i]; p.A != string(want) || p.B != string(study.Category) || p.Column != simulator.Strict || p.Isolates == "" {
				t.Errorf("channel contrast %d: %+v", i, p)
			}
		})
	}
}

// TestFactorialPairEndToEnd computes a factorial contrast from decision
// rows: structured − sentence_label with 30 concordant successes, 12 A+B−
// and 4 A−B+ gives the same exact McNemar p as the paper's pairs
// (R: binom.test(4, 16, 0.5)$p.value = 0.076812744140625042, tolerance
// 1e-12 relative), labelled with what it isolates; no other factorial
// contrast appears, since the bundle has no other cell.
func TestFactorialPairEndToEnd(t *testing.T) {
	var rows []results.Row
	for i, u := range paperUnits() {
		a := i < 42
		b := i < 30 || (i >= 42 && i < 46)
		rows = append(rows, row("m", study.Structured, u, a, true), row("m", study.SentenceLabel, u, b, true))
	}
	an, err := accumulate(rows).Analyze(context.Background(), analysis.Options{B: 500, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(an.Pairs) != 1 {
		t.Fatalf("pairs %+v, want structured − sentence_label alone", an.Pairs)
	}
	p := an.Pairs[0]
	if p.A != string(study.Structured) || p.B != string(study.SentenceLabel) || !p.Predeclared || p.Isolates != "format at label, no statement" {
		t.Errorf("pair %+v", p)
	}
	if p.N != 105 || p.CountA != 42 || p.CountB != 34 || p.DiscordantAB != 12 || p.DiscordantBA != 4 || !closeRel(float64(p.McNemarP), 0.076812744140625042, 1e-12) {
		t.Errorf("pair stats %+v", p.PairStats)
	}
	if lo, hi := p.Bootstrap.Lo, p.Bootstrap.Hi; !(lo <= 8.0/105 && 8.0/105 <= hi) {
		t.Errorf("bootstrap %v does not contain the difference", p.Bootstrap)
	}
}
