package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/mcpstress/stress/capture/checkmatrix"
)

func cmdClientCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("clientcheck", stderr)
	asJSON := fs.Bool("json", false, "print the cells as JSON")
	protocol := fs.String("protocol", "", "pin the protocol `VERSION` the client offers (default: the SDK's latest)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError("clientcheck takes no arguments")
	}
	m, err := checkmatrix.Run(ctx, *protocol)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	}
	return checkmatrix.WriteTable(stdout, m)
}
