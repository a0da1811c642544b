package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/mcpstress/stress/coding"
)

// cmdAgree defines agree's flags on fs and returns the action that prints
// the agreement of two codings of the same records.
func cmdAgree(fs *flag.FlagSet) action {
	asJSON := fs.Bool("json", false, `print {"a","b","records","only_a","only_b","not_compared","conf","fields":[…],"disagreements":[…]} as JSON`)
	common := fs.Bool("common", false, "compare the records both corpora hold when their record sets differ (the others are listed)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 2 {
			return usageError("agree takes two corpora (directories or files), got %d arguments", len(args))
		}
		a, b, err := loadPair("agree", args)
		if err != nil {
			return err
		}
		r, err := coding.Compare(a, b, coding.Options{Common: *common})
		if err != nil {
			var se *coding.SetError
			if errors.As(err, &se) {
				return fmt.Errorf("agree: %w; pass -common to compare the records both hold", err)
			}
			return fmt.Errorf("agree: %w", err)
		}
		if *asJSON {
			return r.WriteJSON(stdout)
		}
		return r.WriteText(stdout)
	}
}

// loadPair loads the two corpora of agree and adjudicate.
func loadPair(cmd string, args []string) (*coding.Side, *coding.Side, error) {
	a, errA := coding.Load(args[0])
	b, errB := coding.Load(args[1])
	if err := errors.Join(errA, errB); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return a, b, nil
}
