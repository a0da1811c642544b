package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpstress/stress/internal/outdir"
)

// stopSignals are the signals that stop a command: Ctrl-C and kill's
// default.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// errSignal is the cause of a context cancelled by a signal.
type errSignal struct{ sig os.Signal }

func (e errSignal) Error() string { return "stopped by " + signalName(e.sig) }

func signalName(s os.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// onSignals returns a context that the first SIGINT or SIGTERM cancels:
// every command's work takes it, stops, and leaves no half-written output.
// A command with a grace period of its own (run: calls in flight may
// finish, a second signal cancels them) takes patience 1 more signal;
// the next exits at once, removing the partial outputs (internal/outdir)
// and writing the profiles asked for (-cpuprofile, …) first, with status
// 1. stop releases the signals.
func onSignals(patience int, stderr io.Writer) (ctx context.Context, stop func()) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignals...)
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		var s os.Signal
		select {
		case s = <-sigs:
		case <-done:
			return
		}
		if patience == 0 {
			// A command with a grace period says what it does itself.
			fmt.Fprintf(stderr, "stress: %s: stopping (a second one exits at once)\n", signalName(s))
		}
		cancel(errSignal{s})
		for n := 0; n <= patience; n++ {
			select {
			case s = <-sigs:
			case <-done:
				return
			}
		}
		outdir.AbortAll()
		finishProfiles(stderr)
		fmt.Fprintf(stderr, "stress: %s again: exiting at once\n", signalName(s))
		os.Exit(1)
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// signalPatience is the number of signals after the first that the
// command args name handles itself before the process exits at once.
func signalPatience(args []string) int {
	if len(args) > 0 && args[0] == "run" {
		return 1
	}
	return 0
}
