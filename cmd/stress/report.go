package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/analysis/report"
	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/study"
)

// cmdReport defines report's flags on fs and returns the action that
// writes a bundle's report (Markdown, HTML and figures).
func cmdReport(fs *flag.FlagSet) action {
	out := fs.String("out", "", "output directory `OUT` (default DIR/report)")
	sf := addStatFlags(fs, true)
	against := fs.String("against", "", "add a published table next to the counts, with a consistency test per cell: `paper` (the paper's Table II)")
	matchLabel := fs.Bool("match-label", false, "with -against: also take a run model to be a paper model by its label (default: by pinned digest or backend model id only)")
	powerDiff := fs.Float64("power-diff", 0, "add a power section: the power of each paired comparison to detect a difference `D` (a proportion, 0.1 = 10 points), the bundle as the pilot, over stress power's default grid")
	manifest := fs.String("manifest", "", "manifest `M` whose corpus the profile table shows (default: the one recorded in the bundle, if it can be found)")
	partial := addPartialFlag(fs)
	return withProfiles(fs, func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		dir, opt, err := bundleArgs("report", args, sf, *against, *matchLabel)
		if err != nil {
			return err
		}
		if *out == "" {
			*out = filepath.Join(dir, "report")
		}
		// The output is checked before the work, written into a temporary
		// directory and renamed into place: an earlier report is replaced
		// whole, a directory holding anything else is refused.
		if err := outdir.Check(*out, reportOwned); err != nil {
			return usageError("report: flag -out: %v", err)
		}
		b, err := analyzeBundle(ctx, "report", dir, *partial, opt, stderr)
		if err != nil {
			return err
		}
		info, warning := b.info, b.warning
		in := &report.Input{Analysis: b.an, Info: info, Partial: warning}
		if *powerDiff != 0 {
			cs, skipped := analysis.Feasible(analysis.PilotContrasts(b.an), *powerDiff)
			for _, s := range skipped {
				fmt.Fprintf(stderr, "report: flag -power-diff: skipped %s: the difference leaves the rates\n", s)
			}
			if len(cs) == 0 {
				return usageError("report: flag -power-diff: no paired comparison with matched pairs whose rate can move by %v", *powerDiff)
			}
			if in.Power, err = analysis.EstimatePower(ctx, cs, analysis.PowerOptions{Diff: *powerDiff, Seed: opt.Seed}); err != nil {
				if ctx.Err() != nil {
					return err
				}
				return usageError("report: flag -power-diff: %v", err)
			}
		}
		if w := info.ProposedWarning(); w != "" {
			in.Warnings = append(in.Warnings, w)
			fmt.Fprintln(stdout, w)
		}
		scen, note, err := bundleCorpus(info, *manifest)
		if err != nil {
			return err
		}
		if scen != nil {
			in.Profile = report.ProfileOf(scen)
		} else {
			fmt.Fprintln(stderr, "warning:", note)
			in.ProfileNote = "No profile table: " + note
		}
		if *against != "" {
			if in.Paper, in.Against, err = analysis.AgainstPaper(b.Acc.Cells(), info, *matchLabel); err != nil {
				return err
			}
		}
		if warning != "" {
			fmt.Fprintln(stdout, warningLine(warning, "the report and its figures"))
		}
		written, err := outdir.Write(*out, reportOwned, func(dir string) ([]string, error) { return report.Write(dir, in) })
		if err != nil {
			return fmt.Errorf("report: writing %s: %w", *out, err)
		}
		for _, f := range written {
			fmt.Fprintln(stdout, "wrote", f)
		}
		if b.Problems > 0 {
			err = fmt.Errorf("%s: %d problems in calls.jsonl", dir, b.Problems)
		}
		return err
	})
}

// reportOwned are the entries a report directory holds: an earlier
// report may be replaced, nothing else.
var reportOwned = outdir.Names(report.MarkdownFile, report.HTMLFile, report.FigureDir)

// bundleCorpus finds the scenarios of the bundle's corpus for the profile
// table: from the -manifest flag (an error if its corpus differs from the
// bundle's), else from the manifest the bundle records (built-in, or a file
// that still exists). It returns a note instead when they cannot be found
// or their hashes differ.
func bundleCorpus(info *analysis.BundleInfo, flagManifest string) ([]study.Scenario, string, error) {
	same := func(m *manifests.Resolved) bool {
		var h []string
		for _, f := range m.Corpus.Files {
			h = append(h, f.SHA256)
		}
		slices.Sort(h)
		return slices.Equal(h, info.CorpusHashes())
	}
	if flagManifest != "" {
		m, err := manifests.Load(flagManifest)
		if err != nil {
			return nil, "", fmt.Errorf("report: flag -manifest: %w", err)
		}
		if !same(m) {
			return nil, "", usageError("report: flag -manifest: the corpus of %s is not the bundle's (corpus hashes differ from %s/manifest.json)", flagManifest, info.Dir)
		}
		return m.Corpus.Scenarios, "", nil
	}
	var m *manifests.Resolved
	var err error
	switch {
	case strings.HasPrefix(info.Source, "builtin:"):
		m, err = manifests.LoadBuiltin(strings.TrimPrefix(info.Source, "builtin:"))
	case info.Source != "":
		if _, serr := os.Stat(info.Source); serr != nil {
			return nil, fmt.Sprintf("the bundle's manifest %s is not at hand; pass -manifest to show the profile table.", info.Source), nil
		}
		m, err = manifests.Load(info.Source)
	default:
		return nil, "the bundle records no manifest source; pass -manifest to show the profile table.", nil
	}
	if err != nil {
		return nil, fmt.Sprintf("the bundle's manifest %s could not be loaded (%v); pass -manifest.", info.Source, err), nil
	}
	if !same(m) {
		return nil, fmt.Sprintf("the corpus of %s has changed since the run (hashes differ); pass -manifest with the bundle's corpus.", info.Source), nil
	}
	return m.Corpus.Scenarios, "", nil
}
