// Package runner runs a resolved study manifest: every (model, prompt,
// condition, scenario, replicate) decision through the simulator, streamed
// into a results bundle, then the counts.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/mcpstress/stress/analysis"
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
	// Log receives progress lines (default io.Discard).
	Log io.Writer
}

// Record is what manifest.json holds: the resolved manifest and the facts
// needed to reproduce or audit the run.
type Record struct {
	RunID          string             `json:"run_id"`
	Manifest       manifests.Manifest `json:"manifest"`
	ReplayCap      int                `json:"replay_cap"`
	Source         string             `json:"source"`
	ManifestSHA256 string             `json:"manifest_sha256"`
	CorpusFiles    []study.File       `json:"corpus_files"`
	Prompts        []PromptRecord     `json:"prompts"`
	Binary         Binary             `json:"binary"`
	AllowUnpinned  bool               `json:"allow_unpinned"`
	Unpinned       []string           `json:"unpinned_models,omitempty"`
	// Models holds what each model\'s server reported before the run.
	Models    map[string]*ModelCheck `json:"model_checks,omitempty"`
	Decisions int                    `json:"decisions"`
	Started   time.Time              `json:"started"`
	Finished  *time.Time             `json:"finished,omitempty"`
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
}

// Summary is what summary.json holds.
type Summary struct {
	RunID     string          `json:"run_id"`
	Decisions int             `json:"decisions"`
	Errors    int             `json:"errors"`
	Calls     int             `json:"calls"`
	Cells     []analysis.Cell `json:"cells"`
}

// BinaryInfo reads the running binary's build information.
func BinaryInfo() Binary {
	b := Binary{Module: "github.com/mcpstress/stress", Version: "(unknown)"}
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

// Plan is a run ready to start: its models built and prompts parsed.
type Plan struct {
	m        *manifests.Resolved
	models   []models.Model
	prompts  []*conditions.Prompt
	unpinned []string
	allow    bool
	checks   map[string]*ModelCheck // from Preflight
	checked  bool
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
		model, err := b.New(models.Spec{Name: md.Name, Backend: md.Backend, Model: md.Model, Digest: md.Digest, Host: md.Host, Format: md.Format, Options: md.Options, Transport: md.Transport, APIKeyEnv: md.APIKeyEnv, Pin: md.Pin})
		if err != nil {
			errs = append(errs, fmt.Errorf("manifest %s: models[%d]: %w", m.Source, i, err))
			continue
		}
		p.models = append(p.models, model)
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

// Decisions is the number of decisions the plan will run.
func (p *Plan) Decisions() int {
	m := p.m
	return len(m.Models) * len(m.Prompts) * len(m.Conditions) * len(m.Corpus.Scenarios) * m.Replicates
}

// Run executes the plan into a new bundle and returns its directory and
// summary. A decision whose call fails is recorded as an error decision and
// the run goes on; a failure to write the bundle stops the run.
func (p *Plan) Run(ctx context.Context, opt Options) (dir string, sum *Summary, err error) {
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	log := opt.Log
	if log == nil {
		log = io.Discard
	}
	m := p.m
	if !p.checked {
		if err := p.Preflight(ctx, log); err != nil {
			return "", nil, err
		}
		p.checked = true
	}
	started := now().UTC()
	runID := started.Format("20060102T150405Z") + "-" + m.Name
	dir = opt.Out
	if dir == "" {
		root := opt.ResultsRoot
		if root == "" {
			root = "results"
		}
		dir = filepath.Join(root, runID)
	}
	w, err := results.Create(dir)
	if err != nil {
		return dir, nil, err
	}
	rec := Record{RunID: runID, Manifest: m.Manifest, ReplayCap: m.Cap(), Source: m.Source, ManifestSHA256: m.SHA256,
		CorpusFiles: m.Corpus.Files, Binary: BinaryInfo(), AllowUnpinned: p.allow,
		Unpinned: p.unpinned, Models: p.checks, Decisions: p.Decisions(), Started: started}
	for _, pf := range m.Prompts {
		rec.Prompts = append(rec.Prompts, PromptRecord{Name: pf.Name, Path: pf.Path, SHA256: pf.SHA256})
	}
	if err := w.WriteJSON(results.ManifestFile, rec); err != nil {
		w.Close()
		return dir, nil, err
	}
	fmt.Fprintf(log, "run %s: %d decisions into %s\n", runID, rec.Decisions, dir)

	tally := analysis.NewTally()
	sum = &Summary{RunID: runID}
	err = p.each(ctx, func(d *simulator.Decision, s *study.Scenario) error {
		if err := w.Add(d, s); err != nil {
			return err
		}
		row := results.RowOf(d)
		tally.Add(&row)
		sum.Decisions++
		sum.Calls += len(d.Turns)
		if d.Err != nil {
			sum.Errors++
			fmt.Fprintf(log, "error: decision %s: %v\n", d.Key, d.Err)
		}
		return nil
	})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return dir, nil, err
	}
	sum.Cells = tally.Cells()
	if err := w.WriteJSON(results.SummaryFile, sum); err != nil {
		return dir, nil, err
	}
	fin := now().UTC()
	rec.Finished = &fin
	if err := w.WriteJSON(results.ManifestFile, rec); err != nil {
		return dir, nil, err
	}
	return dir, sum, nil
}

// each runs every decision in manifest order and hands it to add.
func (p *Plan) each(ctx context.Context, add func(*simulator.Decision, *study.Scenario) error) error {
	m := p.m
	for mi, md := range m.Models {
		cfg := simulator.Config{StudySeed: m.Seed, Temperature: m.Temperature, ReplayCap: m.Cap(), Options: md.Options}
		for _, pr := range p.prompts {
			for _, cond := range m.Conditions {
				for si := range m.Corpus.Scenarios {
					s := &m.Corpus.Scenarios[si]
					for rep := 1; rep <= m.Replicates; rep++ {
						if err := ctx.Err(); err != nil {
							return fmt.Errorf("run interrupted: %w", err)
						}
						key := simulator.Key{Model: md.Name, Prompt: pr.Name, Condition: cond, Scenario: s.ID, Replicate: rep}
						d := simulator.Run(ctx, p.models[mi], pr, s, key, cfg)
						if err := add(&d, s); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return nil
}
