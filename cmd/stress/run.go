package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/env"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
)

// cmdRun defines run's flags on fs and returns the action that runs a
// study, or resumes one, and prints its counts table.
func cmdRun(fs *flag.FlagSet) action {
	out := fs.String("out", "", "bundle directory `DIR` (default results/<run-id>)")
	allow := fs.Bool("allow-unpinned", false, "run models of pinned backends that have no digest (recorded in the bundle)")
	quiet := fs.Bool("quiet", false, "print only the counts table (no progress, no messages)")
	resume := fs.String("resume", "", "continue the interrupted or killed run whose bundle is `DIR` (the manifest is the argument, else the one the bundle records)")
	shardFlag := fs.String("shard", "", "run only shard `i/n` of the decisions (combine the shards with stress merge); auto: the shard a Slurm job array or Kubernetes Indexed Job assigns (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX)")
	shards := fs.Int("shards", 0, "with -shard auto: the number of shards `N` (required for a Kubernetes Indexed Job; checked against a Slurm array's)")
	grace := fs.Duration("grace", 30*time.Second, "after an interrupt, the time `D` calls in flight may take to finish before they are cancelled")
	every := fs.Duration("progress", 10*time.Second, "interval `D` of progress lines when stderr is not a terminal")
	retryErrors := fs.Bool("retry-errors", false, "with -resume: run the error decisions (calls that failed for good) again")
	allowProposed := fs.Bool("allow-proposed", false, "run on a corpus with proposed (unconfirmed) coding (recorded in the bundle, and said above every table and report made from it)")
	return withProfiles(fs, func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) > 1 {
			return usageError("run takes at most one manifest, got %d arguments", len(args))
		}
		shardsGiven := false
		fs.Visit(func(f *flag.Flag) { shardsGiven = shardsGiven || f.Name == "shards" })
		if shardsGiven && (*shards < 1 || *shards > 100000) {
			return usageError("run: flag -shards: want 1 to 100000, got %d", *shards)
		}
		var shard results.Shard
		var sched *results.Scheduler
		switch {
		case *shardFlag == "auto":
			var err error
			if shard, sched, err = runner.ShardFromEnv(os.Getenv, *shards); err != nil {
				return usageError("run: flag -shard auto: %v", err)
			}
		case shardsGiven:
			return usageError("run: flag -shards goes with -shard auto")
		case *shardFlag != "":
			var err error
			if shard, err = results.ParseShard(*shardFlag); err != nil {
				return usageError("run: flag -shard: %v", err)
			}
		}
		if *resume != "" && *out != "" {
			return usageError("run: flags -resume and -out exclude each other (a resumed run writes into its own bundle)")
		}
		if *retryErrors && *resume == "" {
			return usageError("run: flag -retry-errors goes with -resume")
		}
		if *grace <= 0 || *every <= 0 {
			return usageError("run: flags -grace and -progress want a positive duration")
		}
		manifest := "" // the argument, if any
		if len(args) == 1 {
			manifest = args[0]
		}
		var rec *results.Record
		source := manifest
		if *resume != "" {
			var err error
			if rec, err = results.ReadRecord(*resume); err != nil {
				return fmt.Errorf("run: flag -resume: %w", err)
			}
			if rec.Coding() {
				return fmt.Errorf("run: flag -resume: %w", results.CodingError(*resume))
			}
			if source == "" {
				source = rec.Source
			}
			*allow = *allow || rec.AllowUnpinned
			*allowProposed = *allowProposed || rec.AllowProposed
		}
		var m *manifests.Resolved
		var err error
		// No decision reads the records' profile codings: they are dropped
		// as the corpus loads (the plan still sees which are unconfirmed).
		if rec != nil && manifest == "" {
			m, err = loadRecorded(rec, manifests.WithoutCodings())
			if err != nil {
				return fmt.Errorf("resume %s: %w (give the manifest's path as an argument)", *resume, err)
			}
		} else if m, err = loadManifest(source, manifests.WithoutCodings()); err != nil {
			return err
		}
		plan, err := runner.PrepareWith(m, runner.Allow{Unpinned: *allow, Proposed: *allowProposed})
		if err != nil {
			return err
		}
		opt := runner.Options{Out: *out, AllowUnpinned: *allow, Log: stderr, Shard: shard, Scheduler: sched, Grace: *grace, ProgressEvery: *every, Progress: stderr, RetryErrors: *retryErrors,
			FitProcs: os.Getenv("GOMAXPROCS") == ""} // the environment's GOMAXPROCS, when set, is left alone
		if opt.Env, err = env.Open(m, env.Options{}); err != nil {
			return err
		}
		if c, ok := opt.Env.(io.Closer); ok {
			defer c.Close() // servers kept for reuse (mcpenv)
		}
		if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			opt.Terminal = true
			if w, _, err := term.GetSize(int(f.Fd())); err == nil {
				opt.Width = w
			}
			opt.ProgressEvery = 0 // the live line's default
		}
		if *quiet {
			opt.Log, opt.Progress = io.Discard, nil
		}
		// A second interrupt cancels the calls in flight at once.
		abort := make(chan struct{})
		opt.Abort = abort
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sigs)
		finished := make(chan struct{})
		defer close(finished)
		go func() {
			for range 2 {
				select {
				case <-sigs:
				case <-finished:
					return
				}
			}
			close(abort)
		}()
		var dir string
		var sum *results.Summary
		if *resume != "" {
			dir = *resume
			sum, err = plan.Resume(ctx, dir, opt)
		} else {
			dir, sum, err = plan.Run(ctx, opt)
		}
		switch {
		case err == nil:
		case errors.Is(err, runner.ErrInterrupted):
			return fmt.Errorf("run into %s: %w (resume with: stress run -resume %s)", dir, err, dir)
		case dir == "":
			return fmt.Errorf("run: %w", err)
		default:
			return fmt.Errorf("run into %s: %w", dir, err)
		}
		fmt.Fprintf(opt.Log, "wrote %s: %d decisions, %d calls, %d errors, %d transport events\n", dir, sum.Decisions, sum.Calls, sum.Errors, sum.TransportEvents)
		if len(plan.Unconfirmed()) > 0 { // else there is no warning to read
			if rec, err := results.ReadRecord(dir); err == nil && rec.ProposedWarning() != "" {
				fmt.Fprintln(stdout, rec.ProposedWarning())
			}
		}
		return analysis.WriteTable(stdout, sum.Cells)
	})
}
