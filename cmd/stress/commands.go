package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"unicode/utf8"
)

// A command is one of stress's commands: its lines in the usage text and
// in README.md's command table, and its flags.
type command struct {
	name string
	// forms are the command lines the command takes; together they name
	// every flag it accepts.
	forms []form
	// long is what stress help NAME prints after the forms, "" for
	// nothing more.
	long string
	// flags defines the command's flags on fs and returns the action that
	// runs the command once fs is parsed.
	flags func(fs *flag.FlagSet) action
	// noArgs refuses positional arguments: "NAME takes no arguments".
	noArgs bool
	// required names the flag that must have a value, "" for none:
	// "NAME: flag -FLAG is required".
	required string
}

// A form is one command line of a command.
type form struct {
	// args follow "stress NAME": flags and arguments, optional ones in
	// [ ], repeatable ones followed by …, a flag's value named as in its
	// help (`DIR` in the flag's usage string).
	args string
	// short says what the form does, in one line.
	short string
}

// An action runs a command on its positional arguments.
type action func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// commands are stress's commands, in the order of the usage text and the
// README.
var commands = []*command{
	{name: "run", flags: cmdRun, forms: []form{
		{"[-out DIR] [-allow-unpinned] [-allow-proposed] [-shard i/n] [-shards N] [-grace D] [-progress D] [-quiet] [-cpuprofile FILE] [-memprofile FILE] [-trace FILE] [MANIFEST]",
			"run a study (default: the built-in baselines study)"},
		{"-resume DIR [-retry-errors] [-allow-unpinned] [-allow-proposed] [-grace D] [-progress D] [-quiet] [-cpuprofile FILE] [-memprofile FILE] [-trace FILE] [MANIFEST]",
			"continue an interrupted or killed run"},
	}},
	{name: "merge", flags: cmdMerge, required: "out", forms: []form{
		{"-out DIR [-quiet] [-cpuprofile FILE] [-memprofile FILE] [-trace FILE] SHARD_DIR…",
			"combine the shard bundles of one study into one bundle"},
	}},
	{name: "slurm", flags: cmdSlurm, required: "out", forms: []form{
		{"-shards N -out DIR [-sbatch OPT]… [-stress PATH] [-wait] [-dry-run] MANIFEST",
			"submit a study to Slurm: a job array of shards and a dependent merge"},
	}},
	{name: "upgrade", flags: cmdUpgrade, required: "out", forms: []form{
		{"-out NEW_DIR DIR",
			"convert a bundle of an earlier format (1 or 2) into a new bundle"},
	}},
	{name: "synth", flags: cmdSynth, required: "out", noArgs: true, forms: []form{
		{"-scenarios N -servers M [-replicates R] [-seed S] -out DIR",
			"write a synthetic study of any size (scale tests)"},
	}},
	{name: "analyze", flags: cmdAnalyze, forms: []form{
		{"[-json] [-b N] [-seed S] [-pair FACTOR:A,B[,COL]]… [-column COL] [-family F] [-interval METHOD] [-against paper [-match-label]] [-parser lenient] [-partial] [-cpuprofile FILE] [-memprofile FILE] [-trace FILE] DIR",
			"recompute a bundle's counts from calls.jsonl; intervals and paired tests"},
	}},
	{name: "compare", flags: cmdCompare, forms: []form{
		{"[-json] [-b N] [-seed S] [-column C,…] [-arm-a MODEL[/PROMPT]] [-arm-b MODEL[/PROMPT]] [-pair FACTOR:A,B] [-partial] RUN_A RUN_B",
			"print the paired differences between two bundles on the same corpus"},
	}},
	{name: "report", flags: cmdReport, forms: []form{
		{"[-out OUT] [-b N] [-seed S] [-pair FACTOR:A,B[,COL]]… [-column COL] [-family F] [-interval METHOD] [-against paper [-match-label]] [-power-diff D] [-manifest M] [-partial] [-cpuprofile FILE] [-memprofile FILE] [-trace FILE] DIR",
			"write report.md, a self-contained report.html and PNG/SVG figures"},
	}},
	{name: "export", flags: cmdExport, forms: []form{
		{"[-format inspect] [-eval] [-out DIR] [-partial] [-quiet] [-cpuprofile FILE] [-memprofile FILE] [-trace FILE] BUNDLE",
			"write a bundle as Inspect eval logs, one per model, prompt and condition"},
	}},
	{name: "power", flags: cmdPower, long: powerLong, forms: []form{
		{"-diff D (-pilot DIR [-pair FACTOR:A,B[,COL]]… [-partial] | -rate R -icc ICC) [-icc ICC] [-arm-corr r] [-scenarios N,…] [-replicates N,…] [-servers N,…] [-studies N] [-level A] [-server-share S] [-seed S] [-json] [-out DIR]",
			"estimate by simulation the power of each contrast over a grid of designs"},
	}},
	{name: "verify", flags: cmdVerify, forms: []form{
		{"[-json] MANIFEST",
			"check every pinned model against its server (no inference)"},
	}},
	{name: "models", flags: cmdModels, noArgs: true, forms: []form{
		{"[-host H] [-json]",
			"list an Ollama server's models with full digests"},
	}},
	{name: "profile", flags: cmdProfile, noArgs: true, forms: []form{
		{"[-json] [-manifest M]",
			"print the actionability profile table (paper Table I)"},
	}},
	{name: "render", flags: cmdRender, required: "scenario", noArgs: true, forms: []form{
		{"-scenario ID -condition C [-prompt FILE] [-replays N [-observation FILE [-policy P]]] [-act [-env NAME] [-mcp-servers DIR]] [-json] [-manifest M]",
			"print the messages a model receives"},
	}},
	{name: "capture", flags: cmdCapture, long: captureLong, forms: []form{
		{"-out DIR (-stdio LABEL=COMMAND | -http LABEL=URL)… [-root URI]… [-read-only TOOL]… [-sentinel TOOL[:FIELD[=JSON]]]… " +
			"[-allow-host HOST]… [-protocol VERSION] [-probe-tool TOOL] [-interval D] [-max-calls N] [-timeout D] [-grace D] [-max-frame-bytes N] [-max-server-bytes N] [-max-notifications N] [-max-text-bytes N] " +
			"[-validate-output] [-redact-text] [-salt-file FILE] [-quiet]",
			"probe live MCP servers and write a pseudonymous corpus"},
	}},
	{name: "code", flags: cmdCode, forms: []form{
		{"[-out DIR] [-allow-unpinned] [-progress D] [-quiet] MANIFEST",
			"code every record's profile with the rules or a model (a coding manifest)"},
		{"-resume DIR [-retry-errors] [-allow-unpinned] [-progress D] [-quiet] MANIFEST",
			"continue an interrupted coding"},
	}},
	{name: "agree", flags: cmdAgree, forms: []form{
		{"[-json] [-common] A B",
			"print the agreement of two codings of the same records (kappa, AC1, PABAK)"},
	}},
	{name: "adjudicate", flags: cmdAdjudicate, forms: []form{
		{"-out PATH A B",
			"write a CSV ledger of the disagreements of two codings, to decide"},
		{"-apply LEDGER [-by NAME] -out PATH A B",
			"apply a decided ledger to A's records: the adjudicated corpus"},
	}},
	{name: "confirm", flags: cmdConfirm, forms: []form{
		{"-by NAME [-record ID]… [-all] -out PATH CORPUS",
			"confirm whole records by a named person (clears their proposed marks)"},
	}},
	{name: "summary", flags: cmdSummary, noArgs: true, forms: []form{
		{"[-json] [-manifest M | -corpus PATH]",
			"print a corpus' counts (servers, probes, causes, surfaces, versions)"},
	}},
	{name: "clientcheck", flags: cmdClientCheck, noArgs: true, forms: []form{
		{"[-json] [-protocol VERSION] [-ts-clients DIR]",
			"print how Go and TypeScript clients treat results against an outputSchema"},
	}},
	{name: "sample", flags: cmdSample, required: "out", long: sampleLong, forms: []form{
		{"-out DIR [-seed S] [-strata LIST] [-exclude FILE] [-include-deleted] SNAPSHOT…",
			"draw a seeded, stratified sample of the repositories of a registry snapshot"},
		{"-out DIR -fetch URL [-allow-redirect-host HOST]… [-seed S] [-strata LIST] [-exclude FILE] [-include-deleted]",
			"page a registry's API for the snapshot (the pages are kept), then draw"},
		{"-out DIR -frame FILE [-seed S] [-strata LIST] [-exclude FILE]",
			"draw again from the frame a previous sample wrote"},
	}},
	{name: "scan", flags: cmdScan, long: scanLong, forms: []form{
		{"[-out DIR] [-include-build] [-max-file-size N] [NAME=]REPO_DIR…",
			"find where repositories construct tool-error results (lexical audit)"},
		{"-summarize LEDGER",
			"print the audit funnel of an adjudicated ledger"},
	}},
	{name: "conform", flags: cmdConform, forms: []form{
		{"[-json] [-manifest M]",
			"run the fail-closed client's conformance suite"},
	}},
	{name: "lab", flags: cmdLab, long: labLong, forms: []form{
		{"serve (-stdio | -http ADDR) [-seed S] [-set NAME] [-scenario ID] [-realtime] [-shape SHAPE]",
			"serve the recovery lab: a stateful MCP server, one scenario's fault armed"},
		{"list [-json] [-set NAME]", "list the recovery lab's scenarios"},
		{"record -out DIR [-set NAME] [-seed S]",
			"record the lab corpus through the MCP protocol, raw frames kept"},
	}},
	{name: "proxy", flags: cmdProxy, required: "fault", long: proxyLong, forms: []form{
		{"-fault FILE [-http ADDR] [-shape SHAPE] (-- COMMAND ARGS… | -upstream URL)",
			"relay any MCP server to a client, injecting one declared fault"},
	}},
	{name: "db", flags: cmdDB, long: dbLong, forms: []form{
		{"table [-set FILE] [-database ENGINE]",
			"prove a database scenario set: every policy executed on a fresh database"},
		{"record -out DIR [-set FILE] [-database ENGINE]",
			"record a database scenario set's corpus from its first calls"},
	}},
	{name: "version", flags: cmdVersion, noArgs: true, forms: []form{
		{"[-json]",
			"print the module, version, VCS revision, executable sha256 and Go version"},
	}},
}

// usageTail follows the list of commands in the usage text.
const usageTail = `
analyze, compare, report and export refuse a partial bundle (unfinished, or
holding another number of decisions than its manifest.json records) unless
-partial is given, and then print a warning first; their -json numbers are
at full precision.

Flags may also follow the arguments; -- ends the flags.

Run 'stress help <command>' or 'stress <command> -h' for a command's flags.
`

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// runCommand parses c's flags from args and runs it; -h or -help prints
// its help on stdout instead.
func runCommand(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) error {
	fs, act := c.flagSet(stderr)
	if err := parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c.writeHelp(stdout)
		}
		c.writeHelp(stderr)
		return err
	}
	if c.noArgs && fs.NArg() != 0 {
		return usageError("%s takes no arguments", c.name)
	}
	if c.required != "" && fs.Lookup(c.required).Value.String() == "" {
		return usageError("%s: flag -%s is required", c.name, c.required)
	}
	return act(ctx, fs.Args(), stdout, stderr)
}

// flagSet makes c's flag set, which writes flag errors to stderr, and
// returns it with c's action.
func (c *command) flagSet(stderr io.Writer) (*flag.FlagSet, action) {
	fs := flag.NewFlagSet("stress "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	// Note: runCommand prints the help itself: on stdout for -h, on stderr
	// after a flag error.
	fs.Usage = func() {}
	return fs, c.flags(fs)
}

// usageWidth is the width of the usage text and the help, in columns.
const usageWidth = 80

// writeForm prints form f of c after indent and head ("" or "stress "),
// wrapped to usageWidth between the elements of its args (never inside
// [ ] or ( )), continuation lines aligned after the command's name, then
// what it does, indented 2 more.
func (c *command) writeForm(b *strings.Builder, indent, head string, f form) {
	b.WriteString(indent + head + c.name)
	col := utf8.RuneCountInString(indent + head + c.name)
	hang := strings.Repeat(" ", col+1)
	for _, e := range elements(f.args) {
		n := utf8.RuneCountInString(e)
		if col+1+n > usageWidth && col > len(hang) {
			b.WriteString("\n" + hang + e)
			col = len(hang) + n
			continue
		}
		b.WriteString(" " + e)
		col += 1 + n
	}
	b.WriteString("\n" + indent + "  " + f.short + "\n")
}

// elements splits args at the blanks outside brackets and parentheses:
// "[-out DIR] SHARD_DIR…" is "[-out DIR]", "SHARD_DIR…".
func elements(args string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range args {
		switch r {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case ' ':
			if depth == 0 {
				out = append(out, args[start:i])
				start = i + 1
			}
		}
	}
	if start < len(args) {
		out = append(out, args[start:])
	}
	return out
}

// help runs stress help [COMMAND]: the usage text, or a command's help.
func help(args []string, stdout, stderr io.Writer) error {
	switch len(args) {
	case 0:
		return writeUsage(stdout)
	case 1:
		c := lookup(args[0])
		if c == nil {
			writeUsage(stderr)
			return usageError("help: unknown command %q", args[0])
		}
		return c.writeHelp(stdout)
	default:
		return usageError("help takes at most one command, got %d", len(args))
	}
}

// writeUsage prints every form of every command and what it does.
func writeUsage(w io.Writer) error {
	var b strings.Builder
	b.WriteString("usage: stress <command> [flags] [args]\n\ncommands:\n")
	for _, c := range commands {
		for _, f := range c.forms {
			c.writeForm(&b, "  ", "", f)
		}
	}
	b.WriteString(usageTail)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHelp prints c's forms, what they do, c.long and the flags with
// their defaults.
func (c *command) writeHelp(w io.Writer) error {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, f := range c.forms {
		c.writeForm(&b, "  ", "stress ", f)
	}
	if c.long != "" {
		b.WriteString("\n" + c.long)
	}
	fs, _ := c.flagSet(io.Discard)
	fs.SetOutput(&b)
	b.WriteString("\nflags:\n")
	fs.PrintDefaults()
	_, err := io.WriteString(w, b.String())
	return err
}
