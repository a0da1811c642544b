package analysis_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// closeRel reports whether got is within relative tolerance tol of want
// (absolute when want is 0).
func closeRel(got, want, tol float64) bool {
	if want == 0 {
		return math.Abs(got) <= tol
	}
	return math.Abs(got-want) <= tol*math.Abs(want)
}

// paperServers are the corpus' cluster sizes in scenarios: three servers
// with 3 failures, five with 2, two with 1 (21 scenarios).
var paperServers = []int{3, 3, 3, 2, 2, 2, 2, 2, 1, 1}

// unit is one (scenario, replicate) of the paper shape with its server.
type unit struct {
	server, scenario string
	rep              int64
}

// paperUnits lists the 105 (scenario, replicate) units of one cell.
func paperUnits() []unit {
	var out []unit
	id := 0
	for s, n := range paperServers {
		for range n {
			id++
			for rep := int64(1); rep <= 5; rep++ {
				out = append(out, unit{fmt.Sprintf("P%02d", s+1), fmt.Sprintf("S%02d", id), rep})
			}
		}
	}
	return out
}

func row(model string, cond study.Condition, u unit, strict, cover bool) results.Row {
	return results.Row{Model: model, Prompt: "default", Condition: string(cond), Scenario: u.scenario, Replicate: u.rep, Server: u.server, Status: results.StatusOK, Outcome: simulator.Values{}.WithFlag(simulator.Strict, strict).WithFlag(simulator.Proven, strict).WithFlag(simulator.Cover, cover || strict)}
}

// pairedRows builds code_only and normalized decisions of one model whose
// Strict outcomes are, over the 105 units in order: both for the first
// both units, code_only only for the next ab, normalized only for the next
// ba, neither for the rest.
func pairedRows(model string, both, ab, ba int) []results.Row {
	var rows []results.Row
	for i, u := range paperUnits() {
		a := i < both || (i >= both && i < both+ab)
		b := i < both || (i >= both+ab && i < both+ab+ba)
		rows = append(rows, row(model, study.CodeOnly, u, a, true), row(model, study.Normalized, u, b, i%3 != 0))
	}
	return rows
}

func accumulate(rows []results.Row) *analysis.Accumulator {
	acc := analysis.NewAccumulator()
	for i := range rows {
		acc.Add(&rows[i])
	}
	return acc
}

// TestAccumulatorCounts: the Accumulator's cells are Count's, and its
// per-server sufficient statistics add up to them.
func TestAccumulatorCounts(t *testing.T) {
	rows := pairedRows("m", 30, 12, 4)
	rows = append(rows, results.Row{Model: "m", Prompt: "default", Condition: "prose", Scenario: "S01", Replicate: 1,
		Server: "P01", Status: results.StatusError, Error: "transport"})
	acc := accumulate(rows)
	if got, want := acc.Cells(), results.Count(rows); !slices.Equal(got, want) {
		t.Fatalf("Accumulator cells %+v\nCount %+v", got, want)
	}
	if got := acc.Servers(); len(got) != 10 || got[0] != "P01" || got[9] != "P10" {
		t.Errorf("servers %v", got)
	}
	for i, c := range acc.Cells() {
		for _, key := range analysis.RateKeys {
			cs := acc.Clusters(i, key)
			var n int
			var sum float64
			for _, cl := range cs {
				n += cl.N
				sum += cl.Sum
			}
			wantN, wantK := c.N, 0
			switch key {
			case analysis.Selective:
				wantN, wantK = c.Count(simulator.Cover), c.Count(simulator.Strict)
			case "strict":
				wantK = c.Count(simulator.Strict)
			case "cover":
				wantK = c.Count(simulator.Cover)
			}
			if key == "strict" || key == "cover" || key == analysis.Selective {
				if n != wantN || sum != float64(wantK) {
					t.Errorf("cell %d %s: clusters sum to %d/%g, want %d/%d", i, key, int(sum), float64(n), wantK, wantN)
				}
			}
		}
	}
	// The prose cell has only an error decision: N = 0, no clusters.
	cells := acc.Cells()
	if c := cells[2]; c.Condition != study.Prose || c.N != 0 || c.Errors != 1 || len(acc.Clusters(2, "strict")) != 0 {
		t.Errorf("error-only cell %+v, clusters %v", c, acc.Clusters(2, "strict"))
	}
}

// TestPairedEndToEnd checks a predeclared paired comparison built from
// decision rows against R: 105 pairs, 30 concordant successes, 12 A+B−,
// 4 A−B+, 59 concordant failures.
//
// Reference: R 4.2.2 Patched (2022-11-10 r83330),
//
//	sprintf("%.17g", binom.test(4, 16, 0.5)$p.value)   # 0.076812744140625042
//
// (the exact McNemar test; mcnemar.test(matrix(c(30, 4, 12, 59), 2),
// correct = FALSE) gives the chi-square approximation 0.0455, not used).
// Tolerance 1e-12 relative.
func TestPairedEndToEnd(t *testing.T) {
	acc := accumulate(pairedRows("m", 30, 12, 4))
	an, err := acc.Analyze(context.Background(), analysis.Options{B: 4000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var p *analysis.Pair
	for i := range an.Pairs {
		if an.Pairs[i].A == string(study.CodeOnly) && an.Pairs[i].B == string(study.Normalized) {
			p = &an.Pairs[i]
		}
	}
	if p == nil || len(an.Pairs) != 1 {
		t.Fatalf("pairs %+v: want exactly code_only − normalized (no structured or prose decisions)", an.Pairs)
	}
	if !p.Predeclared || p.Column != simulator.Strict || p.Model != "m" || p.Prompt != "default" {
		t.Errorf("pair %+v", p)
	}
	if p.N != 105 || p.CountA != 42 || p.CountB != 34 || p.DiscordantAB != 12 || p.DiscordantBA != 4 || p.Unpaired != 0 {
		t.Errorf("pair counts %+v, want n 105, 42 vs 34, discordant 12/4", p.PairStats)
	}
	if want := 8.0 / 105; float64(p.Diff) != want {
		t.Errorf("diff %v, want %v", p.Diff, want)
	}
	if want := 0.076812744140625042; !closeRel(float64(p.McNemarP), want, 1e-12) {
		t.Errorf("McNemar p %.17g, want %.17g (R binom.test)", float64(p.McNemarP), want)
	}
	// The bootstrap is the cluster bootstrap of per-server (pairs, Σ(a−b)).
	var cs []stats.Cluster
	per := map[string]*stats.Cluster{}
	var order []string
	for i, u := range paperUnits() {
		c := per[u.server]
		if c == nil {
			c = &stats.Cluster{}
			per[u.server] = c
			order = append(order, u.server)
		}
		c.N++
		switch {
		case i >= 30 && i < 42:
			c.Sum++
		case i >= 42 && i < 46:
			c.Sum--
		}
	}
	slices.Sort(order)
	for _, s := range order {
		cs = append(cs, *per[s])
	}
	iv := stats.ClusterBootstrap(cs, stats.Options{B: 4000, Seed: 3})
	if p.Bootstrap.Lo != iv.Lo || p.Bootstrap.Hi != iv.Hi {
		t.Errorf("bootstrap [%g, %g], want [%g, %g] from the per-server sufficient statistics", p.Bootstrap.Lo, p.Bootstrap.Hi, iv.Lo, iv.Hi)
	}
	if !(iv.Lo < float64(p.Diff) && float64(p.Diff) < iv.Hi) {
		t.Errorf("interval [%g, %g] does not bracket %g", iv.Lo, iv.Hi, p.Diff)
	}
}

// TestSelectiveWilsonReference checks selective accuracy (Strict / Cover)
// and its Wilson interval against R 4.2.2 Patched (2022-11-10 r83330):
//
//	ci <- prop.test(strict, cover, correct = FALSE)$conf.int
//
// Tolerance 1e-9 relative.
func TestSelectiveWilsonReference(t *testing.T) {
	for _, tc := range []struct {
		strict, cover int
		lo, hi        float64
	}{
		{10, 63, 0.088570923965141574, 0.26811576781772545},
		{53, 87, 0.50413389551168275, 0.70502170642006112},
		{40, 73, 0.43424321509808306, 0.65685344167328519},
		{9, 77, 0.062725620056493847, 0.20745083567939718},
	} {
		t.Run(fmt.Sprint(tc.strict), func(t *testing.T) {
			// A cell of 105 decisions: strict ⊆ cover, spread over the servers.
			var rows []results.Row
			for i, u := range paperUnits() {
				rows = append(rows, row("m", study.Prose, u, i < tc.strict, i < tc.cover))
			}
			an, err := accumulate(rows).Analyze(context.Background(), analysis.Options{B: 1000, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			c := an.Cells[0]
			if c.Count(simulator.Strict) != tc.strict || c.Count(simulator.Cover) != tc.cover {
				t.Fatalf("cell %+v", c.Cell)
			}
			if want := float64(tc.strict) / float64(tc.cover); float64(c.Rates.Selective) != want {
				t.Errorf("selective %v, want %v", c.Rates.Selective, want)
			}
			w := c.CI.Selective
			if !closeRel(w.Lo, tc.lo, 1e-9) || !closeRel(w.Hi, tc.hi, 1e-9) {
				t.Errorf("Wilson(%d, %d) = [%.17g, %.17g], R prop.test [%.17g, %.17g]", tc.strict, tc.cover, w.Lo, w.Hi, tc.lo, tc.hi)
			}
		})
	}
}

// TestPairBootstrapExact: on a small paired example (5 servers) the
// bootstrap interval of a difference converges to the exact percentile
// interval, computed here by enumerating all 5⁵ ordered server draws.
func TestPairBootstrapExact(t *testing.T) {
	// Server s has n_s pairs; ab_s pairs with A only, ba_s with B only.
	design := []struct{ n, ab, ba int }{{2, 1, 0}, {3, 0, 2}, {4, 2, 0}, {5, 0, 1}, {6, 3, 1}}
	var rows []results.Row
	id := 0
	for s, d := range design {
		for k := range d.n {
			id++
			u := unit{fmt.Sprintf("P%02d", s+1), fmt.Sprintf("S%02d", id), 1}
			a, b := k < d.ab, k >= d.ab && k < d.ab+d.ba
			rows = append(rows, row("m", study.Structured, u, a, true), row("m", study.Prose, u, b, true))
		}
	}
	// Exact distribution of Σ(ab−ba)*/Σn* over the 3125 ordered draws.
	mass := map[float64]float64{}
	idx := make([]int, len(design))
	for {
		n, s := 0, 0
		for _, i := range idx {
			n += design[i].n
			s += design[i].ab - design[i].ba
		}
		mass[float64(s)/float64(n)]++
		j := 0
		for ; j < len(idx); j++ {
			if idx[j]++; idx[j] < len(design) {
				break
			}
			idx[j] = 0
		}
		if j == len(idx) {
			break
		}
	}
	var support, cdf []float64
	for v := range mass {
		support = append(support, v)
	}
	slices.Sort(support)
	acc := 0.0
	for _, v := range support {
		acc += mass[v] / 3125
		cdf = append(cdf, acc)
	}
	const B = 200000
	for _, lvl := range []float64{0.025, 0.975} {
		t.Run(fmt.Sprint(lvl), func(t *testing.T) {
			for _, F := range cdf {
				if math.Abs(F-lvl) < 5*math.Sqrt(lvl*(1-lvl)/B) {
					t.Fatalf("test design: exact CDF %g too close to %g", F, lvl)
				}
			}
		})
	}
	wantLo := support[slices.IndexFunc(cdf, func(F float64) bool { return F >= 0.025 })]
	wantHi := support[slices.IndexFunc(cdf, func(F float64) bool { return F >= 0.975 })]

	an, err := accumulate(rows).Analyze(context.Background(), analysis.Options{B: B, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	if len(an.Pairs) != 1 {
		t.Fatalf("pairs %+v", an.Pairs)
	}
	p := an.Pairs[0]
	if want := 2.0 / 20; float64(p.Diff) != want {
		t.Errorf("diff %v, want %v", p.Diff, want)
	}
	if p.Bootstrap.Lo != wantLo || p.Bootstrap.Hi != wantHi {
		t.Errorf("bootstrap [%g, %g], exact percentile interval [%g, %g]", p.Bootstrap.Lo, p.Bootstrap.Hi, wantLo, wantHi)
	}
}

// TestBootstrapOrderIndependent: the intervals do not depend on the order
// the rows come in (servers are sorted before resampling).
func TestBootstrapOrderIndependent(t *testing.T) {
	rows := pairedRows("m", 20, 15, 6)
	a, err := accumulate(rows).Analyze(context.Background(), analysis.Options{B: 3000})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(rows)
	b, err := accumulate(rows).Analyze(context.Background(), analysis.Options{B: 3000})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Cells {
		var j int
		for j = range b.Cells {
			if b.Cells[j].Condition == a.Cells[i].Condition {
				break
			}
		}
		if *a.Cells[i].Bootstrap.At("strict") != *b.Cells[j].Bootstrap.At("strict") || a.Cells[i].Bootstrap.Selective != b.Cells[j].Bootstrap.Selective {
			t.Errorf("cell %s: %+v vs %+v", a.Cells[i].Condition, a.Cells[i].Bootstrap, b.Cells[j].Bootstrap)
		}
	}
	if a.Pairs[0].Bootstrap != b.Pairs[0].Bootstrap || a.Bootstrap.Seed != analysis.DefaultSeed {
		t.Errorf("pair %+v vs %+v (seed %d)", a.Pairs[0].Bootstrap, b.Pairs[0].Bootstrap, a.Bootstrap.Seed)
	}
}

// TestWarningsNotErrors: degenerate and empty cells come back with
// warnings and null JSON, not failures.
func TestWarningsNotErrors(t *testing.T) {
	var rows []results.Row
	for _, u := range paperUnits() {
		rows = append(rows, row("stop", study.Normalized, u, false, false), row("stop", study.CodeOnly, u, false, false))
	}
	an, err := accumulate(rows).Analyze(context.Background(), analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := an.Cells[0]
	if !c.AlwaysStops() {
		t.Error("an all-stop cell is not AlwaysStops")
	}
	if w := c.Bootstrap.Warnings["strict"]; len(w) != 1 || analysis.Tag(w[0]) != "degenerate" {
		t.Errorf("strict warnings %q", w)
	}
	if w := c.Bootstrap.Warnings["selective"]; len(w) == 0 || analysis.Tag(w[0]) != "undefined" {
		t.Errorf("selective warnings %q", w)
	}
	if c.CI.Selective.Defined() || !math.IsNaN(float64(c.Rates.Selective)) {
		t.Errorf("selective of Cover = 0: %+v %v", c.CI.Selective, c.Rates.Selective)
	}
	var b strings.Builder
	if err := analysis.WriteAnalysisJSON(&b, an, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"selective": null`) || strings.Contains(b.String(), "NaN") {
		t.Errorf("JSON of undefined values:\n%s", b.String()[:min(2000, b.Len())])
	}
	if p := an.Pairs[0]; p.N != 105 || p.DiscordantAB+p.DiscordantBA != 0 || float64(p.McNemarP) != 1 {
		t.Errorf("all-stop pair %+v", p.PairStats)
	}
}

func TestOptionsErrors(t *testing.T) {
	acc := accumulate(pairedRows("m", 1, 1, 1))
	for _, tc := range []struct {
		opt  analysis.Options
		want string
	}{
		{analysis.Options{B: -1}, "B = -1"},
		{analysis.Options{Conf: 1.5}, "confidence level"},
		{analysis.Options{Pairs: []analysis.PairSpec{{Factor: analysis.FactorCondition, A: string(study.Prose), B: string(study.Structured), Column: simulator.Cover}}}, "no model/prompt arm"},
		{analysis.Options{Pairs: []analysis.PairSpec{{Factor: analysis.FactorCondition, A: string(study.CodeOnly), B: string(study.Normalized), Column: -1}}}, "unknown column"},
		{analysis.Options{Pairs: []analysis.PairSpec{{Factor: analysis.FactorCondition, A: string(study.CodeOnly), B: string(study.Normalized), Column: simulator.Calls}}}, "unknown column"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if _, err := acc.Analyze(context.Background(), tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Analyze(%+v): %v, want %q", tc.opt, err, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]simulator.Col{"strict": simulator.Strict, "AnyFS": simulator.AnyFS, "termfs": simulator.TerminalFS, " terminal_fs ": simulator.TerminalFS} {
		t.Run(in, func(t *testing.T) {
			if got, err := analysis.ParseColumn(in); err != nil || got != want {
				t.Errorf("ParseColumn(%q) = %q, %v", in, got, err)
			}
		})
	}
	for _, bad := range []string{"", "extra", "Strictly"} {
		t.Run(bad, func(t *testing.T) {
			if _, err := analysis.ParseColumn(bad); err == nil {
				t.Errorf("ParseColumn(%q) accepted", bad)
			}
		})
	}
	p, err := analysis.ParsePairSpec("structured, prose ,cover", simulator.Strict)
	if err != nil || p != (analysis.PairSpec{Factor: analysis.FactorCondition, A: string(study.Structured), B: string(study.Prose), Column: simulator.Cover}) {
		t.Errorf("ParsePairSpec = %+v, %v", p, err)
	}
	if p, err := analysis.ParsePairSpec("envelope,normalized", 0); err != nil || p.Column != simulator.Strict {
		t.Errorf("ParsePairSpec default column (the zero Col): %+v, %v", p, err)
	}
	if p, err := analysis.ParsePairSpec("envelope,normalized", simulator.Cover); err != nil || p.Column != simulator.Cover {
		t.Errorf("ParsePairSpec default column cover: %+v, %v", p, err)
	}
}
