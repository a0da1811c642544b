package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/runner"
)

// cmdMerge defines merge's flags on fs and returns the action that
// combines finished shard bundles into one bundle.
func cmdMerge(fs *flag.FlagSet) action {
	out := fs.String("out", "", "bundle directory `DIR` to create (required)")
	quiet := fs.Bool("quiet", false, "print only the counts table")
	return withProfiles(fs, func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) == 0 {
			return usageError("merge takes the shard bundle directories (stress run -shard i/n, one per shard)")
		}
		opt := runner.MergeOptions{Log: stderr}
		if *quiet {
			opt.Log = io.Discard
		}
		rec, sum, err := runner.Merge(ctx, *out, args, opt)
		if err != nil {
			return err
		}
		if w := rec.ProposedWarning(); w != "" {
			fmt.Fprintln(stdout, w)
		}
		return analysis.WriteTable(stdout, sum.Cells)
	})
}
