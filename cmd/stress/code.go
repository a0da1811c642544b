package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/mcpstress/stress/coding/coder"
)

// cmdCode defines code's flags on fs and returns the action that codes
// every record of a corpus with the coders of a coding manifest (the rules
// or models) into a bundle, then writes one coded corpus per coder.
func cmdCode(fs *flag.FlagSet) action {
	out := fs.String("out", "", "bundle directory `DIR` (default codings/<time>-<name>)")
	resume := fs.String("resume", "", "continue the interrupted coding whose bundle is `DIR`")
	allow := fs.Bool("allow-unpinned", false, "run models of pinned backends that have no digest (recorded in the bundle)")
	retryErrors := fs.Bool("retry-errors", false, "with -resume: code again the records whose call failed for good")
	quiet := fs.Bool("quiet", false, "print only the summary (no progress)")
	every := fs.Duration("progress", 10*time.Second, "interval `D` of progress lines on stderr")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 1 {
			return usageError("code takes one coding manifest, got %d arguments", len(args))
		}
		if *resume != "" && *out != "" {
			return usageError("code: flags -resume and -out exclude each other")
		}
		if *retryErrors && *resume == "" {
			return usageError("code: flag -retry-errors goes with -resume")
		}
		if *every <= 0 {
			return usageError("code: flag -progress wants a positive duration")
		}
		m, err := loadManifest(args[0])
		if err != nil {
			return err
		}
		if *resume != "" {
			allowed, err := coder.AllowedUnpinned(*resume)
			if err != nil {
				return fmt.Errorf("code: flag -resume: %w", err)
			}
			*allow = *allow || allowed
		}
		plan, err := coder.Prepare(m, *allow)
		if err != nil {
			return err
		}
		opt := coder.Options{AllowUnpinned: *allow, RetryErrors: *retryErrors, Log: stderr, Progress: stderr, ProgressEvery: *every}
		if *quiet {
			opt.Log, opt.Progress = io.Discard, nil
		}
		var sum *coder.Summary
		if *resume != "" {
			sum, err = plan.Resume(ctx, *resume, opt)
		} else {
			dir := *out
			if dir == "" {
				dir = fmt.Sprintf("codings/%s-%s", time.Now().UTC().Format("20060102T150405Z"), m.Name)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			sum, err = plan.Run(ctx, dir, opt)
		}
		if err != nil {
			return fmt.Errorf("code: %w", err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "coder\tprompt\trecords\tcoded\tinvalid\terrors\tcorpus")
		for _, c := range sum.Coders {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", c.Model, c.Prompt, c.Records, c.Coded, len(c.Invalid), c.Errors, dash(c.Corpus))
		}
		tw.Flush()
		for _, c := range sum.Coders {
			for _, inv := range c.Invalid {
				fmt.Fprintf(stdout, "invalid answer of %s/%s for %s\n", c.Model, c.Prompt, inv)
			}
		}
		fmt.Fprintf(stdout, "compare a coding with another: stress agree CORPUS %s\n", sum.Coders[0].Corpus)
		return nil
	}
}
