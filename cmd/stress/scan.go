package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpstress/stress/audit/scan"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/internal/outdir"
)

// scanLong follows scan's forms in its help.
const scanLong = `A match sets isError, is_error or IsError to the literal true (an object,
dict, struct or composite literal member, a named argument, a C# initializer,
an assignment or an index assignment) or calls an SDK helper that builds an
error result (Go SDK SetError, mcp-go NewToolResultError…, Rust
CallToolResult::error, Java .isError(true)) in a file that imports that SDK,
in TypeScript, JavaScript, Python, Go, Rust, Java, Kotlin or C#. A call of a
same-named function that does not resolve to the SDK (utils.NewToolResultError)
is a repository's own wrapper: its definition is the match, its calls are
listed apart (wrapper_calls.jsonl), not matches. Comments, strings, regexps,
TypeScript types and Python case patterns never match. Dependencies (node_modules, vendor, .venv,
site-packages, …) are never entered, build output (dist, build, out, target,
…) only with -include-build; every other file is classed production,
generated, test, fixture or example (docs/audit.md has the rules), and only
production matches go to the ledger. A REPO_DIR is named NAME=REPO_DIR, else
by its git origin on GitHub (github.com/owner/name), else by its base name
(an existing directory whose name holds "=" is taken whole).
`

// cmdScan defines scan's flags on fs and returns the action that runs
// the lexical source audit, or summarizes an adjudicated ledger.
func cmdScan(fs *flag.FlagSet) action {
	out := fs.String("out", "", "write candidates.jsonl, projection.jsonl, ledger.csv, wrapper_calls.jsonl and scan.json to `DIR` (must not exist or be empty); without it, list the matches")
	includeBuild := fs.Bool("include-build", false, "also scan build output (dist, build, out, target, …), classed build, never production: published packages ship only their build output")
	maxSize := fs.Int64("max-file-size", scan.DefaultMaxFileSize, "skip source files larger than `N` bytes")
	summarize := fs.String("summarize", "", "print the audit funnel of the adjudicated ledger `LEDGER` (a ledger.csv with decisions filled in) instead of scanning")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if *summarize != "" {
			if len(args) > 0 || *out != "" || *includeBuild {
				return usageError("scan: -summarize LEDGER takes no other flag and no REPO_DIR")
			}
			return summarizeLedger(*summarize, stdout, stderr)
		}
		if len(args) == 0 {
			return usageError("scan: give at least one REPO_DIR")
		}
		if *maxSize < 1 {
			return usageError("scan: flag -max-file-size: want at least 1 byte, got %d", *maxSize)
		}
		if *out != "" {
			if err := outdir.Check(*out, nil); err != nil {
				return usageError("scan: flag -out: %v", err)
			}
		}
		repos, err := scanRepos(args)
		if err != nil {
			return err
		}
		opt := scan.Options{IncludeBuild: *includeBuild, MaxFileSize: *maxSize}
		res, err := scan.Scan(ctx, repos, opt)
		if err != nil {
			return fmt.Errorf("scan: %w", err)
		}
		for _, s := range res.Skipped {
			fmt.Fprintf(stderr, "stress scan: %s: %s: skipped: %s\n", s.Repository, s.Path, s.Reason)
		}
		if *out != "" {
			if err := res.Write(*out, opt); err != nil {
				return fmt.Errorf("scan: %w", err)
			}
		} else if err := res.WriteList(stdout); err != nil {
			return err
		} else if len(res.Candidates) > 0 || len(res.WrapperCalls) > 0 {
			fmt.Fprintln(stdout)
		}
		if err := res.WriteSummary(stdout); err != nil {
			return err
		}
		if *out != "" {
			fmt.Fprintf(stdout, "wrote %s: %s, %s, %s (to adjudicate), %s, %s\n", *out, scan.CandidatesFile, scan.ProjectionFile, scan.LedgerFile, scan.WrapperCallsFile, scan.ManifestFile)
		}
		if n := res.Failed(); n > 0 {
			return fmt.Errorf("scan: %d files or directories could not be read (above): the audit is incomplete", n)
		}
		return nil
	}
}

// scanRepos reads the REPO_DIR arguments, [NAME=]DIR, and names each.
func scanRepos(args []string) ([]scan.Repo, error) {
	var repos []scan.Repo
	seen := map[string]string{}
	for _, a := range args {
		name, dir, named := strings.Cut(a, "=")
		if fi, err := os.Stat(a); !named || err == nil && fi.IsDir() {
			name, dir = "", a // a directory whose name holds "="
		}
		fi, err := os.Stat(dir)
		if err != nil {
			return nil, usageError("scan: %v", err)
		}
		if !fi.IsDir() {
			return nil, usageError("scan: %s is not a directory", dir)
		}
		if name == "" {
			if name = scan.Origin(dir); name == "" {
				abs, err := filepath.Abs(dir)
				if err != nil {
					return nil, err
				}
				name = filepath.Base(abs)
			}
		}
		if prev, dup := seen[name]; dup {
			return nil, usageError("scan: %s and %s are both named %s: name one NAME=%s", prev, dir, name, dir)
		}
		seen[name] = dir
		repos = append(repos, scan.Repo{Name: name, Dir: dir})
	}
	return repos, nil
}

// summarizeLedger prints the funnel of an adjudicated ledger; every bad
// row is reported and fails the command.
func summarizeLedger(file string, stdout, stderr io.Writer) error {
	f, err := input.Open(file, input.Ledger)
	if err != nil {
		return fmt.Errorf("scan: flag -summarize: %w", err)
	}
	defer f.Close()
	funnel, errs := scan.Summarize(file, f)
	if funnel == nil {
		return fmt.Errorf("scan: %w", errors.Join(errs...))
	}
	for _, e := range errs {
		fmt.Fprintf(stderr, "stress scan: %v\n", e)
	}
	if len(errs) > 0 {
		return fmt.Errorf("scan: %d ledger rows are bad (above): fix them for the funnel", len(errs))
	}
	return funnel.WriteText(stdout)
}
