package main

import (
	"context"
	"flag"
	"io"

	"github.com/mcpstress/stress/results"
)

// cmdUpgrade defines upgrade's flags on fs and returns the action that
// converts a bundle of an earlier format into a new bundle of this
// version's.
func cmdUpgrade(fs *flag.FlagSet) action {
	out := fs.String("out", "", "bundle directory `NEW_DIR` to create (required)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 1 {
			return usageError("upgrade takes one bundle directory, got %d arguments", len(args))
		}
		_, err := results.Upgrade(ctx, args[0], *out, stderr)
		return err
	}
}
