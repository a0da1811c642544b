package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/mcpstress/stress/coding"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/study"
)

// cmdAdjudicate defines adjudicate's flags on fs and returns the action
// that writes a ledger of the disagreements of two codings, or applies a
// decided ledger to make the adjudicated corpus.
func cmdAdjudicate(fs *flag.FlagSet) action {
	out := fs.String("out", "", "write the ledger (with -apply, the adjudicated corpus: a directory, or a file ending in .json) to `PATH`, which must not exist")
	apply := fs.String("apply", "", "apply the decisions of ledger `LEDGER` to A's records")
	by := fs.String("by", "", "with -apply: the adjudicator `NAME` of rows whose decided_by is empty")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 2 {
			return usageError("adjudicate takes two corpora (directories or files), got %d arguments", len(args))
		}
		if *out == "" {
			return usageError("adjudicate: flag -out is required")
		}
		if *by != "" && *apply == "" {
			return usageError("adjudicate: flag -by goes with -apply")
		}
		a, b, err := loadPair("adjudicate", args)
		if err != nil {
			return err
		}
		if *apply == "" {
			r, err := coding.Compare(a, b, coding.Options{})
			if err != nil {
				return fmt.Errorf("adjudicate: %w", err)
			}
			var buf bytes.Buffer
			if err := coding.WriteLedger(&buf, r); err != nil {
				return err
			}
			if err := outdir.WriteFile(*out, buf.Bytes()); err != nil {
				return fmt.Errorf("adjudicate: flag -out: %w", err)
			}
			fmt.Fprintf(stdout, "wrote %s: %d disagreements on %d records of %s and %s; fill in decision (a value, or a or b for a coder's), decided_by and note, then run stress adjudicate -apply %s -out CORPUS %s %s\n",
				*out, len(r.Disagreements), r.Records, a.Path, b.Path, *out, a.Path, b.Path)
			return nil
		}
		data, err := input.ReadFile(*apply, input.Ledger)
		if err != nil {
			return fmt.Errorf("adjudicate: flag -apply: %w", err)
		}
		l, err := coding.ReadLedger(*apply, data)
		if err != nil {
			return fmt.Errorf("adjudicate: %w", err)
		}
		recs, err := coding.Apply(l, a, b, coding.ApplyOptions{By: *by})
		if err != nil {
			return fmt.Errorf("adjudicate: %w", err)
		}
		if err := study.WriteCorpus(*out, recs); err != nil {
			return fmt.Errorf("adjudicate: flag -out: %w", err)
		}
		left := (&study.Corpus{Scenarios: recs}).Unconfirmed()
		fmt.Fprintf(stdout, "wrote %s: %d records, %d decisions from %s applied to %s", *out, len(recs), len(l.Rows), *apply, a.Path)
		if len(left) > 0 {
			fmt.Fprintf(stdout, "; %s (confirm them with stress confirm)", study.UnconfirmedError(left))
		}
		fmt.Fprintln(stdout)
		return nil
	}
}
