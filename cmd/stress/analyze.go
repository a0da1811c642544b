package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/results"
)

// cmdAnalyze defines analyze's flags on fs and returns the action that
// recomputes a bundle's counts from calls.jsonl and prints them with their
// intervals and paired comparisons.
func cmdAnalyze(fs *flag.FlagSet) action {
	asJSON := fs.Bool("json", false, `print {"bootstrap":…,"cells":[…],"pairs":[…]} as JSON`)
	sf := addStatFlags(fs, true)
	against := fs.String("against", "", "print a published table next to the counts, with a consistency test per cell: `paper` (the paper's Table II)")
	matchLabel := fs.Bool("match-label", false, "with -against: also take a run model to be a paper model by its label (default: by pinned digest or backend model id only)")
	partial := addPartialFlag(fs)
	parser := fs.String("parser", "strict", "`lenient`: also re-parse every stored response with the lenient parser and print Invalid and Strict under both parsers, paired (the counts stay strict; strict prints them alone)")
	return withProfiles(fs, func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		dir, opt, err := bundleArgs("analyze", args, sf, *against, *matchLabel)
		if err != nil {
			return err
		}
		if *parser != "strict" && *parser != analysis.ParserLenient {
			return usageError("analyze: flag -parser: want strict or lenient, got %q", *parser)
		}
		b, err := analyzeBundle(ctx, "analyze", dir, *partial, opt, stderr)
		if err != nil {
			return err
		}
		info, cells, an, warning := b.info, b.Acc.Cells(), b.an, b.warning
		var table *analysis.PaperTable
		var pc *analysis.PaperComparison
		if *against != "" {
			if table, pc, err = analysis.AgainstPaper(cells, info, *matchLabel); err != nil {
				return err
			}
		}
		var sens *analysis.ParserSensitivity
		if *parser == analysis.ParserLenient {
			if sens, err = parserSensitivity(dir, info.ReplayCap); err != nil {
				return err
			}
		}
		// Transport events and error decisions are reported apart from the
		// counts.
		ts := b.Transport
		var warnings []string // the partial bundle's first, then data quality, then proposed coding
		for _, w := range []string{warning, b.Acc.DuplicatesWarning(), info.ProposedWarning()} {
			if w != "" {
				warnings = append(warnings, w)
			}
		}
		if *asJSON {
			if ts.Empty() {
				ts = nil
			}
			err = writeJSONWith(stdout, sens, func(w io.Writer) error { return analysis.WriteAnalysisJSON(w, an, pc, ts, warnings) })
		} else {
			if warning != "" {
				warnings[0] = warningLine(warning, "the numbers below")
			}
			for _, w := range warnings {
				fmt.Fprintln(stdout, w)
			}
			err = analysis.WriteTable(stdout, cells)
			if err == nil {
				fmt.Fprintln(stdout)
				err = analysis.WriteCoverage(stdout, an)
			}
			if err == nil {
				err = analysis.WriteIntervals(stdout, an)
			}
			if err == nil && len(analysis.PassKShown(an.Cells)) > 0 {
				fmt.Fprintln(stdout)
				err = analysis.WritePassK(stdout, an)
			}
			if err == nil && results.HasLab(cells) {
				fmt.Fprintln(stdout)
				err = analysis.WriteLabelAction(stdout, cells)
			}
			if err == nil && pc != nil {
				fmt.Fprintln(stdout)
				err = analysis.WriteAgainst(stdout, table, pc)
			}
			if err == nil {
				err = analysis.WriteTransport(stdout, ts)
			}
			if err == nil && sens != nil {
				fmt.Fprintln(stdout)
				err = analysis.WriteSensitivity(stdout, sens)
			}
		}
		if err == nil && b.Problems > 0 {
			err = fmt.Errorf("%s: %d problems in %s", dir, b.Problems, results.CallsFile)
		}
		return err
	})
}
