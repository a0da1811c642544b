package main

import (
	"context"
	"io"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/runner"
)

// cmdMerge combines finished shard bundles into one bundle.
func cmdMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("merge", stderr)
	out := fs.String("out", "", "bundle directory to create (required)")
	quiet := fs.Bool("quiet", false, "print only the counts table")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usageError("merge: flag -out is required")
	}
	if fs.NArg() == 0 {
		return usageError("merge takes the shard bundle directories (stress run -shard i/n, one per shard)")
	}
	opt := runner.MergeOptions{Log: stderr}
	if *quiet {
		opt.Log = io.Discard
	}
	_, sum, err := runner.Merge(*out, fs.Args(), opt)
	if err != nil {
		return err
	}
	return analysis.WriteTable(stdout, sum.Cells)
}
