package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/simulator"
)

// cmdCompare defines compare's flags on fs and returns the action that
// prints the paired differences between two bundles on the same corpus.
func cmdCompare(fs *flag.FlagSet) action {
	asJSON := fs.Bool("json", false, `print {"a":…,"b":…,"bootstrap":…,"arms":[…],"pairs":[…]} as JSON`)
	sf := addStatFlags(fs, false)
	column := fs.String("column", "", "compare only the columns `C,…`, comma-separated: "+analysis.ColumnList()+" (default all)")
	armA := fs.String("arm-a", "", "arm of RUN_A to compare, `MODEL[/PROMPT]` (default: aligned automatically)")
	armB := fs.String("arm-b", "", "arm of RUN_B to compare, `MODEL[/PROMPT]` (default: aligned automatically)")
	pair := fs.String("pair", "", "set level A of a factor in RUN_A against level B in RUN_B, `FACTOR:A,B`: condition: (A's condition A against B's condition B in every aligned arm), prompt: or model: (arms with A in RUN_A against arms with B in RUN_B, the other factor the same); without FACTOR:, two conditions, else prompts, else models; excludes -arm-a and -arm-b")
	partial := addPartialFlag(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 2 {
			return usageError("compare takes two bundle directories, RUN_A and RUN_B")
		}
		opt, err := sf.options("compare")
		if err != nil {
			return err
		}
		copt := analysis.CompareOptions{Options: opt, ArmA: *armA, ArmB: *armB}
		if *pair != "" {
			if *armA != "" || *armB != "" {
				return usageError("compare: flag -pair excludes -arm-a and -arm-b")
			}
			spec, err := analysis.ParsePairSpec(*pair, simulator.Strict)
			if err != nil {
				return usageError("compare: flag -pair: %v", err)
			}
			copt.Pair = &spec
		}
		if *column != "" {
			for _, c := range strings.Split(*column, ",") {
				col, err := analysis.ParseColumn(c)
				if err != nil {
					return usageError("compare: flag -column: %v", err)
				}
				copt.Columns = append(copt.Columns, col)
			}
		}
		dirA, dirB := args[0], args[1]
		var infos [2]*analysis.BundleInfo
		for i, run := range []string{"RUN_A", "RUN_B"} {
			if infos[i], err = analysis.ReadBundleInfo(args[i]); err != nil {
				return fmt.Errorf("compare: %s: %w", run, err)
			}
		}
		for _, info := range infos {
			if !*partial && info.Unfinished() {
				return refusePartial("compare", info, info.Partial(-1))
			}
		}
		infoA, infoB := infos[0], infos[1]
		if err := analysis.SameCorpus(infoA, infoB); err != nil {
			return fmt.Errorf("compare refuses %s and %s: %w", dirA, dirB, err)
		}
		var lds [2]*analysis.Loaded
		for i, info := range infos {
			if lds[i], err = loadBundle(ctx, "compare", args[i], info, stderr); err != nil {
				return err
			}
		}
		var warnings, proposed []string // partial bundles; runs on unconfirmed coding
		for i, info := range infos {
			w, err := checkPartial("compare", info, lds[i].Acc.Decisions(), *partial)
			if err != nil {
				return err
			}
			if w != "" {
				warnings = append(warnings, w)
			}
			if w := info.ProposedWarning(); w != "" {
				proposed = append(proposed, info.Dir+": "+w)
			}
		}
		cmp, err := analysis.Compare(ctx, lds[0].Acc, lds[1].Acc, copt)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			if errors.Is(err, analysis.ErrArmSelection) {
				if *pair != "" {
					return usageError("compare: flag -pair: %v", err)
				}
				return usageError("compare: flag -arm-a/-arm-b: %v", err)
			}
			return fmt.Errorf("compare refuses %s and %s: %w", dirA, dirB, err)
		}
		notes := analysis.CompareNotes(infoA, infoB, cmp)
		if *asJSON {
			type side struct {
				Dir   string `json:"dir"`
				RunID string `json:"run_id"`
				Study string `json:"study"`
			}
			err = writeJSON(stdout, struct {
				Warnings []string `json:"warnings,omitempty"`
				A        side     `json:"a"`
				B        side     `json:"b"`
				Notes    []string `json:"notes,omitempty"`
				*analysis.Comparison
			}{append(warnings, proposed...), side{dirA, infoA.RunID, infoA.Manifest.Name}, side{dirB, infoB.RunID, infoB.Manifest.Name}, notes, cmp})
		} else {
			for _, w := range warnings {
				fmt.Fprintln(stdout, warningLine(w, "the numbers below"))
			}
			for _, w := range proposed {
				fmt.Fprintln(stdout, w)
			}
			fmt.Fprintf(stdout, "A: %s (run %s)\nB: %s (run %s)\n", dirA, infoA.RunID, dirB, infoB.RunID)
			fmt.Fprintf(stdout, "Same corpus (%d files, sha256 match).", len(infoA.CorpusFiles))
			for _, ap := range cmp.Arms {
				fmt.Fprintf(stdout, " A %s is compared with B %s.", ap.A, ap.B)
			}
			fmt.Fprintln(stdout)
			for _, n := range notes {
				fmt.Fprintln(stdout, "Note:", n+".")
			}
			fmt.Fprintln(stdout)
			err = analysis.WriteCompare(stdout, cmp)
		}
		if n := lds[0].Problems + lds[1].Problems; err == nil && n > 0 {
			err = fmt.Errorf("compare: %d problems in the calls.jsonl files", n)
		}
		return err
	}
}
