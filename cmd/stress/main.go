// Command stress runs and analyzes studies of recovery-policy selection
// after MCP tool failures. See README.md for the manual.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "stress:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "stress:", err)
		os.Exit(1)
	}
}

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage")

// usageError wraps a command-line mistake so main exits with status 2.
func usageError(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

const usage = `usage: stress <command> [flags] [args]

commands:
  run [-out DIR] [-allow-unpinned] [-shard i/n] [-quiet] [MANIFEST]
                                                run a study (default: the built-in baselines study)
  run -resume DIR [MANIFEST]                    continue an interrupted or killed run
  merge -out DIR SHARD_DIR...                   combine the shard bundles of one study into one bundle
  synth -scenarios N -servers M [-replicates R] [-seed S] -out DIR
                                                write a synthetic study of any size (scale tests)
  analyze [-json] [-b N] [-seed S] [-pair A,B]... [-column C] [-against paper] [-partial] DIR
                                                recompute the counts of a bundle from calls.jsonl, with intervals and paired tests
  compare [-json] [-b N] [-seed S] [-column C] [-arm-a M] [-arm-b M] [-partial] RUN_A RUN_B
                                                paired differences between two bundles on the same corpus
  report [-out DIR] [-b N] [-seed S] [-pair A,B]... [-against paper] [-manifest M] [-partial] DIR
                                                write report.md, a self-contained report.html and PNG/SVG figures
  profile [-json] [-manifest MANIFEST]          print the actionability profile table (paper Table I)
  render -scenario ID -condition C [-prompt FILE] [-manifest MANIFEST]
                                                print the messages a model receives
  conform [-json] [-manifest MANIFEST]          run the fail-closed client's conformance suite
  verify [-json] MANIFEST                       check every pinned model against its server (no inference)
  models [-host H] [-json]                      list an Ollama server's models with full digests
  capture -out DIR (-stdio LABEL=CMD | -http LABEL=URL)... [flags]
                                                probe live MCP servers and write a pseudonymous corpus
  summary [-json] [-manifest M | -corpus PATH]  print a corpus' counts (servers, probes, causes, surfaces, versions)
  clientcheck [-json] [-protocol V] [-ts-clients DIR]
                                                print how the Go and TypeScript clients treat results against an outputSchema
  version [-json]                               print the module, version, VCS revision, executable sha256 and Go version
  lab serve (-stdio | -http ADDR) [-seed S] [-set NAME] [-scenario ID] [-realtime]
                                                serve the recovery lab: a stateful MCP server with one scenario's fault armed
  lab list [-json] [-set NAME]                  list the recovery lab's scenarios

analyze, compare and report refuse a partial bundle (unfinished, or holding
fewer decisions than its manifest.json records) unless -partial is given, and
then print a warning first; their -json numbers are at full precision.

Flags may also follow the arguments; -- ends the flags.

Run 'stress <command> -h' for a command's flags.
`

// run is the whole program: it dispatches to a subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError("no command given")
	}
	cmds := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"run":         cmdRun,
		"merge":       cmdMerge,
		"synth":       cmdSynth,
		"analyze":     cmdAnalyze,
		"compare":     cmdCompare,
		"report":      cmdReport,
		"profile":     cmdProfile,
		"render":      cmdRender,
		"conform":     cmdConform,
		"verify":      cmdVerify,
		"models":      cmdModels,
		"capture":     cmdCapture,
		"summary":     cmdSummary,
		"clientcheck": cmdClientCheck,
		"version":     cmdVersion,
		"lab":         cmdLab,
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return nil
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprint(stderr, usage)
		return usageError("unknown command %q", args[0])
	}
	return cmd(ctx, args[1:], stdout, stderr)
}
