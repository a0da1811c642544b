package analysis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// passRows builds one cell (model m, code_only) over the paper's 105
// units in which scenario number s (1..21) succeeds (Strict) in its
// first s mod 6 replicates, and a second cell (normalized) in which every
// decision succeeds.
func passRows() []results.Row {
	var rows []results.Row
	for _, u := range paperUnits() {
		var s int
		for _, c := range u.scenario[1:] {
			s = 10*s + int(c-'0')
		}
		rows = append(rows, row("m", study.CodeOnly, u, u.rep <= int64(s%6), true))
	}
	for _, u := range paperUnits() {
		rows = append(rows, row("m", study.Normalized, u, true, true))
	}
	return rows
}

// exactPassK is the mean over the scenarios of trials with N ≥ k of
// C(C, k)/C(N, k), in exact rationals (math/big), as a float64.
func exactPassK(trials []stats.Trials, k int) float64 {
	sum, used := new(big.Rat), 0
	for _, t := range trials {
		if t.N < k {
			continue
		}
		used++
		if t.C >= k {
			sum.Add(sum, new(big.Rat).SetFrac(new(big.Int).Binomial(int64(t.C), int64(k)), new(big.Int).Binomial(int64(t.N), int64(k))))
		}
	}
	if used == 0 {
		return math.NaN()
	}
	f, _ := sum.Quo(sum, big.NewRat(int64(used), 1)).Float64()
	return f
}

// trialsOf counts, per scenario of rows (one cell), the counted
// decisions and those with column col.
func trialsOf(rows []results.Row, col simulator.Col) []stats.Trials {
	idx := map[string]int{}
	var out []stats.Trials
	for _, r := range rows {
		i, ok := idx[r.Scenario]
		if !ok {
			i = len(out)
			idx[r.Scenario] = i
			out = append(out, stats.Trials{})
		}
		if r.Status != results.StatusOK {
			continue
		}
		if v, ok := r.Outcome.Get(col); ok {
			out[i].N++
			out[i].C += int(v)
		}
	}
	return out
}

// TestPassKCell: a cell's pass^k is the mean over its scenarios of the
// unbiased estimator, for k = 1..5 (relative 1e-14 of the exact rational
// mean); pass^1 is the Strict rate and its bootstrap interval the
// rate's (1e-12: the same resamples, summed in another order); each
// interval brackets its estimate; the all-success cell is 1 at every k,
// a degenerate interval; and Accumulator.PassK has the same estimates.
func TestPassKCell(t *testing.T) {
	rows := passRows()
	acc := accumulate(rows)
	an, err := acc.Analyze(context.Background(), analysis.Options{B: 2000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	c := an.Cells[0]
	sr := c.PassK.Of(simulator.Strict)
	if sr == nil || len(sr.Values) != 5 || len(c.PassK) != 1 {
		t.Fatalf("code_only pass^k %+v, want Strict alone, k = 1..5", c.PassK)
	}
	trials := trialsOf(rows[:105], simulator.Strict)
	for _, v := range sr.Values {
		want := exactPassK(trials, v.K)
		if !closeRel(float64(v.Estimate), want, 1e-14) || v.Scenarios != 21 || v.Dropped != 0 {
			t.Errorf("pass^%d = %v over %d scenarios (%d dropped), want %v over 21", v.K, v.Estimate, v.Scenarios, v.Dropped, want)
		}
		if b := v.Bootstrap; !(b.Lo <= float64(v.Estimate) && float64(v.Estimate) <= b.Hi) {
			t.Errorf("pass^%d = %v outside its interval %v", v.K, v.Estimate, b)
		}
	}
	if est, rate := float64(sr.Values[0].Estimate), float64(*c.Rates.At("strict")); !closeRel(est, rate, 1e-12) {
		t.Errorf("pass^1 %v, Strict rate %v", est, rate)
	}
	if b, r := sr.Values[0].Bootstrap, *c.Bootstrap.At("strict"); !closeRel(b.Lo, r.Lo, 1e-12) || !closeRel(b.Hi, r.Hi, 1e-12) {
		t.Errorf("pass^1 interval %v, Strict's %v", b, r)
	}
	// Monotone in k: all of k+1 succeeding implies all of k.
	for k := 1; k < 5; k++ {
		if sr.Values[k].Estimate > sr.Values[k-1].Estimate {
			t.Errorf("pass^%d %v > pass^%d %v", k+1, sr.Values[k].Estimate, k, sr.Values[k-1].Estimate)
		}
	}
	for _, v := range an.Cells[1].PassK.Of(simulator.Strict).Values {
		if v.Estimate != 1 || v.Bootstrap != (analysis.Bounds{Lo: 1, Hi: 1}) || !slices.ContainsFunc(v.Warnings, func(w stats.Warning) bool { return w.Kind == stats.Degenerate }) {
			t.Errorf("all-success cell: %+v", v)
		}
	}
	for i := range an.Cells {
		plain := acc.PassK(i)
		for j, sr := range an.Cells[i].PassK {
			for k, v := range sr.Values {
				p := plain[j].Values[k]
				if p.Estimate != v.Estimate || p.Scenarios != v.Scenarios || p.Bootstrap.Defined() {
					t.Errorf("cell %d %s pass^%d: PassK %+v, Analyze %+v", i, sr.Column, v.K, p, v)
				}
			}
		}
	}
}

// TestPassKUnequal: a scenario with fewer replicates (one missing, one an
// error decision) is left out of the ks beyond them, with a dropped
// warning naming how many, and stays in the others; the order of the
// rows does not matter.
func TestPassKUnequal(t *testing.T) {
	rows := passRows()[:105]
	// S01 loses replicate 5, S02's replicate 5 is an error.
	rows = slices.DeleteFunc(rows, func(r results.Row) bool { return r.Scenario == "S01" && r.Replicate == 5 })
	for i := range rows {
		if rows[i].Scenario == "S02" && rows[i].Replicate == 5 {
			rows[i] = results.Row{Model: "m", Prompt: "default", Condition: "code_only", Scenario: "S02", Replicate: 5, Server: rows[i].Server, Status: results.StatusError, Error: "x"}
		}
	}
	shuffled := slices.Clone(rows)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	var got []analysis.PassKSet
	for _, rs := range [][]results.Row{rows, shuffled} {
		an, err := accumulate(rs).Analyze(context.Background(), analysis.Options{B: 500})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, an.Cells[0].PassK)
	}
	sr := got[0].Of(simulator.Strict)
	trials := trialsOf(rows, simulator.Strict)
	for _, v := range sr.Values {
		wantDropped := 0
		if v.K == 5 {
			wantDropped = 2
		}
		if v.Dropped != wantDropped || v.Scenarios != 21-wantDropped || !closeRel(float64(v.Estimate), exactPassK(trials, v.K), 1e-14) {
			t.Errorf("pass^%d: %+v, want %d dropped, estimate %v", v.K, v, wantDropped, exactPassK(trials, v.K))
		}
		hasWarning := slices.ContainsFunc(v.Warnings, func(w stats.Warning) bool {
			return w.Kind == stats.Dropped && strings.Contains(w.Message, "2 of the cell's 21 scenarios have fewer than 5 replicates")
		})
		if hasWarning != (wantDropped > 0) {
			t.Errorf("pass^%d warnings %v", v.K, v.Warnings)
		}
	}
	if !passKEqual(got[0], got[1]) {
		t.Errorf("shuffled rows give another pass^k:\n%+v\n%+v", got[0], got[1])
	}
}

// passKEqual compares two sets, NaN equal to NaN.
func passKEqual(a, b analysis.PassKSet) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// TestPassKProven: Proven has its pass^k only in a bundle where some
// scenario declares more than one proven preferred policy (elsewhere it
// is Strict on every decision); there it counts its own successes.
func TestPassKProven(t *testing.T) {
	rows := passRows()[:105]
	for i := range rows { // Proven: Strict, or the replicate is even
		rows[i].Outcome = rows[i].Outcome.WithFlag(simulator.Proven, rows[i].Outcome.Of(simulator.Strict) || rows[i].Replicate%2 == 0)
	}
	acc := accumulate(rows)
	if got := acc.PassK(0); len(got) != 1 || got.Of(simulator.Proven) != nil {
		t.Errorf("without a wider proven set: %+v", got)
	}
	acc.NoteProvenSet([]study.Policy{study.RetryNow, study.RetryLater})
	got := acc.PassK(0)
	sr := got.Of(simulator.Proven)
	if len(got) != 2 || got[1].Column != simulator.Proven || sr == nil || len(sr.Values) != 5 {
		t.Fatalf("with a wider proven set: %+v", got)
	}
	trials := trialsOf(rows, simulator.Proven)
	for _, v := range sr.Values {
		if !closeRel(float64(v.Estimate), exactPassK(trials, v.K), 1e-14) {
			t.Errorf("proven pass^%d = %v, want %v", v.K, v.Estimate, exactPassK(trials, v.K))
		}
	}
}

// TestPassKLab: Recovered has pass^k over the decisions with lab outcomes
// only in cells that have them; a stored cell has Strict alone.
func TestPassKLab(t *testing.T) {
	rows := liveRows()
	for _, u := range paperUnits()[:10] {
		rows = append(rows, row("s", study.CodeOnly, u, true, true))
	}
	an, err := accumulate(rows).Analyze(context.Background(), analysis.Options{B: 200})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range an.Cells[:2] {
		var cellRows []results.Row
		for _, r := range rows {
			if r.Model == c.Model && r.Condition == string(c.Condition) {
				cellRows = append(cellRows, r)
			}
		}
		rec := c.PassK.Of(simulator.Recovered)
		if rec == nil || len(rec.Values) != 5 {
			t.Fatalf("cell %d: recovered pass^k %+v", i, rec)
		}
		trials := trialsOf(cellRows, simulator.Recovered)
		for _, v := range rec.Values {
			if !closeRel(float64(v.Estimate), exactPassK(trials, v.K), 1e-14) {
				t.Errorf("cell %d recovered pass^%d %v, want %v", i, v.K, v.Estimate, exactPassK(trials, v.K))
			}
		}
	}
	stored := an.Cells[2]
	if stored.Model != "s" || len(stored.PassK) != 1 || stored.PassK.Of(simulator.Recovered) != nil {
		t.Errorf("stored cell pass^k %+v", stored.PassK)
	}
	// Two scenarios of five replicates.
	if sr := stored.PassK.Of(simulator.Strict); sr == nil || len(sr.Values) != 5 || sr.Values[0].Scenarios != 2 {
		t.Errorf("stored cell Strict pass^k %+v", sr)
	}
}

// TestPassKJSON: each cell's "pass_k" maps a column to its values, k
// from 1, with the estimate, the interval, the scenarios and the dropped
// ones.
func TestPassKJSON(t *testing.T) {
	an, err := accumulate(passRows()).Analyze(context.Background(), analysis.Options{B: 200})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := analysis.WriteAnalysisJSON(&b, an, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells []struct {
			PassK map[string][]struct {
				K         int         `json:"k"`
				Estimate  *float64    `json:"estimate"`
				Bootstrap *[2]float64 `json:"bootstrap"`
				Scenarios *int        `json:"scenarios"`
				Dropped   *int        `json:"dropped"`
				Warnings  []string    `json:"warnings"`
			} `json:"pass_k"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for i, c := range doc.Cells {
		vs := c.PassK["strict"]
		if len(c.PassK) != 1 || len(vs) != 5 {
			t.Fatalf("cell %d: pass_k %+v", i, c.PassK)
		}
		for k, v := range vs {
			if v.K != k+1 || v.Estimate == nil || v.Bootstrap == nil || v.Scenarios == nil || *v.Scenarios != 21 || v.Dropped == nil {
				t.Errorf("cell %d pass_k.strict[%d] = %+v", i, k, v)
			}
		}
	}
	if !strings.Contains(b.String(), `"bootstrap": {`) || strings.Index(b.String(), `"pass_k"`) < strings.Index(b.String(), `"bootstrap": {`) {
		t.Error(`"pass_k" does not follow the cell's "bootstrap"`)
	}
}

// TestWritePassK: the table has a row per cell and column, the ks as
// columns and the interval at the largest k; a study of more than 10
// replicates shows a selection of the ks.
func TestWritePassK(t *testing.T) {
	an, err := accumulate(passRows()).Analyze(context.Background(), analysis.Options{B: 2000})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := analysis.WritePassK(&b, an); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"model prompt condition column scenarios k=1 k=2 k=3 k=4 k=5 bootstrap at largest k notes",
		"m default code_only Strict 21 48.6 30.5 21.9 17.1 14.3 k=5 [",
		"m default normalized Strict 21 100.0 100.0 100.0 100.0 100.0 k=5 [100.0, 100.0] degenerate",
		"degenerate: every resample"} {
		t.Run(want, func(t *testing.T) {
			if !containsFields(out, want) {
				t.Errorf("the table lacks %q:\n%s", want, out)
			}
		})
	}
	if got := analysis.PassKShown(nil); len(got) != 0 {
		t.Errorf("no cells: ks %v", got)
	}
	if err := analysis.WritePassK(&b, &analysis.Analysis{}); err != nil {
		t.Error(err)
	}
}

// containsFields reports whether some line of out starts with the fields
// of want.
func containsFields(out, want string) bool {
	wf := strings.Fields(want)
	for _, l := range strings.Split(out, "\n") {
		lf := strings.Fields(l)
		if len(lf) >= len(wf) && slices.Equal(lf[:len(wf)], wf) {
			return true
		}
		// The last field may be a prefix (an interval cut short).
		if len(lf) >= len(wf) && slices.Equal(lf[:len(wf)-1], wf[:len(wf)-1]) && strings.HasPrefix(lf[len(wf)-1], wf[len(wf)-1]) {
			return true
		}
	}
	return false
}

// BenchmarkAccumulate times Accumulator.Add, analyze's per-decision hot
// path (the counts, the pairing's record and pass^k's tally), on 100,000
// rows of the synthetic study held in memory (1 model × 4 conditions ×
// 1,000 scenarios on 100 servers × 25 replicates).
func BenchmarkAccumulate(b *testing.B) {
	var rows []results.Row
	if err := synthRows(1, 1000, 100, 25, func(r *results.Row) error { rows = append(rows, *r); return nil }); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		acc := analysis.NewAccumulator()
		for i := range rows {
			acc.Add(&rows[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
}

// TestPassKManyReplicates: with 60 replicates every k has an estimate,
// and the ks up to 50 and those the table shows (60) an interval; the
// others' is null, so that the intervals drawn do not grow with the
// replicates.
func TestPassKManyReplicates(t *testing.T) {
	var rows []results.Row
	for s := range 8 {
		for rep := int64(1); rep <= 60; rep++ {
			u := unit{server: fmt.Sprintf("P%d", s%4), scenario: fmt.Sprintf("S%d", s), rep: rep}
			rows = append(rows, row("m", study.Normalized, u, rep%int64(s+2) != 0, true))
		}
	}
	an, err := accumulate(rows).Analyze(context.Background(), analysis.Options{B: 200})
	if err != nil {
		t.Fatal(err)
	}
	sr := an.Cells[0].PassK.Of(simulator.Strict)
	if sr == nil || len(sr.Values) != 60 {
		t.Fatalf("pass^k %+v", sr)
	}
	trials := trialsOf(rows, simulator.Strict)
	for _, v := range sr.Values {
		if !closeRel(float64(v.Estimate), exactPassK(trials, v.K), 1e-13) {
			t.Errorf("pass^%d = %v, want %v", v.K, v.Estimate, exactPassK(trials, v.K))
		}
		if want := v.K <= 50 || v.K == 60; v.Bootstrap.Defined() != want {
			t.Errorf("pass^%d: interval %v, want one: %v", v.K, v.Bootstrap, want)
		}
	}
}
