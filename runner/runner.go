// Package runner runs a resolved study manifest: every (model, prompt,
// condition, scenario, replicate) decision through the simulator, streamed
// into a results bundle, then the counts.
//
// Decisions run concurrently (per-model parallelism per endpoint, a global
// cap) and are appended to calls.jsonl as they finish; the outcome of a
// decision depends only on its key and the seeds, so the bundle does not
// depend on scheduling. calls.jsonl is the source of truth: a run killed at
// any instant is continued by Resume, and when a session ends the bundle is
// rewritten in canonical order (model, prompt, condition, scenario,
// replicate) with decisions.parquet and summary.json rebuilt from it.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// Options tunes a run.
type Options struct {
	// Out is the bundle directory; "" means results/<run-id> under ResultsRoot.
	Out string
	// ResultsRoot is where run directories go when Out is "" (default "results").
	ResultsRoot string
	// AllowUnpinned lets models of pinned backends run without a digest; it
	// is recorded in the bundle.
	AllowUnpinned bool
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// RunID names a new run (default: the UTC start time to the
	// millisecond, a random suffix and the manifest's name, unique by
	// construction). A given RunID is used as it is.
	RunID string
	// Log receives messages: the run's start, error decisions, resume
	// facts (default io.Discard).
	Log io.Writer
	// Shard runs only a 1/N slice of the decisions (zero: all of them).
	Shard results.Shard
	// Scheduler is the cluster job and task the run is one shard of
	// (stress run -shard auto), recorded in the bundle; nil for none.
	Scheduler *results.Scheduler
	// RetryErrors, on resume, redoes the error decisions (calls that failed
	// for good) instead of keeping them.
	RetryErrors bool
	// Grace is how long calls in flight may finish after ctx ends before
	// they are cancelled (default 30 s); their decisions are redone on
	// resume.
	Grace time.Duration
	// Abort, when closed, cancels calls in flight at once (e.g. a second
	// Ctrl-C).
	Abort <-chan struct{}
	// Progress receives progress reports (nil: none).
	Progress io.Writer
	// Terminal says Progress is a terminal: one live line, redrawn.
	Terminal bool
	// Width is the terminal's width in columns, to cut the live line (0:
	// unknown).
	Width int
	// ProgressEvery is the interval between progress reports (default 10 s,
	// or 250 ms on a terminal).
	ProgressEvery time.Duration
	// SyncEvery is the interval between fsyncs of calls.jsonl (default 1 s):
	// at most that much work is lost to a power failure.
	SyncEvery time.Duration
	// Env makes the environments of a study with live replay (manifest
	// replay: live), one per decision: env.Open(manifest) gives the one
	// its environment field names.
	// A live study without it is refused before any call; a stored one
	// ignores it.
	Env simulator.EnvFactory
	// FitProcs lowers GOMAXPROCS to one processor per 8 calls in flight
	// while the study's decisions run, when that is fewer and every
	// model's backend waits on a server or process
	// (models.Backend.Waits), and restores it for the finish. Idle
	// processors look for work before they sleep: at 1 call in flight on
	// two cores that spinning took a third of the run's CPU time. It
	// changes the whole process: stress run sets it.
	FitProcs bool
}

// checkEnv refuses a live study without an environment factory.
func (p *Plan) checkEnv(opt Options) error {
	if p.m.Live() && opt.Env == nil {
		return fmt.Errorf("manifest %s: field replay: %q needs an environment for each decision (runner.Options.Env, e.g. env.Open's), and none was given", p.m.Source, manifests.ReplayLive)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Grace <= 0 {
		o.Grace = 30 * time.Second
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 10 * time.Second
		if o.Terminal {
			o.ProgressEvery = 250 * time.Millisecond
		}
	}
	if o.SyncEvery <= 0 {
		o.SyncEvery = time.Second
	}
	return o
}

// ErrInterrupted is returned (wrapped) by Run and Resume when the context
// ended before every decision was done; the bundle is consistent and can be
// resumed.
var ErrInterrupted = errors.New("run interrupted")

// Plan is a run ready to start: its models built and prompts parsed.
type Plan struct {
	m *manifests.Resolved
	// endpoints holds, per manifest model, one instance per endpoint (a
	// single one for a model with a host or no server).
	endpoints [][]models.Model
	prompts   []*conditions.Prompt
	unpinned  []string
	allow     bool
	proposed  bool                           // allowed to run on proposed (unconfirmed) coding
	unconf    []string                       // ids of the corpus' unconfirmed records
	checks    map[string]*results.ModelCheck // from Preflight
	checked   bool
	coder     simulator.Coder // renders every request of task code (PrepareCoding); nil: the prompts do
}

// Prepare checks the manifest against the backend registry and pinning
// rules, builds the models and parses the prompt templates, all before any
// call or any file is written. It refuses a corpus with proposed
// (unconfirmed) coding (PrepareWith allows it).
func Prepare(m *manifests.Resolved, allowUnpinned bool) (*Plan, error) {
	return PrepareWith(m, Allow{Unpinned: allowUnpinned})
}

// Allow lifts Prepare's refusals; each lifted one is recorded in the
// bundle.
type Allow struct {
	Unpinned bool // models of pinned backends without a digest
	Proposed bool // a corpus whose coding no person has confirmed
}

// PrepareWith is Prepare with the refusals allow lifts.
func PrepareWith(m *manifests.Resolved, allow Allow) (*Plan, error) {
	return prepare(m, allow, nil)
}

// PrepareCoding is Prepare for a study of task code (simulator.Coding:
// the model coder's codings): c renders every request, so the manifest's
// prompts are its templates, not conditions', and its answers are no
// policies, so a corpus with proposed coding is not refused.
func PrepareCoding(m *manifests.Resolved, allowUnpinned bool, c simulator.Coder) (*Plan, error) {
	return prepare(m, Allow{Unpinned: allowUnpinned}, c)
}

func prepare(m *manifests.Resolved, allow Allow, c simulator.Coder) (*Plan, error) {
	p := &Plan{m: m, allow: allow.Unpinned, proposed: allow.Proposed, coder: c}
	var errs []error
	if un := m.Corpus.Unconfirmed(); len(un) > 0 {
		for _, u := range un {
			p.unconf = append(p.unconf, u.ID)
		}
		if !allow.Proposed && c == nil {
			errs = append(errs, fmt.Errorf("manifest %s: field corpus: %s; confirm them (stress confirm, stress adjudicate) or pass -allow-proposed", m.Source, study.UnconfirmedError(un)))
		}
	}
	allowUnpinned := allow.Unpinned
	for i, md := range m.Models {
		b, unpinned, err := models.LookupModel(m.Source, i, md, allowUnpinned)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if unpinned {
			p.unpinned = append(p.unpinned, md.Name)
		}
		var insts []models.Model
		for e, host := range md.Hosts() {
			model, err := b.New(models.SpecOf(md, host))
			if err != nil {
				field := fmt.Sprintf("models[%d]", i)
				if len(md.Endpoints) > 0 {
					field = fmt.Sprintf("models[%d].endpoints[%d]", i, e)
				}
				errs = append(errs, fmt.Errorf("manifest %s: %s: %w", m.Source, field, err))
				break
			}
			insts = append(insts, model)
		}
		if len(insts) != len(md.Hosts()) {
			continue
		}
		p.endpoints = append(p.endpoints, insts)
	}
	for i, pf := range m.Prompts {
		if c != nil {
			p.prompts = append(p.prompts, nil)
			continue
		}
		pr, err := conditions.ParsePrompt(pf.Name, pf.Path, pf.Text)
		if err != nil {
			errs = append(errs, fmt.Errorf("manifest %s: %w", m.Source, err))
			continue
		}
		if m.Live() && !pr.HasLive() {
			errs = append(errs, fmt.Errorf("manifest %s: field prompts[%d].path: %s defines no \"live\" template, which replay: live renders its replay messages with", m.Source, i, pf.Path))
			continue
		}
		if m.Act() && !pr.ShowsTools() {
			errs = append(errs, fmt.Errorf("manifest %s: field prompts[%d].path: %s: task: act needs a \"user\" template that shows .Tools and .Call (see manifests/prompts/act.tmpl)", m.Source, i, pf.Path))
			continue
		}
		p.prompts = append(p.prompts, pr)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// Unconfirmed returns the ids of the corpus records whose coding is
// proposed, not confirmed (a run needs -allow-proposed).
func (p *Plan) Unconfirmed() []string { return p.unconf }

// Decisions is the number of decisions of the whole study.
func (p *Plan) Decisions() int {
	m := p.m
	return len(m.Models) * len(m.Prompts) * len(m.Conditions) * len(m.Corpus.Scenarios) * m.Replicates
}

// scenarioIDs lists the corpus' scenario ids in order.
func (p *Plan) scenarioIDs() []string {
	ids := make([]string, len(p.m.Corpus.Scenarios))
	for i := range p.m.Corpus.Scenarios {
		ids[i] = p.m.Corpus.Scenarios[i].ID
	}
	return ids
}

// preflight runs the plan's preflight once (see Preflight).
func (p *Plan) preflight(ctx context.Context, log io.Writer) error {
	if p.checked {
		return nil
	}
	if err := p.Preflight(ctx, log); err != nil {
		return err
	}
	p.checked = true
	return nil
}

// Run executes the plan into a new bundle and returns its directory and
// summary. A decision whose call fails for good is recorded as an error
// decision and the run goes on; a failure to write the bundle stops the
// run. When ctx ends, no new decision starts, calls in flight get
// opt.Grace to finish, the bundle is written, and the error wraps
// ErrInterrupted: Resume continues it.
func (p *Plan) Run(ctx context.Context, opt Options) (dir string, sum *results.Summary, err error) {
	opt = opt.withDefaults()
	m := p.m
	if err := p.checkEnv(opt); err != nil {
		return "", nil, err
	}
	if err := p.preflight(ctx, opt.Log); err != nil {
		return "", nil, err
	}
	started := opt.Now().UTC()
	dir, runID, lock, err := createBundle(opt.Out, opt.ResultsRoot, opt.RunID, started, m.Name, "stress run")
	if err != nil {
		return dir, nil, err
	}
	defer lock.Unlock()
	sp := newSpace(&m.Manifest, p.scenarioIDs(), opt.Shard)
	rec := &results.Record{RunID: runID, Manifest: m.Manifest, ReplayCap: m.Cap(), Source: m.Source, ManifestSHA256: m.SHA256,
		CorpusFiles: m.Corpus.Files, Binary: results.BinaryInfo(), AllowUnpinned: p.allow,
		AllowProposed: p.proposed, Unconfirmed: p.unconf,
		Unpinned: p.unpinned, Models: p.checks, Decisions: sp.count(), Started: started,
		Scenarios: sp.scenarios, Remaining: sp.count()}
	if opt.Shard.N > 1 {
		sh := opt.Shard
		rec.Shard = &sh
	}
	rec.Scheduler = opt.Scheduler
	if !strings.HasPrefix(m.Source, "builtin:") {
		if abs, err := filepath.Abs(m.Source); err == nil && abs != m.Source {
			rec.SourceAbs = abs
		}
	}
	for _, pf := range m.Prompts {
		rec.Prompts = append(rec.Prompts, results.PromptRecord{Name: pf.Name, Path: pf.Path, SHA256: pf.SHA256})
	}
	rec.Sessions = []results.Session{{Started: started, Binary: rec.Binary}}
	rec.Format = results.Format
	// The session's first checkpoint writes manifest.json, before any
	// call line.
	shard := ""
	if rec.Shard != nil {
		shard = fmt.Sprintf(" (shard %s of %d)", rec.Shard, sp.total())
	}
	fmt.Fprintf(opt.Log, "run %s: %d decisions%s into %s\n", runID, rec.Decisions, shard, dir)
	idx, err := newLocTable(dir, sp.count())
	if err != nil {
		return dir, nil, err
	}
	defer idx.Close()
	s := &session{p: p, dir: dir, rec: rec, sp: sp, idx: idx, opt: opt}
	sum, err = s.run(ctx)
	return dir, sum, err
}
