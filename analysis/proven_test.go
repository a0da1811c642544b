package analysis_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestProvenContrasts: in a bundle with a proven preferred set wider than
// the preferred policy, each predeclared contrast on Strict is followed
// by the same contrast on Proven, computed on Proven's outcomes and in
// the family; without one (the paper corpus), there is none.
func TestProvenContrasts(t *testing.T) {
	rows := pairedRows("m", 30, 12, 4)
	// Under code_only, 10 decisions that are not strict chose another
	// proven policy: 4 of them strict under normalized (B only on Strict,
	// both on Proven), 6 neither (A only on Proven).
	extra := 0
	for i := range rows {
		if rows[i].Condition == string(study.CodeOnly) && !rows[i].Outcome.Of(simulator.Strict) && extra < 10 {
			rows[i].Outcome.Set(simulator.Proven, 1)
			extra++
		}
	}
	for _, wide := range []bool{false, true} {
		t.Run(fmt.Sprint(wide), func(t *testing.T) {
			acc := accumulate(rows)
			if wide {
				acc.NoteProvenSet([]study.Policy{study.SelectTool})
				acc.NoteProvenSet([]study.Policy{study.RetryLater, study.RetryNow})
			}
			an, err := acc.Analyze(context.Background(), analysis.Options{B: 200})
			if err != nil {
				t.Fatal(err)
			}
			var specs []string
			for _, p := range an.Pairs {
				specs = append(specs, p.Spec)
			}
			want := []string{"code_only,normalized,strict"}
			if wide {
				want = append(want, "code_only,normalized,proven")
			}
			if !slices.Equal(specs, want) {
				t.Fatalf("wide %v: pairs %v, want %v", wide, specs, want)
			}
			s := an.Pairs[0]
			if s.CountA != 42 || s.CountB != 34 || s.DiscordantAB != 12 || s.DiscordantBA != 4 || !s.InFamily {
				t.Errorf("strict pair: %+v %+v", s.PairStats, s.Adjusted)
			}
			if !wide {
				return
			}
			p := an.Pairs[1]
			if p.Column != simulator.Proven || !p.Predeclared || !p.InFamily || p.CountA != 52 || p.CountB != 34 || p.DiscordantAB != 18 || p.DiscordantBA != 0 {
				t.Errorf("proven pair: %+v %+v %+v", p.Column, p.PairStats, p.Adjusted)
			}
			if an.Family.Size != 2 {
				t.Errorf("family of %d pairs, want both", an.Family.Size)
			}
		})
	}
}

// TestOnProven: OnProven adds a Proven twin after each comparison on
// Strict, and only when wide.
func TestOnProven(t *testing.T) {
	specs := []analysis.PairSpec{
		{Factor: analysis.FactorCondition, A: "code_only", B: "normalized", Column: simulator.Strict, Isolates: "x"},
		{Factor: analysis.FactorCondition, A: "structured", B: "prose", Column: simulator.Cover},
	}
	if got := analysis.OnProven(specs, false); !slices.Equal(got, specs) {
		t.Errorf("not wide: %v", got)
	}
	twin := specs[0]
	twin.Column = simulator.Proven
	if got, want := analysis.OnProven(specs, true), []analysis.PairSpec{specs[0], twin, specs[1]}; !slices.Equal(got, want) {
		t.Errorf("wide: %v, want %v", got, want)
	}
	if n := len(analysis.OnProven(analysis.Predeclared, true)); n != 2*len(analysis.Predeclared) {
		t.Errorf("%d predeclared comparisons with their twins, want %d (every one is on Strict)", n, 2*len(analysis.Predeclared))
	}
}
