package analysis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestLikeForLike: a like-for-like contrast (toolfailure − structured, a
// shape contrast; toolfailure − normalized, requested) pairs only the
// scenarios both conditions express, as the defaults table records them,
// and names and counts those it leaves out; a contrast that is not
// like-for-like (code_only − normalized) pairs every scenario, even one a
// condition does not express; Coverage lists the conditions that do not
// express every scenario, k of n. Rows in a finished bundle's order
// (merged) and interleaved (the pairing table) give the same pairs, and a
// bundle whose table records no coverage pairs every scenario, as before.
func TestLikeForLike(t *testing.T) {
	units := paperUnits()
	unexpressed := map[string]bool{} // S01…S08: not expressed by toolfailure
	for i := 1; i <= 8; i++ {
		unexpressed[fmt.Sprintf("S%02d", i)] = true
	}
	conds := []study.Condition{study.ToolFailureShape, study.Structured, study.CodeOnly, study.Normalized}
	// toolfailure succeeds wherever it does not express the scenario
	// (the record shown under its name: a baseline that reads it), and on
	// half of the others' units; structured everywhere.
	strict := func(c study.Condition, i int, u unit) bool {
		if c == study.ToolFailureShape {
			return unexpressed[u.scenario] || i%2 == 0
		}
		return c != study.Normalized
	}
	var merged, interleaved []results.Row
	for _, c := range conds {
		for i, u := range units {
			merged = append(merged, row("m", c, u, strict(c, i, u), true))
		}
	}
	for i, u := range units {
		for _, c := range conds {
			interleaved = append(interleaved, row("m", c, u, strict(c, i, u), true))
		}
	}
	d := &results.Defaults{Seed: 1, Conditions: conds, Scenarios: map[string]results.ScenarioFields{}}
	for _, u := range units {
		f := results.ScenarioFields{Server: u.server, Preferred: study.RetryNow}
		if unexpressed[u.scenario] {
			f.Unexpressed = []study.Condition{study.ToolFailureShape}
		}
		if u.scenario == "S21" {
			f.Unexpressed = []study.Condition{study.CodeOnly} // no contrast of code_only is like-for-like
		}
		d.Scenarios[u.scenario] = f
	}
	requested, err := analysis.ParsePairSpec("toolfailure,normalized", simulator.Strict)
	if err != nil || !requested.LikeForLike {
		t.Fatalf("a requested shape pair: %+v, %v", requested, err)
	}
	if p, _ := analysis.ParsePairSpec("structured,prose", simulator.Strict); p.LikeForLike {
		t.Errorf("structured,prose is like-for-like")
	}
	analyze := func(rows []results.Row, table *results.Defaults) *analysis.Analysis {
		acc := accumulate(rows)
		acc.NoteCoverage(table)
		an, err := acc.Analyze(context.Background(), analysis.Options{B: 200, Seed: 1, Pairs: []analysis.PairSpec{requested}})
		if err != nil {
			t.Fatal(err)
		}
		return an
	}
	leftOut := []string{"S01", "S02", "S03", "S04", "S05", "S06", "S07", "S08"}
	for name, rows := range map[string][]results.Row{"merged": merged, "interleaved": interleaved} {
		t.Run(name, func(t *testing.T) {
			an := analyze(rows, d)
			got := map[string]string{}
			for _, p := range an.Pairs {
				got[p.A+"-"+p.B] = pairSummary(p)
			}
			want := map[string]string{
				// 13 scenarios x 5: toolfailure on even units only.
				"toolfailure-structured": fmt.Sprintf("like 65: 33/65, left out %v 40", leftOut),
				"toolfailure-normalized": fmt.Sprintf("like 65: 33/0, left out %v 40", leftOut),
				"code_only-normalized":   "105: 105/0",
			}
			if !maps(got, want) {
				t.Errorf("%s: pairs %v, want %v", name, got, want)
			}
			wantCov := []analysis.Coverage{
				{Condition: study.ToolFailureShape, Expressed: 13, Scenarios: 21, Unexpressed: leftOut},
				{Condition: study.CodeOnly, Expressed: 20, Scenarios: 21, Unexpressed: []string{"S21"}},
			}
			if !slices.EqualFunc(an.Coverage, wantCov, func(a, b analysis.Coverage) bool {
				return a.Condition == b.Condition && a.Expressed == b.Expressed && a.Scenarios == b.Scenarios && slices.Equal(a.Unexpressed, b.Unexpressed)
			}) {
				t.Errorf("%s: coverage %+v, want %+v", name, an.Coverage, wantCov)
			}
			js, err := json.Marshal(an)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{`"like_for_like":true,"excluded":{"scenarios":["S01",`, `"pairs":40}`, `"coverage":[{"condition":"toolfailure","expressed":13,"scenarios":21,"unexpressed":["S01",`} {
				if !strings.Contains(string(js), s) {
					t.Errorf("%s: the JSON has no %s", name, s)
				}
			}

			// A bundle written before the table recorded coverage, or with
			// none: every scenario is paired, nothing is listed.
			for _, table := range []*results.Defaults{d.WithoutCoverage(), nil} {
				old := analyze(rows, table)
				for _, p := range old.Pairs {
					if p.N != 105 || p.Excluded != nil {
						t.Errorf("%s, no coverage: %s − %s: %s", name, p.A, p.B, pairSummary(p))
					}
				}
				if old.Coverage != nil {
					t.Errorf("%s, no coverage: %+v", name, old.Coverage)
				}
			}
		})
	}

	// The text: the coverage table, the pair's note, the names under the
	// table of pairs (a wrapped paragraph, read with its spaces joined).
	an := analyze(merged, d)
	var b strings.Builder
	if err := analysis.WriteCoverage(&b, an); err != nil {
		t.Fatal(err)
	}
	if err := analysis.WritePairs(&b, an.Pairs, an.Family, map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"toolfailure  13 of 21   S01, S02, S03, S04, S05, S06, S07, S08\n",
		"code_only    20 of 21   S21\n",
		"40 pairs on 8 scenarios left out\n",
		"toolfailure − structured: S01, S02, S03, S04, S05, S06, S07, S08 (8); toolfailure − normalized: S01,",
	} {
		t.Run(s, func(t *testing.T) {
			if !strings.Contains(b.String(), s) && !strings.Contains(strings.Join(strings.Fields(b.String()), " "), s) {
				t.Errorf("the text has no %q:\n%s", s, b.String())
			}
		})
	}
}

// pairSummary is "[like ]N: A/B[, left out SCENARIOS PAIRS]".
func pairSummary(p analysis.Pair) string {
	s := fmt.Sprintf("%d: %d/%d", p.N, p.CountA, p.CountB)
	if p.LikeForLike {
		s = "like " + s
	}
	if p.Excluded != nil {
		s += fmt.Sprintf(", left out %v %d", p.Excluded.Scenarios, p.Excluded.Pairs)
	}
	return s
}

// maps reports whether a and b hold the same entries.
func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
