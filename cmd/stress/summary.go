package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"

	"github.com/mcpstress/stress/study"
)

// cmdSummary defines summary's flags on fs and returns the action that
// prints a corpus' counts in the paper's form.
func cmdSummary(fs *flag.FlagSet) action {
	asJSON := fs.Bool("json", false, "print the counts as JSON")
	manifest := fs.String("manifest", "", "manifest `M` whose corpus to count (default: the built-in one)")
	corpus := fs.String("corpus", "", "corpus file or directory `PATH` to count instead, e.g. a capture's DIR/corpus")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if *manifest != "" && *corpus != "" {
			return usageError("summary: give -manifest or -corpus, not both")
		}
		var scenarios []study.Scenario
		if *corpus != "" {
			abs, err := filepath.Abs(*corpus)
			if err != nil {
				return err
			}
			c, err := study.LoadCorpusAs(os.DirFS(filepath.Dir(abs)), filepath.Base(abs), *corpus)
			if err != nil {
				return err
			}
			scenarios = c.Scenarios
		} else {
			m, err := loadManifest(*manifest)
			if err != nil {
				return err
			}
			scenarios = m.Corpus.Scenarios
		}
		counts := study.CountCorpus(scenarios)
		if *asJSON {
			return writeJSON(stdout, counts)
		}
		return counts.WriteText(stdout)
	}
}
