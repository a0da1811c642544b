package analysis_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// promptRows builds two prompts' decisions of model m under two
// conditions: under prompt "reason" Strict holds for scenarios S01–S09
// (every replicate), under "default" for S01–S03 only, so reason −
// default on Strict has 30 discordant pairs, all one way, in 6 scenarios
// on 2 or 3 servers.
func promptRows() []results.Row {
	var rows []results.Row
	for _, u := range paperUnits() {
		n := 0
		for i := 1; i <= 21; i++ {
			if u.scenario == "S0"+string(rune('0'+i)) && i <= 9 {
				n = i
			}
		}
		for _, cond := range []study.Condition{study.Normalized, study.CodeOnly} {
			r := row("m", cond, u, n >= 1 && n <= 9, true)
			r.Prompt = "reason"
			d := row("m", cond, u, n >= 1 && n <= 3, true)
			rows = append(rows, r, d)
		}
	}
	return rows
}

// TestPromptPair checks a prompt comparison: within each (model,
// condition), the decisions of two prompts are matched on scenario and
// replicate; the sign-flip test by scenario is exact, 2^(1−6) = 1/32 with
// 6 informative scenarios all one way, and by server 2^(1−m) over the m
// servers that differ; the unprefixed spec resolves to the prompts.
func TestPromptPair(t *testing.T) {
	acc := accumulate(promptRows())
	for _, s := range []string{"prompt:reason,default", "reason,default"} {
		t.Run(s, func(t *testing.T) {
			spec, err := analysis.ParsePairSpec(s, simulator.Strict)
			if err != nil {
				t.Fatal(err)
			}
			an, err := acc.Analyze(context.Background(), analysis.Options{B: 500, Pairs: []analysis.PairSpec{spec}, NoPredeclared: true})
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			if len(an.Pairs) != 2 {
				t.Fatalf("%s: %d pairs, want one per condition", s, len(an.Pairs))
			}
			for _, p := range an.Pairs {
				if p.Factor != analysis.FactorPrompt || p.Model != "m" || p.Prompt != "" || p.N != 105 || p.DiscordantAB != 30 || p.DiscordantBA != 0 {
					t.Errorf("%s: %+v", s, p)
				}
				if p.FlipScenario.Informative != 6 || p.FlipScenario.Clusters != 21 || float64(p.FlipScenario.P) != 1.0/32 || !p.FlipScenario.Exact {
					t.Errorf("%s: scenario flip %+v, want p = 1/32 over 6 informative of 21", s, p.FlipScenario)
				}
				// S04–S09 lie on servers P02 (S04–S06) and P03 (S07–S09).
				if p.FlipServer.Informative != 2 || float64(p.FlipServer.P) != 0.5 || !hasWarning(p.Warnings, stats.Coarse) {
					t.Errorf("%s: server flip %+v, warnings %v", s, p.FlipServer, p.Warnings)
				}
				if !(float64(p.McNemarP) < 1e-8) {
					t.Errorf("%s: McNemar p %v, want tiny (30 discordant pairs taken as independent)", s, p.McNemarP)
				}
				if !p.InFamily || float64(p.Holm) != 2.0/32 || float64(p.BH) != 1.0/32 {
					t.Errorf("%s: adjusted holm %v BH %v, want 2/32 and 1/32 (family of 2 equal p-values)", s, p.Holm, p.BH)
				}
				if p.Within() != "m/"+p.Condition {
					t.Errorf("Within() = %q", p.Within())
				}
			}
		})
	}
}

func hasWarning(ws []stats.Warning, k stats.WarningKind) bool {
	for _, w := range ws {
		if w.Kind == k {
			return true
		}
	}
	return false
}

// TestModelPair checks a model comparison: two models under the same
// prompt, matched on condition, scenario and replicate.
func TestModelPair(t *testing.T) {
	rows := append(pairedRows("a", 10, 20, 5), pairedRows("b", 10, 5, 5)...)
	spec, err := analysis.ParsePairSpec("model:a,b,strict", simulator.Strict)
	if err != nil {
		t.Fatal(err)
	}
	an, err := accumulate(rows).Analyze(context.Background(), analysis.Options{B: 300, Pairs: []analysis.PairSpec{spec}, NoPredeclared: true})
	if err != nil {
		t.Fatal(err)
	}
	// code_only: a has Strict on units 0–29, b on 0–14: 15 discordant a-only.
	var got []string
	for _, p := range an.Pairs {
		got = append(got, p.Condition)
		if p.Condition == string(study.CodeOnly) && (p.DiscordantAB != 15 || p.DiscordantBA != 0 || p.Prompt != "default" || p.Model != "") {
			t.Errorf("code_only: %+v", p)
		}
		if p.Condition == string(study.Normalized) && (p.DiscordantAB != 5 || p.DiscordantBA != 5 || math.Abs(float64(p.Diff)) > 0) {
			t.Errorf("normalized: a has units 0–9 and 30–34, b 0–9 and 15–19: %+v", p)
		}
	}
	if strings.Join(got, ",") != "normalized,code_only" {
		t.Errorf("conditions %v", got)
	}
}

// TestPairSpecErrors checks the parse and resolution errors: unknown
// factor, unknown condition under condition:, levels the bundle lacks,
// and a prompt pair no model has.
func TestPairSpecErrors(t *testing.T) {
	for in, want := range map[string]string{
		"condition:reason,x": "unknown condition",
		"a,a":                "the same",
		"prompt:,b":          "empty",
		"prompt:a,b,extra":   "sum of replays",
		"code_only":          "want [FACTOR:]A,B",
	} {
		t.Run(in, func(t *testing.T) {
			if _, err := analysis.ParsePairSpec(in, simulator.Strict); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ParsePairSpec(%q) = %v, want %q", in, err, want)
			}
		})
	}
	acc := accumulate(promptRows())
	for in, want := range map[string]string{
		"reason,nothing":         "not two conditions, two prompts or two models",
		"prompt:reason,other":    "no model of the bundle has a condition under both prompts",
		"model:m,n":              "no prompt of the bundle has a condition under both models",
		"structured,prose,cover": "no model/prompt arm",
	} {
		t.Run(in, func(t *testing.T) {
			spec, err := analysis.ParsePairSpec(in, simulator.Strict)
			if err != nil {
				t.Fatal(err)
			}
			_, err = acc.Analyze(context.Background(), analysis.Options{Pairs: []analysis.PairSpec{spec}})
			if !errors.Is(err, analysis.ErrPair) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want ErrPair with %q", in, err, want)
			}
		})
	}
}

// TestFamily checks which pairs the family holds (an untestable pair of
// the declared family is left out: TestUntestableLeftOut) and that the
// adjusted p-values are Holm's and BH's of the in-family scenario flip
// p-values.
func TestFamily(t *testing.T) {
	acc := accumulate(promptRows())
	spec, _ := analysis.ParsePairSpec("prompt:reason,default", simulator.Strict)
	for _, fam := range []string{analysis.FamilyAll, analysis.FamilyPredeclared, analysis.FamilyRequested} {
		t.Run(fmt.Sprint(fam), func(t *testing.T) {
			an, err := acc.Analyze(context.Background(), analysis.Options{B: 200, Pairs: []analysis.PairSpec{spec}, Family: fam})
			if err != nil {
				t.Fatal(err)
			}
			var ps []float64
			for _, p := range an.Pairs {
				want := (fam == analysis.FamilyAll || (fam == analysis.FamilyPredeclared) == p.Predeclared) && p.FlipScenario.Informative > 0
				if p.InFamily != want {
					t.Errorf("%s: %s in family %v, want %v", fam, p.Spec, p.InFamily, want)
				}
				if p.InFamily {
					ps = append(ps, float64(p.FlipScenario.P))
				} else if !math.IsNaN(float64(p.Holm)) {
					t.Errorf("%s: %s outside the family has Holm %v", fam, p.Spec, p.Holm)
				}
			}
			if an.Family.Size != len(ps) || an.Family.Declared != fam {
				t.Errorf("%s: family %+v, want size %d", fam, an.Family, len(ps))
			}
			h := stats.Holm(ps)
			i := 0
			for _, p := range an.Pairs {
				if p.InFamily {
					if float64(p.Holm) != h[i] {
						t.Errorf("%s: %s Holm %v, want %v", fam, p.Spec, p.Holm, h[i])
					}
					i++
				}
			}
		})
	}
	if _, err := acc.Analyze(context.Background(), analysis.Options{Family: "most"}); err == nil {
		t.Error("unknown family accepted")
	}
}

// TestClopperPearsonCells checks that -interval clopper-pearson replaces
// the cells' Wilson intervals with stats.ClopperPearson's, in JSON under
// "clopper_pearson".
func TestClopperPearsonCells(t *testing.T) {
	an, err := accumulate(pairedRows("m", 10, 20, 5)).Analyze(context.Background(), analysis.Options{B: 100, Interval: analysis.IntervalClopperPearson})
	if err != nil {
		t.Fatal(err)
	}
	c := an.Cells[0]
	lo, hi := stats.ClopperPearson(c.Count(simulator.Strict), c.N, 0.95)
	if b := c.CI.At("strict"); b == nil || b.Lo != lo || b.Hi != hi {
		t.Errorf("strict interval %v, want [%v, %v]", b, lo, hi)
	}
	js, err := c.MarshalJSON()
	if err != nil || !strings.Contains(string(js), `"clopper_pearson":{`) || strings.Contains(string(js), `"wilson"`) {
		t.Errorf("JSON %s, %v", js, err)
	}
	if _, err := accumulate(nil).Analyze(context.Background(), analysis.Options{Interval: "wald"}); err == nil {
		t.Error("unknown interval accepted")
	}
}

// TestPairSpecColons checks that a level may hold a colon: model labels
// like llama3.2:3b, with or without the factor.
func TestPairSpecColons(t *testing.T) {
	for in, want := range map[string]analysis.PairSpec{
		"model:llama3.2:3b,qwen:0.8b": {Factor: analysis.FactorModel, A: "llama3.2:3b", B: "qwen:0.8b", Column: simulator.Strict},
		"llama3.2:3b,qwen:0.8b,cover": {A: "llama3.2:3b", B: "qwen:0.8b", Column: simulator.Cover},
		"Prompt: reason,default":      {Factor: analysis.FactorPrompt, A: "reason", B: "default", Column: simulator.Strict},
	} {
		t.Run(in, func(t *testing.T) {
			if got, err := analysis.ParsePairSpec(in, simulator.Strict); err != nil || got != want {
				t.Errorf("ParsePairSpec(%q) = %+v, %v; want %+v", in, got, err, want)
			}
		})
	}
}

// TestComparePairCondition checks compare's condition pair: condition A
// of bundle A against condition B of bundle B, in every aligned arm;
// with the same bundle on both sides it is analyze's condition pair
// (the same discordant counts and sign-flip p-values); and -pair excludes
// -arm-a.
func TestComparePairCondition(t *testing.T) {
	acc := accumulate(pairedRows("m", 10, 20, 5))
	spec, err := analysis.ParsePairSpec("code_only,normalized", simulator.Strict)
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := analysis.Compare(context.Background(), acc, acc, analysis.CompareOptions{Options: analysis.Options{B: 300}, Columns: []simulator.Col{simulator.Strict}, Pair: &spec})
	if err != nil {
		t.Fatal(err)
	}
	an, err := acc.Analyze(context.Background(), analysis.Options{B: 300})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(cmp.Rows))
	}
	r, p := cmp.Rows[0], an.Pairs[0]
	if r.Condition != study.CodeOnly || r.ConditionB != study.Normalized || r.DiscordantAB != 20 || r.DiscordantBA != 5 ||
		r.DiscordantAB != p.DiscordantAB || r.FlipScenario.P != p.FlipScenario.P || r.Unpaired != 0 || cmp.Family.Size != 1 {
		t.Errorf("compare row %+v, analyze pair %+v", r, p.PairStats)
	}
	if _, err := analysis.Compare(context.Background(), acc, acc, analysis.CompareOptions{Pair: &spec, ArmA: "m"}); !errors.Is(err, analysis.ErrArmSelection) {
		t.Errorf("-pair with -arm-a: %v", err)
	}
	bad := analysis.PairSpec{Factor: analysis.FactorCondition, A: "structured", B: "prose", Column: simulator.Strict}
	if _, err := analysis.Compare(context.Background(), acc, acc, analysis.CompareOptions{Pair: &bad}); !errors.Is(err, analysis.ErrArmSelection) {
		t.Errorf("a condition pair no arm has: %v", err)
	}
}

// TestCoarseLevel: the coarse-test warning prints the level as 0.05, not
// as float64's 1 − 0.95 = 0.050000000000000044.
func TestCoarseLevel(t *testing.T) {
	spec, err := analysis.ParsePairSpec("prompt:reason,default", simulator.Strict)
	if err != nil {
		t.Fatal(err)
	}
	an, err := accumulate(promptRows()).Analyze(context.Background(), analysis.Options{B: 200, Conf: 0.95, Pairs: []analysis.PairSpec{spec}, NoPredeclared: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range an.Pairs {
		for _, w := range p.Warnings {
			if w.Kind != stats.Coarse {
				continue
			}
			n++
			if want := "2 of 10 clusters differ: the sign-flip test cannot reach p < 0.05 (smallest attainable p = 0.5)"; w.Message != want {
				t.Errorf("coarse warning %q, want %q", w.Message, want)
			}
		}
	}
	if n == 0 {
		t.Fatal("no coarse warning")
	}
	// Any caller's level reads as the decimal it stands for.
	for _, c := range []struct {
		conf float64
		want string
	}{{0.95, "0.05"}, {0.99, "0.01"}, {0.9875, "0.0125"}, {0.999, "0.001"}} {
		t.Run(c.want, func(t *testing.T) {
			if got := stats.FormatLevel(1 - c.conf); got != c.want {
				t.Errorf("FormatLevel(1 − %v) = %q, want %q", c.conf, got, c.want)
			}
		})
	}
}

// TestUntestableLeftOut: a pair of the family whose scenarios never
// differ (here code_only − normalized within each prompt: the two
// conditions decide alike) has sign-flip p = 1 by construction and no
// test; it is left out of the Holm/BH family (not in it, adjusted p null,
// marked untestable, counted in FamilyInfo.Untestable) and named under
// the table, so the two prompt pairs (p = 1/32 each) form a family of 2:
// Holm 2/32 and BH 1/32, not the 4/32 and 2/32 of a family of 4.
func TestUntestableLeftOut(t *testing.T) {
	var specs []analysis.PairSpec
	for _, s := range []string{"prompt:reason,default", "condition:code_only,normalized"} {
		t.Run(s, func(t *testing.T) {
			spec, err := analysis.ParsePairSpec(s, simulator.Strict)
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, spec)
		})
	}
	an, err := accumulate(promptRows()).Analyze(context.Background(), analysis.Options{B: 200, Pairs: specs, NoPredeclared: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(an.Pairs) != 4 {
		t.Fatalf("%d pairs, want 4", len(an.Pairs))
	}
	for _, p := range an.Pairs {
		switch p.Factor {
		case analysis.FactorPrompt:
			if !p.InFamily || p.Untestable || float64(p.Holm) != 2.0/32 || float64(p.BH) != 1.0/32 {
				t.Errorf("%s: in family %v, untestable %v, Holm %v, BH %v; want in, 2/32, 1/32", p.Name(), p.InFamily, p.Untestable, p.Holm, p.BH)
			}
		case analysis.FactorCondition:
			if p.FlipScenario.Informative != 0 || float64(p.FlipScenario.P) != 1 || p.InFamily || !p.Untestable ||
				!math.IsNaN(float64(p.Holm)) || !math.IsNaN(float64(p.BH)) {
				t.Errorf("%s: flip %+v, in family %v, untestable %v, Holm %v, BH %v; want out, untestable, null", p.Name(), p.FlipScenario, p.InFamily, p.Untestable, p.Holm, p.BH)
			}
		}
	}
	if an.Family.Size != 2 || an.Family.Untestable != 2 {
		t.Errorf("family %+v, want size 2 with 2 untestable", an.Family)
	}
	var b strings.Builder
	if err := analysis.WritePairs(&b, an.Pairs, an.Family, map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"(2 comparisons with a p-value; 2 untestable left out, listed below the table)",
		"Left out of the family as untestable (no scenario differs, so the scenario-level sign-flip test has nothing to test: p = 1 by construction; Holm and BH show —): " +
			"condition m/reason code_only − normalized on Strict; condition m/default code_only − normalized on Strict.",
	} {
		t.Run(want, func(t *testing.T) {
			if !strings.Contains(out, want) {
				t.Errorf("WritePairs lacks %q:\n%s", want, b.String())
			}
		})
	}
}
