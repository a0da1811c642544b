// Command stress runs and analyzes studies of recovery-policy selection
// after MCP tool failures. README.md and docs/ are its manual; "stress help" lists the
// commands (commands.go) and "stress help COMMAND" prints one's flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"

	_ "github.com/mcpstress/stress/env/dbenv"         // registers environment database (a real database behind DBHub)
	_ "github.com/mcpstress/stress/env/labenv"        // registers environment lab (the recovery lab)
	_ "github.com/mcpstress/stress/env/mcpenv"        // registers environment mcp (the reference MCP servers)
	_ "github.com/mcpstress/stress/models/baseline"   // registers the baselines
	_ "github.com/mcpstress/stress/models/exec"       // registers the exec backend (any program, a line protocol)
	_ "github.com/mcpstress/stress/models/failclosed" // registers fail_closed
	_ "github.com/mcpstress/stress/models/ollama"     // registers the Ollama backend
	_ "github.com/mcpstress/stress/models/openai"     // registers the OpenAI-compatible backend
)

func main() {
	deferGC()
	ctx, stop := onSignals(signalPatience(os.Args[1:]), os.Stderr)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	sig, stopped := context.Cause(ctx).(errSignal) // the signal that cancelled ctx, if any
	stop()
	switch {
	case err == nil:
	case stopped && errors.Is(err, context.Canceled):
		// The command stopped its work; there is nothing else to say.
		fmt.Fprintf(os.Stderr, "stress: %s: %s\n", commandName(os.Args[1:]), sig)
		os.Exit(1)
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "stress:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "stress:", err)
		os.Exit(1)
	}
}

// firstGC is the heap size at which a process first collects garbage.
const firstGC = 8 << 20

// gcHeadroom is how far the heap may grow past what the last collection
// left live before the next collection, at the least: a small live heap
// (a live study of a few megabytes) would otherwise be collected every
// few megabytes allocated.
const gcHeadroom = 16 << 20

// heapMinimum is the runtime's smallest heap goal at GOGC=100; it scales
// with GOGC.
const heapMinimum = 4 << 20

// deferGC lets the heap reach firstGC before the first collection, then
// paces the collections that follow (paceGC): a short command (a
// one-decision run, a render) ends before the first. Note: without it a
// one-decision run spent 3 to 5 ms of about 30 in collections of a few
// megabytes; with the first collection at 32 MiB, a 420-request run
// against an HTTP stub never collected and peaked at 37 MB instead of
// 33.5: 700 page faults more (25 to 40 µs each on the machine the
// README's figures come from) and a tenth more CPU time. The
// environment's GOGC or GOMEMLIMIT, when set, is left alone.
func deferGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(firstGC * 100 / heapMinimum)
	afterEachGC(func() { debug.SetGCPercent(paceGC()) })
}

// paceGC returns the GOGC for the cycle that starts: the default (100),
// or more when the live heap is under gcHeadroom, so that the heap may
// grow by gcHeadroom (the runtime's goal is the live heap plus GOGC
// percent of it and of the stacks and globals it scans); no more than
// keeps the runtime's heap minimum (heapMinimum scaled by GOGC) within
// that. Note: the lab study (4,875 decisions) keeps about 3 MB live; at
// GOGC=100 it collected about 50 times, and this pacing took a third off
// its CPU time (224 to 148 µs a decision).
func paceGC() int {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	metrics.Read(s)
	var v [3]int64
	for i, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			v[i] = int64(x.Value.Uint64())
		}
	}
	live, scanned := v[0], max(v[0]+v[1]+v[2], 1)
	gogc := min(gcHeadroom*100/scanned, (live+gcHeadroom)*100/heapMinimum, 1000)
	return int(max(gogc, 100))
}

// afterEachGC calls f after each garbage collection, from the finalizer
// of a sentinel that is made again each time.
func afterEachGC(f func()) {
	sentinel := new([16]byte)
	runtime.SetFinalizer(sentinel, func(*[16]byte) {
		f()
		afterEachGC(f)
	})
}

// commandName is the command args name, for a message.
func commandName(args []string) string {
	if len(args) == 0 {
		return "stress"
	}
	return args[0]
}

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage")

// usageError wraps a command-line mistake so main exits with status 2.
func usageError(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// run is the whole program: it dispatches to a command.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		writeUsage(stderr)
		return usageError("no command given")
	}
	name, args := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return help(args, stdout, stderr)
	}
	c := lookup(name)
	if c == nil {
		writeUsage(stderr)
		return usageError("unknown command %q", name)
	}
	return runCommand(ctx, c, args, stdout, stderr)
}

// writeJSON writes v to w as JSON indented by two spaces.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
