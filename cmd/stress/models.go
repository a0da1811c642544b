package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mcpstress/stress/models/ollama"
)

// cmdModels defines models' flags on fs and returns the action that lists
// an Ollama server's models with their full digests, so a user can pin
// them in a manifest.
func cmdModels(fs *flag.FlagSet) action {
	host := fs.String("host", "", "Ollama server `H` (default $OLLAMA_HOST, else "+ollama.DefaultHost+")")
	asJSON := fs.Bool("json", false, "print as JSON")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		list, err := ollama.List(ctx, *host)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			// Note: on stderr, so that -json prints an empty array and
			// the table nothing.
			where := *host
			if u, err := ollama.ResolveHost(*host); err == nil {
				where = u.Redacted()
			}
			fmt.Fprintf(stderr, "models: no models on %s; pull one with: %s (NAME as a manifest's models[i].model gives it)\n", where, ollama.PullCommand(*host, "NAME"))
			if !*asJSON {
				return nil
			}
		}
		if *asJSON {
			return writeJSON(stdout, list)
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "name\tdigest\tfamily\tparameters\tquantization\tserver")
		for _, in := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", in.Name, in.Digest, in.Family, in.ParameterSize, in.Quantization, in.ServerVersion)
		}
		return tw.Flush()
	}
}
