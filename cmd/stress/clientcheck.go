package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/mcpstress/stress/capture/checkmatrix"
)

// cmdClientCheck defines clientcheck's flags on fs and returns the action
// that prints how the Go and TypeScript clients treat tool results
// against an outputSchema.
func cmdClientCheck(fs *flag.FlagSet) action {
	asJSON := fs.Bool("json", false, "print the cells as JSON")
	protocol := fs.String("protocol", "", "pin the protocol `VERSION` the Go SDK client offers (default: the SDK's latest)")
	tsDir := fs.String("ts-clients", "", "the TypeScript clients' `DIR` (default: scripts/ts-clients in the current directory or its nearest parent that has one)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		o := checkmatrix.Options{ProtocolVersion: *protocol, TSClients: *tsDir}
		if o.TSClients == "" {
			o.TSClients = checkmatrix.FindTSClients(".")
		}
		m, err := checkmatrix.Run(ctx, o)
		if err != nil {
			return err
		}
		if m.TSSkipped != "" && o.TSClients == "" {
			m.TSSkipped = "scripts/ts-clients not found in the current directory or its parents (run from the repository, or pass -ts-clients DIR)"
		}
		if m.TSSkipped != "" {
			fmt.Fprintf(stderr, "clientcheck: TypeScript clients not run: %s\n", m.TSSkipped)
		}
		if *asJSON {
			return writeJSON(stdout, m)
		}
		return checkmatrix.WriteTable(stdout, m)
	}
}
