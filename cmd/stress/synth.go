package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/synth"
)

// cmdSynth defines synth's flags on fs and returns the action that writes
// a synthetic study (corpus, prompt, manifest) of any size.
func cmdSynth(fs *flag.FlagSet) action {
	opt := synth.Options{}
	fs.IntVar(&opt.Scenarios, "scenarios", 0, "`N` scenario records to generate (required)")
	fs.IntVar(&opt.Servers, "servers", 0, "`M` server pseudonyms to spread them over (required, at most -scenarios)")
	fs.IntVar(&opt.Replicates, "replicates", 1, "`R` replicates in the manifest")
	seed := fs.Uint64("seed", 1, "seed `S`: picks each record's template and is the study seed")
	out := fs.String("out", "", "directory `DIR` to create (required)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		opt.Seed = *seed
		if err := outdir.Check(*out, nil); err != nil {
			return usageError("synth: flag -out: %v", err)
		}
		if opt.Replicates < 1 {
			return usageError("synth: flag -replicates: want 1 to 100000, got %d", opt.Replicates)
		}
		if err := opt.Check(); err != nil {
			return usageError("synth: flag %v", err)
		}
		if err := synth.Write(ctx, *out, opt); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s: %d scenarios from %d servers; run it with: stress run %s\n", *out, opt.Scenarios, opt.Servers, filepath.Join(*out, synth.ManifestFile))
		return nil
	}
}
