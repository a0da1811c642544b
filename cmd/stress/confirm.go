package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mcpstress/stress/coding"
	"github.com/mcpstress/stress/study"
)

// cmdConfirm defines confirm's flags on fs and returns the action that
// writes a copy of a corpus in which a named person confirmed whole
// records.
func cmdConfirm(fs *flag.FlagSet) action {
	by := fs.String("by", "", "the `NAME` of the person who checked and confirms the records (recorded in each)")
	out := fs.String("out", "", "write the corpus to `PATH` (a directory, or a file ending in .json), which must not exist")
	all := fs.Bool("all", false, "confirm every record")
	var ids repeatedFlag
	fs.Var(&ids, "record", "confirm the record `ID` (repeatable)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 1 {
			return usageError("confirm takes one corpus (a directory or a file), got %d arguments", len(args))
		}
		switch {
		case *by == "":
			return usageError("confirm: flag -by is required: who confirms the records")
		case *out == "":
			return usageError("confirm: flag -out is required")
		case *all == (len(ids) > 0):
			return usageError("confirm: give -all or at least one -record ID, not both")
		}
		side, err := coding.Load(args[0])
		if err != nil {
			return fmt.Errorf("confirm: %w", err)
		}
		recs := side.Corpus.Scenarios
		var missing []string
		for _, id := range ids {
			if !slices.ContainsFunc(recs, func(s study.Scenario) bool { return s.ID == id }) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("confirm: flag -record: no record %s in %s", strings.Join(missing, ", "), args[0])
		}
		now := time.Now()
		n := 0
		for i := range recs {
			if *all || slices.Contains(ids, recs[i].ID) {
				if err := recs[i].Confirm(*by, now); err != nil {
					return usageError("confirm: flag -by: %v", err)
				}
				n++
			}
		}
		if err := study.WriteCorpus(*out, recs); err != nil {
			return fmt.Errorf("confirm: flag -out: %w", err)
		}
		left := side.Corpus.Unconfirmed()
		fmt.Fprintf(stdout, "wrote %s: %d of %d records confirmed by %s", *out, n, len(recs), *by)
		if len(left) > 0 {
			fmt.Fprintf(stdout, "; %d still unconfirmed", len(left))
		}
		fmt.Fprintln(stdout)
		return nil
	}
}
