package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/mcpstress/stress/internal/synth"
)

// cmdSynth writes a synthetic study (corpus, prompt, manifest) of any size.
func cmdSynth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("synth", stderr)
	opt := synth.Options{}
	fs.IntVar(&opt.Scenarios, "scenarios", 0, "scenario records to generate (required)")
	fs.IntVar(&opt.Servers, "servers", 0, "server pseudonyms to spread them over (required, at most -scenarios)")
	fs.IntVar(&opt.Replicates, "replicates", 1, "replicates in the manifest")
	seed := fs.Uint64("seed", 1, "picks each record's template and is the study seed")
	out := fs.String("out", "", "directory to create (required)")
	if err := parse(fs, args); err != nil {
		return err
	}
	opt.Seed = *seed
	if fs.NArg() != 0 {
		return usageError("synth takes no arguments")
	}
	if *out == "" {
		return usageError("synth: flag -out is required")
	}
	if opt.Replicates < 1 {
		return usageError("synth: flag -replicates: want 1 to 100000, got %d", opt.Replicates)
	}
	if err := opt.Check(); err != nil {
		return usageError("synth: flag %v", err)
	}
	if err := synth.Write(*out, opt); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d scenarios from %d servers; run it with: stress run %s\n", *out, opt.Scenarios, opt.Servers, filepath.Join(*out, synth.ManifestFile))
	return nil
}
