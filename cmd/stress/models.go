package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mcpstress/stress/models/ollama"
)

// cmdModels lists an Ollama server's models with their full digests, so a
// user can pin them in a manifest.
func cmdModels(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("models", stderr)
	host := fs.String("host", "", "Ollama server (default $OLLAMA_HOST, else "+ollama.DefaultHost+")")
	asJSON := fs.Bool("json", false, "print as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError("models takes no arguments")
	}
	list, err := ollama.List(ctx, *host)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tdigest\tfamily\tparameters\tquantization\tserver")
	for _, in := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", in.Name, in.Digest, in.Family, in.ParameterSize, in.Quantization, in.ServerVersion)
	}
	return tw.Flush()
}
