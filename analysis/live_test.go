package analysis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// setCol sets a column of a row by name.
func setCol(r *results.Row, name string, v int64) {
	r.Outcome.Set(simulator.ColumnIndex(name), v)
}

// liveRows builds code_only and normalized decisions with lab outcomes
// over the 105 paper units: under code_only unit i recovered when i < 60
// and harmed when 60 ≤ i < 70; under normalized it recovered when i < 45
// or 60 ≤ i < 65, and harmed when i ≥ 100. Calls are 1 + i%3 (code_only)
// and 2 (normalized); lab time 40 ms per call. Code_only's harm is a
// duplicate for 60 ≤ i < 66 and collateral for 64 ≤ i < 70 (both for 64
// and 65); normalized's is lost data.
func liveRows() []results.Row {
	var rows []results.Row
	for i, u := range paperUnits() {
		a, b := row("m", study.CodeOnly, u, i < 60, true), row("m", study.Normalized, u, false, false)
		setCol(&a, "recovered", b2i(i < 60))
		setCol(&a, "harm", b2i(i >= 60 && i < 70))
		setCol(&a, "harm_duplicate", b2i(i >= 60 && i < 66))
		setCol(&a, "harm_collateral", b2i(i >= 64 && i < 70))
		setCol(&a, "calls", int64(1+i%3))
		setCol(&a, "lab_ms", int64(40*(1+i%3)))
		setCol(&b, "recovered", b2i(i < 45 || i >= 60 && i < 65))
		setCol(&b, "harm", b2i(i >= 100))
		setCol(&b, "harm_data_loss", b2i(i >= 100))
		setCol(&b, "calls", 2)
		setCol(&b, "lab_ms", 80)
		rows = append(rows, a, b)
	}
	return rows
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestLabColumns: cells count the lab columns out of the decisions with
// lab outcomes; the analysis gives recovered and harm Wilson and
// bootstrap intervals, calls and lab_ms means with bootstrap intervals,
// pairs recovered and harm, and prints them in the table, the intervals
// and the JSON; stored cells show none of it.
func TestLabColumns(t *testing.T) {
	rows := liveRows()
	// A stored arm in the same analysis, and an error decision.
	for _, u := range paperUnits()[:5] {
		rows = append(rows, row("s", study.CodeOnly, u, true, true))
	}
	rows = append(rows, results.Row{Model: "m", Prompt: "default", Condition: "code_only", Scenario: "S99", Replicate: 1, Server: "P01", Status: results.StatusError, Error: "x"})
	acc := accumulate(rows)
	if !acc.Lab() {
		t.Fatal("no lab outcomes")
	}
	cells := acc.Cells()
	// code_only: recovered 60, harm 10, calls 35·(1+2+3) = 210, lab_ms 40·210.
	want := results.Cell{Model: "m", Prompt: "default", Condition: study.CodeOnly, N: 105, Errors: 1, LabN: 105, // Every Strict decision recovered; the others did not.
		LabelAction: results.Agreement{StrictRecovered: 60, OtherUnrecovered: 45}, Counts: [simulator.NumColumns]int{simulator.Strict: 60, simulator.Proven: 60, simulator.Cover: 105, simulator.Recovered: 60, simulator.Harm: 10, simulator.HarmDuplicate: 6, simulator.HarmCollateral: 6, simulator.Calls: 210, simulator.LabMS: 8400}}
	if cells[0] != want {
		t.Errorf("code_only cell %+v\nwant %+v", cells[0], want)
	}
	if c := cells[1]; c.LabN != 105 || c.Count(simulator.Recovered) != 50 || c.Count(simulator.Harm) != 5 || c.Count(simulator.HarmDataLoss) != 5 || c.Count(simulator.Calls) != 210 || c.Count(simulator.LabMS) != 8400 {
		t.Errorf("normalized cell %+v", c)
	}
	if c := cells[2]; c.Model != "s" || c.LabN != 0 || c.Count(simulator.Recovered) != 0 {
		t.Errorf("stored cell %+v", c)
	}
	an, err := acc.Analyze(context.Background(), analysis.Options{B: 2000, Seed: 5, Pairs: []analysis.PairSpec{{Factor: analysis.FactorCondition, A: string(study.CodeOnly), B: string(study.Normalized), Column: simulator.Recovered}, {Factor: analysis.FactorCondition, A: string(study.CodeOnly), B: string(study.Normalized), Column: simulator.Harm},
		{Factor: analysis.FactorCondition, A: string(study.CodeOnly), B: string(study.Normalized), Column: simulator.HarmDuplicate},
		{Factor: analysis.FactorCondition, A: string(study.CodeOnly), B: string(study.Normalized), Column: simulator.HarmCollateral},
		{Factor: analysis.FactorCondition, A: string(study.CodeOnly), B: string(study.Normalized), Column: simulator.HarmDataLoss}}})
	if err != nil {
		t.Fatal(err)
	}
	cs := an.Cells[0]
	if r := cs.Rates.At("recovered"); r == nil || float64(*r) != 60.0/105 {
		t.Errorf("recovered rate %v", r)
	}
	lo, hi := stats.Wilson(10, 105, 0.95)
	if w := cs.CI.At("harm"); w == nil || w.Lo != lo || w.Hi != hi {
		t.Errorf("harm Wilson %v, want [%v, %v]", w, lo, hi)
	}
	if m := cs.Rates.At("calls"); m == nil || float64(*m) != 2 || cs.CI.At("calls") != nil {
		t.Errorf("calls: mean %v, Wilson %v; want 2 and none", m, cs.CI.At("calls"))
	}
	if b := cs.Bootstrap.At("lab_ms"); b == nil || !(b.Lo <= 80 && 80 <= b.Hi) || b.Lo < 40 || b.Hi > 120 {
		t.Errorf("lab_ms bootstrap %v, want around the mean 80 within [40, 120]", b)
	}
	if b := an.Cells[1].Bootstrap.At("calls"); b == nil || b.Lo != 2 || b.Hi != 2 {
		t.Errorf("constant calls: bootstrap %v, want [2, 2]", b)
	}
	if s := an.Cells[2]; s.Rates.At("recovered") != nil || s.Bootstrap.At("calls") != nil {
		t.Error("a stored cell has lab rates")
	}
	// Pairs: recovered code_only − normalized: A+B− units 45..59 (15),
	// A−B+ 60..64 (5); harm: A+B− 60..69 (10), A−B+ 100..104 (5); by
	// kind, duplicate 60..65 and collateral 64..69 (6, 0), lost data
	// 100..104 (0, 5).
	got := map[simulator.Col][2]int{}
	for _, p := range an.Pairs {
		if p.Model == "m" && !p.Predeclared {
			got[p.Column] = [2]int{p.DiscordantAB, p.DiscordantBA}
			if p.N != 105 || p.Unpaired != 0 {
				t.Errorf("pair %s: %d pairs, %d unpaired; want 105, 0", p.Column, p.N, p.Unpaired)
			}
			if p.Column == simulator.Recovered && math.Abs(float64(p.McNemarP)-stats.McNemarExact(15, 5)) > 0 {
				t.Errorf("recovered McNemar %v", p.McNemarP)
			}
		}
	}
	if got[simulator.Recovered] != [2]int{15, 5} || got[simulator.Harm] != [2]int{10, 5} ||
		got[simulator.HarmDuplicate] != [2]int{6, 0} || got[simulator.HarmCollateral] != [2]int{6, 0} || got[simulator.HarmDataLoss] != [2]int{0, 5} {
		t.Errorf("discordant pairs %v", got)
	}

	var b bytes.Buffer
	if err := analysis.WriteAnalysisJSON(&b, an, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Cells []map[string]json.RawMessage `json:"cells"`
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	for i, c := range out.Cells {
		lab := i < 2
		for _, k := range []string{"lab_n", "recovered", "harm", "harm_duplicate", "harm_data_loss", "calls", "lab_ms"} {
			t.Run(k, func(t *testing.T) {
				if _, ok := c[k]; ok != lab {
					t.Errorf("cell %d: key %s present %v, want %v", i, k, ok, lab)
				}
			})
		}
		var rates, wilson map[string]any
		json.Unmarshal(c["rates"], &rates)
		json.Unmarshal(c["wilson"], &wilson)
		if _, ok := rates["calls"]; ok != lab {
			t.Errorf("cell %d rates %v", i, rates)
		}
		if _, ok := wilson["calls"]; ok {
			t.Errorf("cell %d: a Wilson interval for a mean", i)
		}
		if _, ok := wilson["harm"]; ok != lab {
			t.Errorf("cell %d wilson %v", i, wilson)
		}
	}
	if !strings.Contains(string(out.Cells[0]["lab_n"]), "105") {
		t.Errorf("lab_n %s", out.Cells[0]["lab_n"])
	}

	b.Reset()
	analysis.WriteTable(&b, cells)
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[0], "TermFS  Recovered  Harm  Dup  WrongV  Collat  Loss  Incompl  InvAct  Calls  LabMS  Extra  Errors") ||
		!strings.Contains(lines[1], "60         10    6    0       6       0     0        0       210    8400") ||
		!strings.Contains(lines[2], "50         5     0    0       0       5     0        0       210    8400") ||
		!strings.Contains(lines[3], "—          —     —    —       —       —     —        —       —      —") {
		t.Errorf("counts table:\n%s", b.String())
	}
	b.Reset()
	analysis.WriteIntervals(&b, an)
	if !strings.Contains(b.String(), "Calls and LabMS are") || !strings.Contains(b.String(), "code_only   Calls         210/105   2.00   —              [1.96, 2.04]") ||
		!strings.Contains(b.String(), "code_only   Recovered     60/105    57.1   [47.6, 66.2]") {
		t.Errorf("intervals:\n%s", b.String())
	}

	// A partner without lab outcomes leaves its pair unpaired on a lab
	// column, not on the others.
	rows = liveRows()
	rows[1].Outcome = simulator.Values{}
	an, err = accumulate(rows).Analyze(context.Background(), analysis.Options{B: 200, Pairs: []analysis.PairSpec{{Factor: analysis.FactorCondition, A: string(study.CodeOnly), B: string(study.Normalized), Column: simulator.Recovered}}})
	if err != nil {
		t.Fatal(err)
	}
	if p := an.Pairs[len(an.Pairs)-1]; p.Column != simulator.Recovered || p.N != 104 || p.Unpaired != 1 || an.Pairs[0].N != 105 {
		t.Errorf("pairs %+v", an.Pairs)
	}

	// Sums are not paired; the lab flags are.
	if _, err := analysis.ParseColumn("calls"); err == nil || !strings.Contains(err.Error(), "is a sum") {
		t.Errorf("ParseColumn(calls): %v", err)
	}
	if c, err := analysis.ParseColumn("Recovered"); err != nil || c != simulator.Recovered {
		t.Errorf("ParseColumn(Recovered) = %v, %v", c, err)
	}
}

// TestCompareLabColumns: two live bundles are compared on the lab flags
// too by default; a stored one is not.
func TestCompareLabColumns(t *testing.T) {
	a, b := accumulate(liveRows()), accumulate(liveRows())
	cmp, err := analysis.Compare(context.Background(), a, b, analysis.CompareOptions{Options: analysis.Options{B: 200}})
	if err != nil {
		t.Fatal(err)
	}
	cols := map[simulator.Col]bool{}
	for _, r := range cmp.Rows {
		cols[r.Column] = true
		if r.Column == simulator.Harm && (r.N != 105 || r.DiscordantAB+r.DiscordantBA != 0) {
			t.Errorf("harm of a bundle against itself: %+v", r.PairStats)
		}
	}
	if !cols[simulator.Recovered] || !cols[simulator.Harm] || len(cols) != pairableColumns() {
		t.Errorf("compared columns %v", cols)
	}
	s := accumulate(pairedRows("m", 30, 12, 4))
	cmp, err = analysis.Compare(context.Background(), s, s, analysis.CompareOptions{Options: analysis.Options{B: 200}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cmp.Rows {
		if r.Column.Column().Kind.Lab() {
			t.Errorf("stored bundles compared on %s", r.Column)
		}
	}
}

// TestLabelAction: the label-versus-action table counts, on the same
// decisions, the right label against the recovered state; cells without
// lab outcomes have no row, and an analysis without any prints nothing.
func TestLabelAction(t *testing.T) {
	tr, f := true, false
	base := results.Row{Model: "m", Prompt: "act", Condition: "normalized", Status: results.StatusOK, Outcome: simulator.Values{}.WithFlag(simulator.InvalidAction, f).WithFlag(simulator.Harm, f)}
	var rows []results.Row
	for _, c := range []struct {
		strict bool
		rec    *bool
		n      int
	}{{true, &tr, 3}, {true, &f, 2}, {false, &tr, 1}, {false, &f, 4}} {
		for range c.n {
			r := base
			r.Outcome = r.Outcome.WithFlag(simulator.Strict, c.strict).WithFlag(simulator.Recovered, *c.rec).With(simulator.Calls, 1).With(simulator.LabMS, 0)
			rows = append(rows, r)
		}
	}
	stored := base
	stored.Condition = "code_only"
	stored.Outcome.Clear(simulator.InvalidAction)
	stored.Outcome.Clear(simulator.Harm)
	rows = append(rows, stored)
	cells := results.Count(rows)
	if got := cells[0].LabelAction; got != (results.Agreement{StrictRecovered: 3, StrictUnrecovered: 2, OtherRecovered: 1, OtherUnrecovered: 4}) {
		t.Errorf("agreement %+v", got)
	}
	var b strings.Builder
	if err := analysis.WriteLabelAction(&b, cells); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	last := strings.Fields(lines[len(lines)-1])
	if strings.Join(last, " ") != "m act normalized 10 50.0 40.0 3 2 1 4" || strings.Contains(b.String(), "code_only") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	analysis.WriteLabelAction(&b, cells[1:])
	if b.Len() != 0 {
		t.Errorf("a stored-replay analysis prints %q", b.String())
	}
}

// pairableColumns counts the 0/1 outcome columns, those a comparison pairs.
func pairableColumns() int {
	n := 0
	for i := range simulator.Columns {
		if simulator.Columns[i].Kind != simulator.LabSum {
			n++
		}
	}
	return n
}
