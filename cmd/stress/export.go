package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/export/inspect"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/study"
)

// exportFormats are the formats stress export writes.
var exportFormats = []string{"inspect"}

// cmdExport defines export's flags on fs and returns the action that
// writes a bundle as Inspect eval logs.
func cmdExport(fs *flag.FlagSet) action {
	format := fs.String("format", "inspect", "the format to write: `inspect` (Inspect eval logs, one per model, prompt and condition, with listing.json for Inspect's viewer)")
	out := fs.String("out", "", "write the logs to `DIR`, a new directory (default: BUNDLE/inspect; an earlier export there is replaced as a whole)")
	eval := fs.Bool("eval", false, "write each log in Inspect's .eval form (a zip archive, each sample a member read on demand) instead of .json")
	partial := addPartialFlag(fs)
	quiet := fs.Bool("quiet", false, "print nothing but errors")
	return withProfiles(fs, func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 1 {
			return usageError("export: want one bundle directory, got %d arguments", len(args))
		}
		if !slices.Contains(exportFormats, *format) {
			return usageError("export: flag -format: want inspect, got %q", *format)
		}
		dir := args[0]
		info, err := analysis.ReadBundleInfo(dir)
		if err != nil {
			return err
		}
		if !*partial && info.Unfinished() {
			return refusePartial("export", info, info.Partial(-1))
		}
		if err := checkParquet("export", dir, info); err != nil {
			return err
		}
		dest := *out
		if dest == "" {
			dest = filepath.Join(dir, "inspect")
		}
		// The corpus loads while the bundle is read.
		scen := sync.OnceValues(func() (map[string]*study.Scenario, string) { return exportScenarios(info) })
		go scen()
		var warning string
		opt := inspect.Options{Info: info, Version: results.BinaryInfo().Version, Eval: *eval,
			Scenarios: func() map[string]*study.Scenario { m, _ := scen(); return m },
			CheckPartial: func(read int) (string, error) {
				w, err := checkPartial("export", info, read, *partial)
				warning = w
				return w, err
			}}
		ix, err := inspect.Export(ctx, dir, dest, opt, stderr)
		if err != nil {
			return err
		}
		if *quiet {
			return nil
		}
		if _, why := scen(); why != "" {
			fmt.Fprintf(stderr, "export: %s; the samples have no cause or surface, and stored replays no observation\n", why)
		}
		if warning != "" {
			fmt.Fprintln(stdout, warningLine(warning, "the logs"))
		}
		samples := 0
		for _, l := range ix.Logs {
			samples += l.Samples
		}
		fmt.Fprintf(stdout, "wrote %s: %d Inspect logs, %d samples (%s maps each file to its model, prompt and condition)\n",
			dest, len(ix.Logs), samples, inspect.IndexFile)
		return nil
	})
}

// exportScenarios returns the corpus records of the bundle by id, read
// through the manifest it records when the corpus files are still the
// ones the run read (same sha256); otherwise nil and why not. The run
// checked those records: they are read brief (manifests.BriefRecords),
// with only the fields a sample shows.
func exportScenarios(info *analysis.BundleInfo) (map[string]*study.Scenario, string) {
	m, err := loadRecorded(info.Record, manifests.BriefRecords())
	if err != nil {
		return nil, fmt.Sprintf("the study's manifest could not be read (%v)", err)
	}
	var got []string
	for _, f := range m.Corpus.Files {
		got = append(got, f.SHA256)
	}
	slices.Sort(got)
	if !slices.Equal(got, info.CorpusHashes()) {
		return nil, "the corpus files are not the ones the run read (their sha256 differ)"
	}
	out := make(map[string]*study.Scenario, len(m.Corpus.Scenarios))
	for i := range m.Corpus.Scenarios {
		s := &m.Corpus.Scenarios[i]
		out[s.ID] = s
	}
	return out, ""
}
