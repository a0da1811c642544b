package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/manifests"
	_ "github.com/mcpstress/stress/models/baseline"   // registers the baselines
	_ "github.com/mcpstress/stress/models/failclosed" // registers fail_closed
	_ "github.com/mcpstress/stress/models/openai"     // registers the OpenAI-compatible backend
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// newFlags makes a flag set that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("stress "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses flags wherever they stand among the positional arguments
// (stress analyze DIR -json), up to a "--", after which everything is
// positional; fs.Args() returns the positional arguments in order. Flag
// errors become usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return usageError("%s -h", fs.Name())
			}
			return usageError("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if endedFlags(fs, args[:len(args)-len(rest)]) {
			pos = append(pos, rest...)
			break
		}
		// Note: the flag package stops at the first positional argument;
		// keep it and parse the flags after it.
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	// A leading "--" makes fs.Args() exactly pos without parsing a flag.
	return fs.Parse(append([]string{"--"}, pos...))
}

// endedFlags reports whether the flag arguments fs.Parse consumed ended
// with the terminator "--" rather than with a flag's value that reads "--"
// (-out --).
func endedFlags(fs *flag.FlagSet, consumed []string) bool {
	for i := 0; i < len(consumed); i++ {
		a := consumed[i]
		if a == "--" {
			return true
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
			i++ // the next argument is the flag's value
		}
	}
	return false
}

// loadManifest reads the manifest at path, or the built-in default when
// path is "".
func loadManifest(path string) (*manifests.Resolved, error) {
	if path == "" {
		return manifests.LoadBuiltin(manifests.DefaultName)
	}
	return manifests.Load(path)
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	out := fs.String("out", "", "bundle directory (default results/<run-id>)")
	allow := fs.Bool("allow-unpinned", false, "run models of pinned backends that have no digest (recorded in the bundle)")
	quiet := fs.Bool("quiet", false, "print only the counts table (no progress, no messages)")
	resume := fs.String("resume", "", "continue the interrupted or killed run whose bundle is `DIR` (the manifest is the argument, else the one the bundle records)")
	shardFlag := fs.String("shard", "", "run only shard `i/n` of the decisions (combine the shards with stress merge)")
	grace := fs.Duration("grace", 30*time.Second, "after an interrupt, how long calls in flight may finish before they are cancelled")
	every := fs.Duration("progress", 10*time.Second, "interval of progress lines when stderr is not a terminal")
	retryErrors := fs.Bool("retry-errors", false, "with -resume: run the error decisions (calls that failed for good) again")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageError("run takes at most one manifest, got %d arguments", fs.NArg())
	}
	var shard results.Shard
	if *shardFlag != "" {
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
	var rec *results.Record
	source := fs.Arg(0)
	if *resume != "" {
		var err error
		if rec, err = results.ReadRecord(*resume); err != nil {
			return fmt.Errorf("run: flag -resume: %w", err)
		}
		if source == "" {
			source = rec.Source
		}
		*allow = *allow || rec.AllowUnpinned
	}
	var m *manifests.Resolved
	var err error
	if rec != nil && fs.Arg(0) == "" {
		m, err = loadRecorded(rec)
		if err != nil {
			return fmt.Errorf("resume %s: %w (give the manifest's path as an argument)", *resume, err)
		}
	} else if m, err = loadSource(source); err != nil {
		return err
	}
	plan, err := runner.Prepare(m, *allow)
	if err != nil {
		return err
	}
	opt := runner.Options{Out: *out, AllowUnpinned: *allow, Log: stderr, Shard: shard, Grace: *grace, ProgressEvery: *every, Progress: stderr, RetryErrors: *retryErrors}
	if m.Live() {
		if opt.Env, err = envFor(m); err != nil {
			return err
		}
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
		for n := 0; ; {
			select {
			case <-sigs:
				if n++; n == 2 {
					close(abort)
					return
				}
			case <-finished:
				return
			}
		}
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
	return analysis.WriteTable(stdout, sum.Cells)
}

// loadRecorded loads the manifest a bundle records: by its absolute path
// when that file exists (so a resume works from any directory), else by
// the path as it was given, relative to the current directory.
func loadRecorded(rec *results.Record) (*manifests.Resolved, error) {
	if rec.SourceAbs != "" {
		if _, err := os.Stat(rec.SourceAbs); err == nil {
			return loadSource(rec.SourceAbs)
		}
	}
	m, err := loadSource(rec.Source)
	if err != nil && rec.SourceAbs != "" {
		return nil, fmt.Errorf("%w (nor is it at %s)", err, rec.SourceAbs)
	}
	return m, err
}

// loadSource loads a manifest named as a bundle records it: a path, or
// builtin:NAME; "" is the built-in default.
func loadSource(source string) (*manifests.Resolved, error) {
	if name, ok := strings.CutPrefix(source, "builtin:"); ok {
		return manifests.LoadBuiltin(name)
	}
	return loadManifest(source)
}

func cmdAnalyze(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("analyze", stderr)
	asJSON := fs.Bool("json", false, `print {"bootstrap":…,"cells":[…],"pairs":[…]} as JSON`)
	sf := addStatFlags(fs, true)
	against := fs.String("against", "", `print a published table next to the counts: "paper" (the paper's Table II)`)
	partial := addPartialFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError("analyze takes one bundle directory")
	}
	opt, err := sf.options("analyze")
	if err != nil {
		return err
	}
	if *against != "" && *against != "paper" {
		return usageError("analyze: flag -against: unknown table %q (want paper)", *against)
	}
	dir := fs.Arg(0)
	info, err := readBundleInfo("analyze", dir, *partial)
	if err != nil {
		return err
	}
	ld, err := analysis.LoadBundle(dir, stderr)
	if err != nil {
		return err
	}
	acc, problems := ld.Acc, ld.Problems
	warning, err := checkPartial("analyze", info, acc.Decisions(), *partial)
	if err != nil {
		return err
	}
	cells := acc.Cells()
	an, err := acc.Analyze(opt)
	if err != nil {
		return usageError("analyze: flag -pair: %v", err)
	}
	var table *analysis.PaperTable
	var pc *analysis.PaperComparison
	if *against != "" {
		if table, pc, err = againstPaper(info, cells); err != nil {
			return err
		}
	}
	// Transport events and error decisions are reported apart from the
	// counts.
	ts := ld.Transport
	quality := ""
	if n := acc.Duplicates(); n > 0 {
		quality = fmt.Sprintf("data quality: %d decision rows repeat a decision already read (in both %s and %s); each is counted in the cells, only the first is paired", n, results.CallsFile, results.DecisionsFile)
	}
	if *asJSON {
		if ts.Empty() {
			ts = nil
		}
		var warnings []string
		if warning != "" {
			warnings = []string{warning}
		}
		if quality != "" {
			warnings = append(warnings, quality)
		}
		err = analysis.WriteAnalysisJSON(stdout, an, pc, ts, warnings)
	} else {
		if warning != "" {
			fmt.Fprintln(stdout, warningLine(warning, "the numbers below"))
		}
		if quality != "" {
			fmt.Fprintln(stdout, quality)
		}
		err = analysis.WriteTable(stdout, cells)
		if err == nil {
			fmt.Fprintln(stdout)
			err = analysis.WriteIntervals(stdout, an)
		}
		if err == nil && pc != nil {
			fmt.Fprintln(stdout)
			err = analysis.WriteAgainst(stdout, table, pc)
		}
		if err == nil {
			err = analysis.WriteTransport(stdout, ts)
		}
	}
	if err == nil && problems > 0 {
		err = fmt.Errorf("%s: %d problems in %s", dir, problems, results.CallsFile)
	}
	return err
}

// againstPaper sets the cells next to the paper's Table II, matching run
// models by label or by the backend model id recorded in manifest.json.
func againstPaper(info *analysis.BundleInfo, cells []results.Cell) (*analysis.PaperTable, *analysis.PaperComparison, error) {
	table, err := analysis.Paper()
	if err != nil {
		return nil, nil, err
	}
	return table, table.Against(cells, info.ModelIDs()), nil
}

// statFlags are the statistics flags of analyze, compare and report.
type statFlags struct {
	b      *int
	seed   *uint64
	pairs  *pairsFlag
	column *string
}

// pairsFlag collects the values of the repeatable -pair flag.
type pairsFlag []string

func (l *pairsFlag) String() string     { return strings.Join(*l, " ") }
func (l *pairsFlag) Set(s string) error { *l = append(*l, s); return nil }

// addStatFlags defines -b and -seed, and -pair and -column when pairs is
// set.
func addStatFlags(fs *flag.FlagSet, pairs bool) *statFlags {
	sf := &statFlags{
		b:    fs.Int("b", stats.DefaultB, "bootstrap resamples per interval (1 to 1000000)"),
		seed: fs.Uint64("seed", analysis.DefaultSeed, "bootstrap seed (recorded in the output)"),
	}
	if pairs {
		sf.pairs = &pairsFlag{}
		fs.Var(sf.pairs, "pair", "also compare condA,condB (A − B) within every model and prompt; repeatable; condA,condB,column names the column")
		sf.column = fs.String("column", "", "column of the -pair comparisons: strict, cover, retry, invalid, any_fs, terminal_fs (default strict)")
	}
	return sf
}

// options checks the flags and returns the analysis options.
func (sf *statFlags) options(cmd string) (analysis.Options, error) {
	opt := analysis.Options{B: *sf.b, Seed: *sf.seed}
	if *sf.b < 1 || *sf.b > 1000000 {
		return opt, usageError("%s: flag -b: want 1 to 1000000 resamples, got %d", cmd, *sf.b)
	}
	if *sf.seed == 0 {
		return opt, usageError("%s: flag -seed: want a seed ≥ 1", cmd)
	}
	if sf.pairs == nil {
		return opt, nil
	}
	col := analysis.Strict
	if *sf.column != "" {
		c, err := analysis.ParseColumn(*sf.column)
		if err != nil {
			return opt, usageError("%s: flag -column: %v", cmd, err)
		}
		if len(*sf.pairs) == 0 {
			return opt, usageError("%s: flag -column applies to -pair comparisons; give at least one -pair condA,condB", cmd)
		}
		col = c
	}
	for _, p := range *sf.pairs {
		spec, err := analysis.ParsePairSpec(p, col)
		if err != nil {
			return opt, usageError("%s: flag -pair: %v", cmd, err)
		}
		opt.Pairs = append(opt.Pairs, spec)
	}
	return opt, nil
}

var coordinateNames = map[string]string{
	"D": "failure detection", "P": "coarse policy", "C": "cause/subtype",
	"T": "repair target", "E": "executable repair", "R": "replay constraints",
}

func cmdProfile(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("profile", stderr)
	asJSON := fs.Bool("json", false, "print the table as JSON")
	manifest := fs.String("manifest", "", "manifest whose corpus to read (default: the built-in one)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError("profile takes no arguments")
	}
	m, err := loadManifest(*manifest)
	if err != nil {
		return err
	}
	ctrl := study.Summarize(m.Corpus.Scenarios, study.ControlView)
	cont := study.Summarize(m.Corpus.Scenarios, study.ContentView)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"control":      ctrl.Counts,
			"content":      cont.Counts,
			"profiles":     map[string]any{"control": ctrl.Profiles, "content": cont.Profiles},
			"incomparable": map[string]int{"control": ctrl.Incomparable, "content": cont.Incomparable},
		})
	}
	n := len(m.Corpus.Scenarios)
	fmt.Fprintf(stdout, "Separately coded capabilities for %d observations (coordinates are not cumulative).\n\n", n)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Capability\tControl\tContent-assisted")
	for _, c := range study.Coordinates {
		fmt.Fprintf(tw, "%s %s\t%d\t%d\n", c, coordinateNames[c], ctrl.Counts[c], cont.Counts[c])
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nProfiles (bits D/P/C/T/E/R):")
	for _, v := range []struct {
		name string
		s    study.ViewSummary
	}{{"control", ctrl}, {"content", cont}} {
		var parts []string
		for _, p := range v.s.SortedProfiles() {
			parts = append(parts, fmt.Sprintf("%s x%d", p, v.s.Profiles[p]))
		}
		fmt.Fprintf(stdout, "  %-8s %s\n", v.name, strings.Join(parts, ", "))
	}
	fmt.Fprintf(stdout, "\nIncomparable pairs: control %d, content %d\n", ctrl.Incomparable, cont.Incomparable)
	return nil
}

// envFor makes the environments of a study with replay: live. No lab
// environment is linked into this build yet (lab/labenv will be wired in
// here), so a live study is refused with a clear error before any call;
// the tests set it to a fake environment.
var envFor = func(m *manifests.Resolved) (simulator.EnvFactory, error) {
	return nil, fmt.Errorf("manifest %s: field replay: %q needs the lab environment, which this build of stress does not include", m.Source, manifests.ReplayLive)
}

func cmdRender(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("render", stderr)
	id := fs.String("scenario", "", "scenario id, e.g. S07 (required)")
	cond := fs.String("condition", "", fmt.Sprintf("condition, one of %v (required)", study.Conditions))
	promptFile := fs.String("prompt", "", "prompt template file (default: the manifest's first prompt)")
	manifest := fs.String("manifest", "", "manifest whose corpus and prompt to use (default: the built-in one)")
	replays := fs.Int("replays", 0, "also render this many replay messages (0 to 10)")
	observation := fs.String("observation", "", "render the replay messages as live replays returning the observation in JSON `FILE` (the prompt's live template)")
	policy := fs.String("policy", string(study.RetryNow), "with -observation: the policy the live replays executed")
	asJSON := fs.Bool("json", false, "print the messages as a JSON array")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError("render takes no arguments")
	}
	if *id == "" {
		return usageError("render: flag -scenario is required")
	}
	c := study.Condition(*cond)
	if !c.Valid() {
		return usageError("render: flag -condition: unknown condition %q (want one of %v)", *cond, study.Conditions)
	}
	if *replays < 0 || *replays > 10 {
		return usageError("render: flag -replays: want 0 to 10, got %d", *replays)
	}
	pol := study.Policy(*policy)
	if !pol.Valid() || pol == study.StopOrEscalate {
		return usageError("render: flag -policy: want a policy the harness executes (%v but stop_or_escalate), got %q", study.Policies, *policy)
	}
	var obs json.RawMessage
	if *observation != "" {
		b, err := os.ReadFile(*observation)
		if err == nil {
			b, err = input.Decode(b)
		}
		if err == nil && !json.Valid(b) {
			err = fmt.Errorf("%s: not valid JSON: %s", *observation, input.Snippet(string(b)))
		}
		if err != nil {
			return fmt.Errorf("render: flag -observation: %w", err)
		}
		obs = b
	}
	m, err := loadManifest(*manifest)
	if err != nil {
		return err
	}
	var s *study.Scenario
	for i := range m.Corpus.Scenarios {
		if m.Corpus.Scenarios[i].ID == *id {
			s = &m.Corpus.Scenarios[i]
		}
	}
	if s == nil {
		return usageError("render: flag -scenario: no scenario %q in corpus %s", *id, m.Corpus.Files[0].Path)
	}
	name, file, text := m.Prompts[0].Name, m.Prompts[0].Path, m.Prompts[0].Text
	if *promptFile != "" {
		b, err := os.ReadFile(*promptFile)
		if err == nil {
			if b, err = input.Decode(b); err != nil {
				err = fmt.Errorf("%s: %w", *promptFile, err)
			}
		}
		if err != nil {
			return fmt.Errorf("render: flag -prompt: %w", err)
		}
		name, file, text = filepath.Base(*promptFile), *promptFile, string(b)
	}
	p, err := conditions.ParsePrompt(name, file, text)
	if err != nil {
		return err
	}
	msgs, err := p.Initial(s, c)
	if err != nil {
		return err
	}
	for r := 1; r <= *replays; r++ {
		answer := `{"operation_status": "failed", "recovery_policy": "retry_now"}`
		next, err := p.Replayed(s, c, r)
		if obs != nil {
			answer = `{"operation_status": "failed", "recovery_policy": "` + string(pol) + `"}`
			next, err = p.Live(s, c, r, pol, obs)
		}
		if err != nil {
			return err
		}
		msgs = append(msgs, conditions.Message{Role: conditions.Assistant, Content: answer}, next)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(msgs)
	}
	return conditions.WriteMessages(stdout, msgs)
}
