package analysis_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestCompare pairs two bundles' decisions: B is A with 6 strict answers
// of code_only turned off and 2 turned on.
func TestCompare(t *testing.T) {
	a := pairedRows("m", 30, 12, 4)
	b := pairedRows("m", 30, 12, 4)
	flips := 0
	for i := range b {
		if b[i].Condition != string(study.CodeOnly) {
			continue
		}
		switch {
		case b[i].Outcome.Of(simulator.Strict) && flips < 6:
			b[i].Outcome.Set(simulator.Strict, 0)
			flips++
		case !b[i].Outcome.Of(simulator.Strict) && flips >= 6 && flips < 8:
			b[i].Outcome.Set(simulator.Strict, 1)
			flips++
		}
	}
	cmp, err := analysis.Compare(context.Background(), accumulate(a), accumulate(b), analysis.CompareOptions{Options: analysis.Options{B: 2000}, Columns: []simulator.Col{simulator.Strict}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Arms) != 1 || cmp.Arms[0].A != cmp.Arms[0].B {
		t.Errorf("arms %+v", cmp.Arms)
	}
	if len(cmp.Rows) != 2 {
		t.Fatalf("rows %+v, want normalized and code_only on strict", cmp.Rows)
	}
	for _, r := range cmp.Rows {
		switch r.Condition {
		case study.Normalized:
			if r.N != 105 || r.DiscordantAB != 0 || r.DiscordantBA != 0 || float64(r.McNemarP) != 1 || r.Bootstrap.Lo != 0 || r.Bootstrap.Hi != 0 {
				t.Errorf("identical cell: %+v", r.PairStats)
			}
		case study.CodeOnly:
			// 6 A+B−, 2 A−B+: p = binom.test(2, 8)$p.value = 0.2890625
			// (R 4.2.2; exactly 2·(1 + 8 + 28)/256).
			if r.N != 105 || r.DiscordantAB != 6 || r.DiscordantBA != 2 || !closeRel(float64(r.McNemarP), 0.2890625, 1e-12) {
				t.Errorf("changed cell: %+v", r.PairStats)
			}
			if want := 4.0 / 105; float64(r.Diff) != want {
				t.Errorf("diff %v, want %v", r.Diff, want)
			}
		}
	}
}

func TestCompareRefuses(t *testing.T) {
	base := pairedRows("m", 30, 12, 4)
	for _, tc := range []struct {
		name string
		edit func([]results.Row) []results.Row
		want string
	}{
		{"missing decision", func(r []results.Row) []results.Row { return r[:len(r)-1] },
			"A has decision m/default/normalized/S21/5, B does not"},
		{"extra replicate", func(r []results.Row) []results.Row {
			x := r[0]
			x.Replicate = 6
			return append(r, x)
		}, "B has decision m/default/code_only/S01/6, A does not"},
		{"other server", func(r []results.Row) []results.Row {
			for i := range r {
				if r[i].Scenario == "S04" {
					r[i].Server = "P09"
				}
			}
			return r
		}, "scenario S04 is on server P02 in A but P09 in B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.edit(pairedRows("m", 30, 12, 4))
			_, err := analysis.Compare(context.Background(), accumulate(base), accumulate(b), analysis.CompareOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "do not match") {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCompareArms(t *testing.T) {
	two := append(pairedRows("x", 10, 1, 1), pairedRows("y", 10, 1, 1)...)
	other := append(pairedRows("p", 10, 2, 1), pairedRows("q", 10, 1, 1)...)
	// One arm each: aligned whatever the names.
	cmp, err := analysis.Compare(context.Background(), accumulate(pairedRows("x", 10, 1, 1)), accumulate(pairedRows("z", 10, 3, 0)), analysis.CompareOptions{})
	if err != nil || len(cmp.Arms) != 1 || cmp.Arms[0].A.Model != "x" || cmp.Arms[0].B.Model != "z" || len(cmp.Rows) != 2*7 {
		t.Errorf("single arms: %+v, %v", cmp, err)
	}
	// Same arms: arm by arm.
	cmp, err = analysis.Compare(context.Background(), accumulate(two), accumulate(two), analysis.CompareOptions{})
	if err != nil || len(cmp.Arms) != 2 || cmp.Arms[1].A.Model != "y" || cmp.Arms[1].B.Model != "y" {
		t.Errorf("same arms: %+v, %v", cmp, err)
	}
	// Different arms: refused unless selected.
	if _, err := analysis.Compare(context.Background(), accumulate(two), accumulate(other), analysis.CompareOptions{}); err == nil || !strings.Contains(err.Error(), "-arm-a and -arm-b") {
		t.Errorf("different arms: %v", err)
	}
	cmp, err = analysis.Compare(context.Background(), accumulate(two), accumulate(other), analysis.CompareOptions{ArmA: "y", ArmB: "p/default"})
	if err != nil || len(cmp.Arms) != 1 || cmp.Arms[0].A.Model != "y" || cmp.Arms[0].B.Model != "p" {
		t.Errorf("selected arms: %+v, %v", cmp, err)
	}
	_, err = analysis.Compare(context.Background(), accumulate(two), accumulate(other), analysis.CompareOptions{ArmA: "nope", ArmB: "p"})
	if !errors.Is(err, analysis.ErrArmSelection) || !strings.Contains(err.Error(), `no arm "nope" (arms: x/default, y/default)`) {
		t.Errorf("unknown arm: %v", err)
	}
}

func TestSameCorpus(t *testing.T) {
	a := &analysis.BundleInfo{Dir: "a", Record: &results.Record{CorpusFiles: []study.File{{Path: "c/P01.json", SHA256: "aa"}, {Path: "c/P02.json", SHA256: "bb"}}}}
	b := &analysis.BundleInfo{Dir: "b", Record: &results.Record{CorpusFiles: []study.File{{Path: "/abs/P02.json", SHA256: "bb"}, {Path: "/abs/P01.json", SHA256: "aa"}}}}
	if err := analysis.SameCorpus(a, b); err != nil {
		t.Errorf("same files in another order and place: %v", err)
	}
	b.CorpusFiles[0].SHA256 = "cc"
	err := analysis.SameCorpus(a, b)
	if err == nil || !strings.Contains(err.Error(), "corpus hashes differ") || !strings.Contains(err.Error(), "only in a: c/P02.json") ||
		!strings.Contains(err.Error(), "only in b: /abs/P02.json") {
		t.Errorf("SameCorpus: %v", err)
	}
}

func TestPaperTable(t *testing.T) {
	tb, err := analysis.Paper()
	if err != nil {
		t.Fatal(err)
	}
	if tb.Table != "paper" || !strings.Contains(tb.Citation, "Table II") || len(tb.Rows) != 8 || len(tb.Models) != 2 {
		t.Fatalf("table %+v", tb)
	}
	// Published figures (docs/specification.md section 4): Strict, Cover,
	// Retry, Invalid, AnyFS, Extra per row, then terminal FS.
	want := [][7]int{
		{42, 105, 1, 0, 0, 1, 0}, {39, 105, 1, 0, 0, 1, 0}, {95, 105, 0, 0, 0, 0, 0}, {105, 105, 0, 0, 0, 0, 0},
		{6, 73, 24, 5, 5, 48, 4}, {5, 76, 24, 6, 2, 48, 1}, {39, 84, 26, 8, 2, 55, 1}, {30, 77, 23, 11, 2, 42, 0},
	}
	for i, r := range tb.Rows {
		got := [7]int{r.Count(simulator.Strict), r.Count(simulator.Cover), r.Count(simulator.Retry), r.Count(simulator.Invalid), r.Count(simulator.AnyFS), r.Extra, r.Count(simulator.TerminalFS)}
		if got != want[i] || r.N != 105 || r.Condition != study.Conditions[i%4] {
			t.Errorf("row %d: %+v, want %v", i, r, want[i])
		}
	}
	cells := []results.Cell{
		{Model: "llama", Prompt: "default", Condition: study.Normalized, N: 105, Extra: 1, Counts: [simulator.NumColumns]int{simulator.Strict: 40, simulator.Cover: 105, simulator.Retry: 1}},
		{Model: "always_stop", Prompt: "default", Condition: study.Normalized, N: 105},
	}
	pc := tb.Against(cells, map[string]analysis.RunModel{"llama": {ModelID: "LLAMA3.2:3b-instruct-q4_K_M"}}, analysis.AgainstOptions{})
	if len(pc.Rows) != 8 || pc.Rows[0].Run == nil || pc.Rows[0].Diff.Strict != -2 || pc.Rows[0].Model != "llama" ||
		pc.Rows[1].Run != nil || pc.Rows[1].Model != "llama" || pc.Rows[4].Model != "" {
		t.Errorf("against: %+v", pc.Rows[:5])
	}
	if len(pc.Unmatched) != 1 || pc.Unmatched[0] != "always_stop" {
		t.Errorf("unmatched %v", pc.Unmatched)
	}
	var b strings.Builder
	if err := analysis.WriteAgainst(&b, tb, pc); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"run llama/default", "diff", "-2", "run llama/default: no such cell", "run: no such model", "Run models not in the paper: always_stop"} {
		t.Run(s, func(t *testing.T) {
			if !strings.Contains(b.String(), s) {
				t.Errorf("WriteAgainst lacks %q:\n%s", s, b.String())
			}
		})
	}
}
