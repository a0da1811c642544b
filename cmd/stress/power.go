package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/analysis/report"
	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/simulator"
)

// powerLong is what stress help power prints after the forms.
const powerLong = `Estimates by simulation the power of each contrast to detect a difference
-diff (a proportion: 0.1 is 10 percentage points) with the scenario-level
sign-flip test, over a grid of scenarios × replicates × servers. The model of
a contrast is arm B's rate, the intra-scenario correlation of an outcome and
the correlation of a scenario's difficulty under the two arms: from a pilot
bundle (-pilot DIR: every predeclared and -pair contrast in each arm) or
assumed (-rate, -icc, -arm-corr). -icc and -arm-corr also override a pilot's
estimates. -out DIR writes power.md and the figure power.png/.svg.
`

// cmdPower defines power's flags on fs and returns the action that
// answers a design question.
func cmdPower(fs *flag.FlagSet) action {
	asJSON := fs.Bool("json", false, `print {"diff":…,"contrasts":[…]} as JSON`)
	pilot := fs.String("pilot", "", "pilot bundle `DIR` whose contrasts' rates and correlations are estimated")
	diff := fs.Float64("diff", 0, "target difference `D` = A − B to detect, a proportion in (−1, 1) (0.1 = 10 points; required)")
	rate := fs.Float64("rate", 0, "assumed rate `R` of arm B, in (0, 1) (without -pilot)")
	icc := fs.Float64("icc", 0, "intra-scenario correlation `ICC` of an outcome, in (0, 1) (required without -pilot; overrides the pilot's)")
	armCorr := fs.Float64("arm-corr", -1, "correlation `r` of a scenario's difficulty under the two arms, in [0, 1] (default 1 assumed: the same effect on every scenario; overrides the pilot's)")
	scen := fs.String("scenarios", joinInts(analysis.DefaultPowerScenarios), "scenarios per study, a grid `N,…`")
	reps := fs.String("replicates", joinInts(analysis.DefaultPowerReplicates), "replicates per scenario, a grid `N,…`")
	servers := fs.String("servers", joinInts(analysis.DefaultPowerServers), "servers the scenarios are spread over, a grid `N,…`")
	studies := fs.Int("studies", analysis.DefaultPowerStudies, "simulated studies per design `N`")
	level := fs.Float64("level", 0.05, "two-sided significance level `A`")
	share := fs.Float64("server-share", 0, "share `S` of a scenario's latent difficulty that its server holds, in [0, 1)")
	seed := fs.Uint64("seed", analysis.DefaultSeed, "simulation seed `S` (recorded in the output)")
	pairs := &repeatedFlag{}
	fs.Var(pairs, "pair", "with -pilot: also estimate contrast `FACTOR:A,B[,COL]` (as analyze -pair); repeatable")
	out := fs.String("out", "", "also write power.md and the figure power.png and power.svg into `DIR`")
	partial := addPartialFlag(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 0 {
			return usageError("power takes no arguments (the pilot bundle is -pilot DIR)")
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		opt := analysis.PowerOptions{Diff: *diff, Studies: *studies, Level: *level, Seed: *seed, ServerShare: *share}
		if !set["diff"] {
			return usageError("power: flag -diff is required (the difference to detect, e.g. 0.1)")
		}
		if *out != "" {
			if err := outdir.Check(*out, powerOwned); err != nil {
				return usageError("power: flag -out: %v", err)
			}
		}
		var err error
		for _, g := range []struct {
			name string
			s    string
			dst  *[]int
		}{{"scenarios", *scen, &opt.Scenarios}, {"replicates", *reps, &opt.Replicates}, {"servers", *servers, &opt.Servers}} {
			if *g.dst, err = parseInts(g.s); err != nil {
				return usageError("power: flag -%s: %v", g.name, err)
			}
		}
		if *seed == 0 {
			return usageError("power: flag -seed: want a seed ≥ 1")
		}
		if *studies < 1 {
			return usageError("power: flag -studies: want at least 1 simulated study, got %d", *studies)
		}
		if !(*level > 0 && *level < 1) {
			return usageError("power: flag -level: want a level in (0, 1), got %v", *level)
		}
		var contrasts []analysis.PowerContrast
		if *pilot == "" {
			if set["pair"] {
				return usageError("power: flag -pair needs -pilot")
			}
			if !set["rate"] || !set["icc"] {
				return usageError("power: without -pilot, give the assumed -rate and -icc")
			}
			r := 1.0
			if set["arm-corr"] {
				r = *armCorr
			}
			contrasts = []analysis.PowerContrast{{Name: "assumed", Base: *rate, ICC: *icc, ArmCorr: r, Source: "assumed"}}
		} else {
			if set["rate"] {
				return usageError("power: flag -rate is for an assumed design; the pilot gives the rates")
			}
			aopt := analysis.Options{B: 1, Seed: *seed}
			for _, p := range *pairs {
				spec, err := analysis.ParsePairSpec(p, simulator.Strict)
				if err != nil {
					return usageError("power: flag -pair: %v", err)
				}
				aopt.Pairs = append(aopt.Pairs, spec)
			}
			// Note: B = 1: the pilot's intervals are not shown; only the
			// pairs' counts are used.
			b, err := analyzeBundle(ctx, "power", *pilot, *partial, aopt, stderr)
			if err != nil {
				return err
			}
			var skipped []string
			contrasts, skipped = analysis.Feasible(analysis.PilotContrasts(b.an), *diff)
			for _, s := range skipped {
				fmt.Fprintf(stderr, "power: skipped %s: the difference %v leaves the rates\n", s, *diff)
			}
			if len(contrasts) == 0 {
				return usageError("power: flag -pilot: %s has no contrast with matched pairs whose rate can move by %v (give -pair)", *pilot, *diff)
			}
			for i := range contrasts {
				c := &contrasts[i]
				if set["icc"] {
					c.ICC = *icc
				}
				if set["arm-corr"] {
					c.ArmCorr = *armCorr
				}
				// An overridden estimate was not used, clamped or not.
				c.Clamped = slices.DeleteFunc(c.Clamped, func(k analysis.PowerClamp) bool {
					return k.Field == "icc" && set["icc"] || k.Field == "arm_corr" && set["arm-corr"]
				})
			}
		}
		pw, err := analysis.EstimatePower(ctx, contrasts, opt)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			return usageError("power: %v", err)
		}
		if *asJSON {
			err = writeJSON(stdout, pw)
		} else {
			err = analysis.WritePower(stdout, pw)
		}
		if err != nil || *out == "" {
			return err
		}
		written, err := outdir.Write(*out, powerOwned, func(dir string) ([]string, error) { return report.WritePower(dir, pw) })
		if err != nil {
			return fmt.Errorf("power: writing %s: %w", *out, err)
		}
		for _, f := range written {
			fmt.Fprintln(stderr, "wrote", f)
		}
		return nil
	}
}

// powerOwned are the entries power -out writes: an earlier output may be
// replaced, nothing else.
var powerOwned = outdir.Names(report.PowerFile, report.PowerFigureName+".png", report.PowerFigureName+".svg")

// parseInts parses "21,42,84".
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a list of integers", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(v []int) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ",")
}
