package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/runner"
)

// cmdVerify defines verify's flags on fs and returns the action that
// resolves every model of a manifest on its server and checks its pinned
// identity; it makes no inference call.
func cmdVerify(fs *flag.FlagSet) action {
	asJSON := fs.Bool("json", false, "print what each server reported as JSON")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 1 {
			return usageError("verify takes one manifest")
		}
		m, err := loadManifest(args[0])
		if err != nil {
			return err
		}
		plan, err := runner.PrepareWith(m, runner.Allow{Unpinned: true, Proposed: true})
		if err != nil {
			return err
		}
		checks, verr := plan.Verify(ctx)
		if *asJSON {
			if err := writeJSON(stdout, checks); err != nil {
				return err
			}
		} else {
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "model\tbackend\thost\tversion\tidentity\tpinned")
			for _, md := range m.Models {
				c := checks[md.Name]
				if c == nil {
					fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t(not verifiable)\n", md.Name, md.Backend)
					continue
				}
				host := strings.Join(md.Hosts(), ",")
				if host == "" {
					host = "(default)"
				}
				f := c.Facts
				if h := fact(f, "host"); h != "-" {
					host = h
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", md.Name, md.Backend, host, fact(f, "server_version"), identity(f), fact(f, "pinned"))
			}
			tw.Flush()
		}
		if verr != nil {
			return fmt.Errorf("verify %s:\n%w", args[0], verr)
		}
		fmt.Fprintln(stderr, "verified: every pinned model matches its server")
		return nil
	}
}

// fact formats what a server reported under key, or "-" when it reported
// nothing (the backend has no such fact, or verification stopped early).
func fact(f models.Facts, key string) string {
	if v := f[key]; v != nil {
		return dash(fmt.Sprint(v))
	}
	return "-"
}

// identity is what pins a model on its server: the Ollama digest, or the
// model id and system fingerprint an OpenAI-compatible server reports.
func identity(f models.Facts) string {
	if d := fact(f, "digest"); d != "-" {
		return d
	}
	var parts []string
	if v := fact(f, "served_model"); v != "-" {
		parts = append(parts, "model "+v)
	}
	if v := fact(f, "system_fingerprint"); v != "-" {
		parts = append(parts, "fingerprint "+v)
	}
	return dash(strings.Join(parts, ", "))
}
