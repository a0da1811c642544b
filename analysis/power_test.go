package analysis_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/simulator"
)

// mcnemarPower is the exact power of McNemar's test at level over n
// independent pairs whose outcomes are Bernoulli(pa) and Bernoulli(pb),
// independent: a sum over the trinomial law of the discordant counts.
func mcnemarPower(n int, pa, pb, level float64) float64 {
	pab, pba := pa*(1-pb), pb*(1-pa)
	rest := 1 - pab - pba
	lf := func(k int) float64 { l, _ := math.Lgamma(float64(k) + 1); return l }
	pow := 0.0
	for x := 0; x <= n; x++ {
		for y := 0; x+y <= n; y++ {
			if stats.McNemarExact(x, y) < level {
				lp := lf(n) - lf(x) - lf(y) - lf(n-x-y) + float64(x)*math.Log(pab) + float64(y)*math.Log(pba) + float64(n-x-y)*math.Log(rest)
				pow += math.Exp(lp)
			}
		}
	}
	return pow
}

// TestPowerKnownAnswer checks the simulation against an exact answer:
// with one replicate, the scenario-level sign-flip test is McNemar's on
// the same pairs (so the two powers are equal study by study), and with
// a negligible intra-scenario correlation (1e-4) the pairs are
// independent Bernoulli(0.5) and Bernoulli(0.3), whose McNemar power is
// an exact trinomial sum; the simulation must agree within 4 Monte Carlo
// standard errors.
func TestPowerKnownAnswer(t *testing.T) {
	c := analysis.PowerContrast{Name: "x", Base: 0.3, ICC: 1e-4, ArmCorr: 1, Source: "assumed"}
	pw, err := analysis.EstimatePower(context.Background(), []analysis.PowerContrast{c}, analysis.PowerOptions{Diff: 0.2, Scenarios: []int{21, 42}, Replicates: []int{1}, Servers: []int{10}, Studies: 3000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pw.Curves[0].Points {
		if p.Power != p.PowerMcNemar {
			t.Errorf("%d scenarios × 1 replicate: sign-flip power %v ≠ McNemar power %v", p.Scenarios, p.Power, p.PowerMcNemar)
		}
		want := mcnemarPower(p.Scenarios, 0.5, 0.3, 0.05)
		if se := math.Sqrt(want * (1 - want) / 3000); math.Abs(p.Power-want) > 4*se {
			t.Errorf("%d scenarios: power %v, exact %v ± %v", p.Scenarios, p.Power, want, 4*se)
		}
	}
}

// TestPowerDesign checks what a design question should show: more
// scenarios raise the power; with a strongly scenario-dependent effect
// more replicates raise it less than more scenarios; McNemar's "power"
// then exceeds the sign-flip test's (it overstates); and the summary
// names the smallest design reaching 80%.
func TestPowerDesign(t *testing.T) {
	c := analysis.PowerContrast{Name: "c", Base: 0.3, ICC: 0.4, ArmCorr: 0.5, Source: "assumed"}
	pw, err := analysis.EstimatePower(context.Background(), []analysis.PowerContrast{c}, analysis.PowerOptions{Diff: 0.2, Scenarios: []int{21, 84}, Replicates: []int{1, 8}, Servers: []int{10}, Studies: 400})
	if err != nil {
		t.Fatal(err)
	}
	pts := map[[2]int]analysis.PowerPoint{}
	for _, p := range pw.Curves[0].Points {
		pts[[2]int{p.Scenarios, p.Replicates}] = p
	}
	s21r8, s84r1, s84r8 := pts[[2]int{21, 8}], pts[[2]int{84, 1}], pts[[2]int{84, 8}]
	if !(s84r8.Power > s21r8.Power+0.2) {
		t.Errorf("84 vs 21 scenarios at 8 replicates: power %v vs %v", s84r8.Power, s21r8.Power)
	}
	if !(s84r1.Power > pts[[2]int{21, 1}].Power) {
		t.Errorf("84 vs 21 scenarios at 1 replicate: %v vs %v", s84r1.Power, pts[[2]int{21, 1}].Power)
	}
	if !(s21r8.PowerMcNemar > s21r8.Power) {
		t.Errorf("21 × 8: McNemar %v should exceed the sign-flip power %v", s21r8.PowerMcNemar, s21r8.Power)
	}
	var b strings.Builder
	if err := analysis.WritePower(&b, pw); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"power (scenario flip)", "c: rate of B 30.0%", "84 scenarios"} {
		t.Run(s, func(t *testing.T) {
			if !strings.Contains(b.String(), s) {
				t.Errorf("WritePower lacks %q:\n%s", s, b.String())
			}
		})
	}
}

// TestPowerErrors checks that every bad option is named.
func TestPowerErrors(t *testing.T) {
	ok := analysis.PowerContrast{Name: "c", Base: 0.3, ICC: 0.2, ArmCorr: 1}
	for _, tc := range []struct {
		c    analysis.PowerContrast
		opt  analysis.PowerOptions
		want string
	}{
		{ok, analysis.PowerOptions{}, "difference 0"},
		{ok, analysis.PowerOptions{Diff: 0.8}, "is not a rate"},
		{ok, analysis.PowerOptions{Diff: 0.1, Studies: -1}, "studies"},
		{ok, analysis.PowerOptions{Diff: 0.1, Scenarios: []int{0}}, "scenarios: 0"},
		{ok, analysis.PowerOptions{Diff: 0.1, Replicates: []int{}}, "replicates: empty"},
		{ok, analysis.PowerOptions{Diff: 0.1, ServerShare: 1}, "server share"},
		{ok, analysis.PowerOptions{Diff: 0.1, Scenarios: []int{100000}, Studies: 100000}, "more than"},
		{analysis.PowerContrast{Name: "c", Base: 0.3, ICC: 0, ArmCorr: 1}, analysis.PowerOptions{Diff: 0.1}, "intra-scenario"},
		{analysis.PowerContrast{Name: "c", Base: 0.3, ICC: 0.1, ArmCorr: 2}, analysis.PowerOptions{Diff: 0.1}, "arm correlation"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if _, err := analysis.EstimatePower(context.Background(), []analysis.PowerContrast{tc.c}, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v %+v: %v, want %q", tc.c, tc.opt, err, tc.want)
			}
		})
	}
	if _, err := analysis.EstimatePower(context.Background(), nil, analysis.PowerOptions{Diff: 0.1}); err == nil {
		t.Error("no contrast accepted")
	}
}

// TestPilotContrasts checks the estimates from a pilot: on promptRows,
// prompt default has Strict on 3 scenarios of 21 (every replicate), so
// Base = 15/105 and, with no within-scenario variance, ICC clamps to
// 0.99; the per-scenario rates of reason (9 scenarios) and default (3)
// correlate 36/sqrt(5832) = 0.4714.
func TestPilotContrasts(t *testing.T) {
	spec, _ := analysis.ParsePairSpec("prompt:reason,default", simulator.Strict)
	an, err := accumulate(promptRows()).Analyze(context.Background(), analysis.Options{B: 100, Pairs: []analysis.PairSpec{spec}, NoPredeclared: true})
	if err != nil {
		t.Fatal(err)
	}
	cs := analysis.PilotContrasts(an)
	if len(cs) != 2 {
		t.Fatalf("%d contrasts, want 2", len(cs))
	}
	c := cs[0]
	if !closeRel(c.Base, 15.0/105, 1e-12) || c.ICC != 0.99 || !closeRel(c.ArmCorr, 36/math.Sqrt(5832), 1e-12) || !strings.Contains(c.Source, "pilot prompt:reason,default") {
		t.Errorf("pilot %+v", c)
	}
	if len(c.Clamped) != 1 || c.Clamped[0] != (analysis.PowerClamp{Field: "icc", Estimate: "1", Value: 0.99}) {
		t.Errorf("clamped %+v, want the ICC's 1 clamped to 0.99", c.Clamped)
	}
	if n := c.ClampNote(); n != "pilot contrast "+c.Name+": intra-scenario correlation 1 clamped to 0.99" {
		t.Errorf("note %q", n)
	}
}

// TestPilotContrastsDegenerate: a pilot in which neither arm ever
// succeeds (0/105) or B always does (105/105) has its rate clamped and its
// correlations undefined; each replacement is recorded and named.
func TestPilotContrastsDegenerate(t *testing.T) {
	for _, tc := range []struct {
		ba   int
		want []analysis.PowerClamp
		note string
	}{
		{0, []analysis.PowerClamp{{Field: "base", Estimate: "0/105", Value: 0.01}, {Field: "icc", Estimate: "undefined (no variance)", Value: 0.01}, {Field: "arm_corr", Estimate: "undefined (no variance)", Value: 1}},
			"rate of B 0/105 clamped to 1.0%, intra-scenario correlation undefined (no variance) set to 0.01, arm correlation undefined (no variance) set to 1 (a degenerate pilot)"},
		{105, []analysis.PowerClamp{{Field: "base", Estimate: "105/105", Value: 0.99}, {Field: "icc", Estimate: "undefined (no variance)", Value: 0.01}, {Field: "arm_corr", Estimate: "undefined (no variance)", Value: 1}},
			"rate of B 105/105 clamped to 99.0%"},
	} {
		t.Run(tc.note, func(t *testing.T) {
			an, err := accumulate(pairedRows("m", 0, 0, tc.ba)).Analyze(context.Background(), analysis.Options{B: 10})
			if err != nil {
				t.Fatal(err)
			}
			cs := analysis.PilotContrasts(an)
			if len(cs) == 0 {
				t.Fatal("no contrast")
			}
			c := cs[0]
			if !slices.Equal(c.Clamped, tc.want) || c.Base != tc.want[0].Value || c.ICC != 0.01 || c.ArmCorr != 1 {
				t.Errorf("B %d/105: %+v, want clamped %+v", tc.ba, c, tc.want)
			}
			if n := c.ClampNote(); !strings.HasPrefix(n, "pilot contrast "+c.Name+": "+tc.note) {
				t.Errorf("B %d/105: note %q, want %q", tc.ba, n, tc.note)
			}
			var w strings.Builder
			pw := &analysis.Power{Diff: 0.1, Curves: []analysis.PowerCurve{{PowerContrast: c}}}
			if err := analysis.WritePower(&w, pw); err != nil || !strings.Contains(w.String(), "\n"+c.ClampNote()+"\n") {
				t.Errorf("WritePower does not name the clamps:\n%s", w.String())
			}
		})
	}
}

// BenchmarkPower is one design question of the default grid's largest
// design (84 scenarios × 10 replicates over 20 servers), 100 studies.
func BenchmarkPower(b *testing.B) {
	c := analysis.PowerContrast{Name: "c", Base: 0.3, ICC: 0.3, ArmCorr: 0.7}
	opt := analysis.PowerOptions{Diff: 0.1, Scenarios: []int{84}, Replicates: []int{10}, Servers: []int{20}, Studies: 100}
	for b.Loop() {
		if _, err := analysis.EstimatePower(context.Background(), []analysis.PowerContrast{c}, opt); err != nil {
			b.Fatal(err)
		}
	}
}
