package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mcpstress/stress/results"
)

// cmdVersion defines version's flags on fs and returns the action that
// prints what identifies this build, as bundles record it
// (results.BinaryInfo).
func cmdVersion(fs *flag.FlagSet) action {
	asJSON := fs.Bool("json", false, `print {"module","version","go_version","vcs_revision","vcs_modified","sha256"} as JSON`)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return writeVersion(stdout, results.BinaryInfo(), *asJSON)
	}
}

// writeVersion prints b, one line per thing known: the VCS revision and
// modified flag only for a build that carries them (go build in a
// checkout; not go run or go test), the sha256 when the executable could
// be read.
func writeVersion(w io.Writer, b results.Binary, asJSON bool) error {
	if asJSON {
		return writeJSON(w, b)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "module\t%s\n", b.Module)
	fmt.Fprintf(tw, "version\t%s\n", b.Version)
	if b.Revision != "" {
		fmt.Fprintf(tw, "revision\t%s\n", b.Revision)
		fmt.Fprintf(tw, "modified\t%t\n", b.Modified)
	}
	if b.SHA256 != "" {
		fmt.Fprintf(tw, "sha256\t%s\n", b.SHA256)
	}
	if b.GoVersion != "" {
		fmt.Fprintf(tw, "go\t%s\n", b.GoVersion)
	}
	return tw.Flush()
}
