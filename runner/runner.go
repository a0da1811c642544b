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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
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
	Shard Shard
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

// Record is what manifest.json holds: the resolved manifest and the facts
// needed to reproduce or audit the run.
type Record struct {
	RunID     string             `json:"run_id"`
	Manifest  manifests.Manifest `json:"manifest"`
	ReplayCap int                `json:"replay_cap"`
	Source    string             `json:"source"`
	// SourceAbs is Source as an absolute path, when it is a file: a resume
	// from another directory finds the manifest by it.
	SourceAbs      string         `json:"source_abs,omitempty"`
	ManifestSHA256 string         `json:"manifest_sha256"`
	CorpusFiles    []study.File   `json:"corpus_files"`
	Prompts        []PromptRecord `json:"prompts"`
	Binary         Binary         `json:"binary"`
	AllowUnpinned  bool           `json:"allow_unpinned"`
	Unpinned       []string       `json:"unpinned_models,omitempty"`
	// Models holds what each model\'s server reported before the run.
	Models map[string]*ModelCheck `json:"model_checks,omitempty"`
	// Decisions is the number of decisions the bundle holds when complete
	// (its shard's share of the study).
	Decisions int        `json:"decisions"`
	Started   time.Time  `json:"started"`
	Finished  *time.Time `json:"finished,omitempty"` // set when no decision remains
	// Shard is the slice of the study the bundle runs (nil: all of it).
	Shard *Shard `json:"shard,omitempty"`
	// Scenarios are the corpus' scenario ids in order, to enumerate the
	// study's decisions without the corpus (merge).
	Scenarios []string `json:"scenarios"`
	// Completed and Remaining count the bundle's decisions done and to do,
	// as of the end of the last session.
	Completed int `json:"completed"`
	Remaining int `json:"remaining"`
	// CallsDurable is how many bytes of calls.jsonl are known to be on
	// stable storage, updated after each fsync while a session runs (nil:
	// not recorded, a bundle of an older version). A resume treats damage
	// past it as a torn tail and damage within it as tampering.
	CallsDurable *int64 `json:"calls_durable_bytes,omitempty"`
	// Sessions are the runs that wrote the bundle: the first, then each
	// resume.
	Sessions []Session `json:"sessions,omitempty"`
	// MergedFrom lists the shard bundles a merged bundle was built from.
	MergedFrom []MergedShard `json:"merged_from,omitempty"`
}

// Session is one run or resume of a bundle.
type Session struct {
	Started     time.Time  `json:"started"`
	Ended       *time.Time `json:"ended,omitempty"` // nil: the session was killed
	Binary      Binary     `json:"binary"`
	Ran         int        `json:"ran"`                       // decisions completed in the session (while it runs or if killed: those known durable)
	Redone      int        `json:"redone,omitempty"`          // interrupted decisions found at its start, run again
	Discarded   int64      `json:"discarded_bytes,omitempty"` // torn tail of calls.jsonl cut off at its start
	Interrupted bool       `json:"interrupted,omitempty"`     // it stopped before the end
}

// MergedShard identifies one shard bundle of a merge.
type MergedShard struct {
	Dir      string                 `json:"dir"`
	RunID    string                 `json:"run_id"`
	Shard    Shard                  `json:"shard"`
	Binary   Binary                 `json:"binary"`
	Models   map[string]*ModelCheck `json:"model_checks,omitempty"`
	Sessions []Session              `json:"sessions,omitempty"`
}

// PromptRecord identifies a prompt template by name, path and hash.
type PromptRecord struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Binary describes the program that ran the study.
type Binary struct {
	Module    string `json:"module"`
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	Revision  string `json:"vcs_revision,omitempty"`
	Modified  bool   `json:"vcs_modified,omitempty"`
	// SHA256 is the hash of the executable file, which identifies the
	// build even when it carries no VCS stamp (go run, -buildvcs=false).
	SHA256 string `json:"sha256,omitempty"`
}

// Summary is what summary.json holds.
type Summary struct {
	RunID     string `json:"run_id"`
	Decisions int    `json:"decisions"`
	Errors    int    `json:"errors"`
	Calls     int    `json:"calls"`
	// TransportEvents counts the transport faults recorded in calls.jsonl
	// (retried or fatal); they are never answers.
	TransportEvents int `json:"transport_events"`
	// Remaining is the number of decisions not yet done (interrupted run).
	Remaining int             `json:"remaining,omitempty"`
	Cells     []analysis.Cell `json:"cells"`
}

// BinaryInfo reads the running binary's build information and the sha256
// of its executable (computed once per process).
func BinaryInfo() Binary {
	b := Binary{Module: "github.com/mcpstress/stress", Version: "(unknown)", SHA256: executableSHA256()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Module, b.Version, b.GoVersion = bi.Main.Path, bi.Main.Version, bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// executableSHA256 hashes the running executable; "" when it cannot be
// read.
var executableSHA256 = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
})

// Plan is a run ready to start: its models built and prompts parsed.
type Plan struct {
	m *manifests.Resolved
	// endpoints holds, per manifest model, one instance per endpoint (a
	// single one for a model with a host or no server).
	endpoints [][]models.Model
	prompts   []*conditions.Prompt
	unpinned  []string
	allow     bool
	checks    map[string]*ModelCheck // from Preflight
	checked   bool
}

// Prepare checks the manifest against the backend registry and pinning
// rules, builds the models and parses the prompt templates, all before any
// call or any file is written.
func Prepare(m *manifests.Resolved, allowUnpinned bool) (*Plan, error) {
	p := &Plan{m: m, allow: allowUnpinned}
	var errs []error
	for i, md := range m.Models {
		b, err := models.Lookup(md.Backend)
		if err != nil {
			errs = append(errs, fmt.Errorf("manifest %s: field models[%d].backend: %w", m.Source, i, err))
			continue
		}
		if b.Pinned && md.Digest == "" {
			if !allowUnpinned {
				errs = append(errs, fmt.Errorf("manifest %s: field models[%d].digest: model %q (%s) has no digest; pin it (see `stress models`) or pass -allow-unpinned", m.Source, i, md.Name, md.Model))
				continue
			}
			p.unpinned = append(p.unpinned, md.Name)
		}
		var insts []models.Model
		for e, host := range md.Hosts() {
			model, err := b.New(models.Spec{Name: md.Name, Backend: md.Backend, Model: md.Model, Digest: md.Digest, Host: host, Format: md.Format, Options: md.Options, Transport: md.Transport, APIKeyEnv: md.APIKeyEnv, Pin: md.Pin})
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
	for _, pf := range m.Prompts {
		pr, err := conditions.ParsePrompt(pf.Name, pf.Path, pf.Text)
		if err != nil {
			errs = append(errs, fmt.Errorf("manifest %s: %w", m.Source, err))
			continue
		}
		p.prompts = append(p.prompts, pr)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

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
func (p *Plan) Run(ctx context.Context, opt Options) (dir string, sum *Summary, err error) {
	opt = opt.withDefaults()
	m := p.m
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
	rec := &Record{RunID: runID, Manifest: m.Manifest, ReplayCap: m.Cap(), Source: m.Source, ManifestSHA256: m.SHA256,
		CorpusFiles: m.Corpus.Files, Binary: BinaryInfo(), AllowUnpinned: p.allow,
		Unpinned: p.unpinned, Models: p.checks, Decisions: sp.count(), Started: started,
		Scenarios: sp.scenarios, Remaining: sp.count()}
	if !opt.Shard.whole() {
		sh := opt.Shard
		rec.Shard = &sh
	}
	if !strings.HasPrefix(m.Source, "builtin:") {
		if abs, err := filepath.Abs(m.Source); err == nil && abs != m.Source {
			rec.SourceAbs = abs
		}
	}
	for _, pf := range m.Prompts {
		rec.Prompts = append(rec.Prompts, PromptRecord{Name: pf.Name, Path: pf.Path, SHA256: pf.SHA256})
	}
	rec.Sessions = []Session{{Started: started, Binary: rec.Binary}}
	if err := results.WriteJSON(filepath.Join(dir, results.ManifestFile), rec); err != nil {
		return dir, nil, err
	}
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
