// Package coder runs coders over a corpus: a model (any backend, through a
// coding prompt) or the capture rules (models/rules) code the
// actionability profile of every record, each bit with an evidence
// pointer, and the codings become a corpus that stress agree compares
// with another.
//
// A coding is a study the runner runs (runner.PrepareCoding): one decision
// of one call per (model, prompt, record), its request rendered by the
// coding template, so its bundle is a results bundle (manifest.json,
// calls.jsonl of every raw request and response, resume, pinning, the
// preflight check, the lock) and this package only reads its answers back
// into coded corpora.
package coder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/rules"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// codedDir is the directory of a coding bundle that holds one coded
// corpus per model and prompt: coded/<model>.<prompt>/.
const codedDir = "coded"

// Options tunes a coding run.
type Options struct {
	AllowUnpinned bool          // run models of pinned backends without a digest (recorded)
	RetryErrors   bool          // on resume, code again the records whose call failed for good
	Log           io.Writer     // messages (default io.Discard)
	Progress      io.Writer     // progress lines (nil: none)
	ProgressEvery time.Duration // between progress lines (default 10 s)
	Now           func() time.Time
}

// runner is the runner's options for a coding into dir. Note: an
// interrupt cancels the calls in flight at once (they are redone on
// resume), as it always did for a coding; a study's calls get a grace
// period.
func (o Options) runner(dir string) runner.Options {
	abort := make(chan struct{})
	close(abort)
	return runner.Options{Out: dir, AllowUnpinned: o.AllowUnpinned, RetryErrors: o.RetryErrors, Log: o.Log,
		Progress: o.Progress, ProgressEvery: o.ProgressEvery, Now: o.Now, Abort: abort}
}

// plan is a coding run ready to start.
type plan struct {
	m   *manifests.Resolved
	run *runner.Plan
}

// Prepare checks a coding manifest and builds its coders: a coding
// manifest is a study manifest whose prompts are coding templates
// (defining "system" and "user"), with conditions [normalized], 1
// replicate and stored replay; a model with backend "rules" is the rules
// coder. The runner runs it as a study of one turn (replay_cap 0) whose
// `format: schema` is the coding answer's schema.
func Prepare(m *manifests.Resolved, allowUnpinned bool) (*plan, error) {
	var errs []error
	if len(m.Conditions) != 1 || m.Conditions[0] != study.Normalized {
		errs = append(errs, fmt.Errorf("manifest %s: field conditions: a coding manifest codes the client-normalized observation: want [normalized]", m.Source))
	}
	if m.Replicates != 1 {
		errs = append(errs, fmt.Errorf("manifest %s: field replicates: a coding manifest codes each record once: want 1, got %d", m.Source, m.Replicates))
	}
	if m.ReplayCap != nil && *m.ReplayCap != 0 {
		errs = append(errs, fmt.Errorf("manifest %s: field replay_cap: a coding is one call per record: want 0 or none, got %d", m.Source, *m.ReplayCap))
	}
	if m.Live() {
		errs = append(errs, fmt.Errorf("manifest %s: field replay: a coding manifest codes the stored observation: want %q (the default)", m.Source, manifests.ReplayStored))
	}
	t := &task{rules: map[string]bool{}, prompts: map[string]*templateSet{}}
	// Note: the runner runs a copy of the manifest (recorded in
	// manifest.json) with replay_cap 0 and the coding schema for format
	// schema; its sha256 stays the file's, which a resume checks.
	cm := *m
	cm.Models = slices.Clone(m.Models)
	zero := 0
	cm.ReplayCap = &zero
	cm.Task = manifests.TaskCode
	for i, md := range m.Models {
		if md.Backend == rules.Backend {
			if err := rulesFields(m.Source, i, md); err != nil {
				errs = append(errs, err)
			}
			t.rules[md.Name] = true
		}
		if md.Format == "schema" {
			cm.Models[i].Format = schema()
		}
	}
	for i, pf := range m.Prompts {
		ts, err := parsePrompt(pf.Name, pf.Text)
		if err != nil {
			errs = append(errs, fmt.Errorf("manifest %s: field prompts[%d]: %s: %w", m.Source, i, pf.Path, err))
			continue
		}
		t.prompts[pf.Name] = ts
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	run, err := runner.PrepareCoding(&cm, allowUnpinned, t)
	if err != nil {
		return nil, err
	}
	return &plan{m: m, run: run}, nil
}

// task renders a coding's request: the record for the rules coder
// (rules.Request), the coding template of the decision's prompt for a
// model.
type task struct {
	rules   map[string]bool         // the manifest's rules coders, by name
	prompts map[string]*templateSet // by prompt name
}

var _ simulator.Coder = (*task)(nil)

// Messages renders the request of coding k of record s.
func (t *task) Messages(k simulator.Key, s *study.Scenario) ([]models.Message, error) {
	if t.rules[k.Model] {
		return rules.Request(s), nil
	}
	return t.prompts[k.Prompt].Render(s)
}

// rulesFields refuses a rules coder (models[i] of the manifest at source)
// that names a model: a model id other than rules.Model, or a field that
// only addresses a model (digest, host, endpoints, format, options,
// api_key_env, pin). The rules would ignore them, and the coding would
// pass for the model's.
func rulesFields(source string, i int, md manifests.Model) error {
	var errs []error
	if md.Model != rules.Model {
		errs = append(errs, fmt.Errorf("manifest %s: field models[%d].model: backend %s is the capture rules (coding/rules), which call no model: want %s, got %s",
			source, i, rules.Backend, rules.Model, input.Quote(md.Model)))
	}
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"digest", md.Digest != ""}, {"host", md.Host != ""}, {"endpoints", len(md.Endpoints) > 0}, {"format", md.Format != nil && md.Format != ""},
		{"options", len(md.Options) > 0}, {"api_key_env", md.APIKeyEnv != ""}, {"pin", md.Pin != (manifests.Pin{})},
	} {
		if f.set {
			set = append(set, f.name)
		}
	}
	if len(set) > 0 {
		errs = append(errs, fmt.Errorf("manifest %s: field models[%d]: backend %s calls no model, so it takes no %s",
			source, i, rules.Backend, strings.Join(set, ", ")))
	}
	return errors.Join(errs...)
}

// Summary says what a coding run produced, per coder and prompt.
type Summary struct {
	Dir    string
	Coders []coderSummary
}

// coderSummary is one (model, prompt)'s outcome.
type coderSummary struct {
	Model, Prompt string
	Records       int      // records of the corpus
	Coded         int      // valid codings, in Corpus
	Invalid       []string // "ID: why" for answers that are not codings
	Errors        int      // calls that failed for good
	Corpus        string   // the coded corpus' directory ("" when nothing was coded)
}

// Run codes every record with every coder into a new bundle at dir (which
// must not exist or be empty).
func (p *plan) Run(ctx context.Context, dir string, opt Options) (*Summary, error) {
	_, sum, err := p.run.Run(ctx, opt.runner(dir))
	return p.finish(dir, sum, err)
}

// Resume continues the coding bundle at dir: the codings it holds are
// kept (those whose call failed for good are redone with RetryErrors), a
// torn tail is cut off, and the rest are coded (runner.Plan.Resume). The
// manifest, corpus and prompts must be those the bundle records. A
// coding bundle of an earlier version is refused (refuseV1).
func (p *plan) Resume(ctx context.Context, dir string, opt Options) (*Summary, error) {
	if err := refuseV1(dir); err != nil {
		return nil, err
	}
	sum, err := p.run.Resume(ctx, dir, opt.runner(""))
	return p.finish(dir, sum, err)
}

// AllowedUnpinned reports whether the coding bundle at dir allowed
// unpinned models (its resume allows them too).
func AllowedUnpinned(dir string) (bool, error) {
	if err := refuseV1(dir); err != nil {
		return false, err
	}
	rec, err := results.ReadRecord(dir)
	if err != nil {
		return false, err
	}
	return rec.AllowUnpinned, nil
}

// finish reads the answers of the bundle at dir, which the runner ended
// with sum and err, into its coded corpora.
func (p *plan) finish(dir string, sum *results.Summary, err error) (*Summary, error) {
	if errors.Is(err, runner.ErrInterrupted) {
		return nil, fmt.Errorf("coding %w; resume with: stress code -resume %s", err, dir)
	}
	if err != nil {
		return nil, err
	}
	lock, err := results.LockBundle(dir, "stress code")
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	file := filepath.Join(dir, results.CallsFile)
	f, err := input.OpenStream(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	answers := map[[3]string]answer{}
	gr := results.NewGroupReader(f, file)
	for gr.Next() {
		g := gr.Group()
		h := &g.Heads[len(g.Heads)-1]
		answers[[3]string{g.Key.Model, g.Key.Prompt, g.Key.Scenario}] = answer{text: h.Response, failed: h.Error != ""}
	}
	if err := gr.Err(); err != nil {
		return nil, err
	}
	return p.corpora(dir, answers)
}

// answer is a coding's answer: the response of its call, or a call that
// failed for good.
type answer struct {
	text   string
	failed bool
}

// corpora writes, for every coder and prompt, the records whose answer
// (by model, prompt and record) is a valid coding as a corpus under
// codedDir, and says what each coded.
func (p *plan) corpora(dir string, answers map[[3]string]answer) (*Summary, error) {
	sum := &Summary{Dir: dir}
	for _, md := range p.m.Models {
		for _, pf := range p.m.Prompts {
			cs := coderSummary{Model: md.Name, Prompt: pf.Name, Records: len(p.m.Corpus.Scenarios)}
			var recs []study.Scenario
			for _, s := range p.m.Corpus.Scenarios {
				a := answers[[3]string{md.Name, pf.Name, s.ID}]
				if a.failed {
					cs.Errors++
					continue
				}
				prof, err := parseAnswer(a.text, s.Observation)
				if err != nil {
					cs.Invalid = append(cs.Invalid, s.ID+": "+strings.ReplaceAll(err.Error(), "\n", "; "))
					continue
				}
				s.Profile = prof
				coder := "model:" + md.Name
				if md.Backend == rules.Backend {
					coder = rules.Backend
				}
				s.Coding = &study.Coding{Coder: coder, Coded: []string{study.FieldProfile}}
				recs = append(recs, s)
			}
			cs.Coded = len(recs)
			if len(recs) > 0 {
				out := filepath.Join(dir, codedDir, md.Name+"."+pf.Name)
				if err := os.RemoveAll(out); err != nil {
					return nil, err
				}
				if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
					return nil, err
				}
				if err := study.WriteCorpus(out, recs); err != nil {
					return nil, fmt.Errorf("writing the corpus of %s/%s: %w", md.Name, pf.Name, err)
				}
				cs.Corpus = out
			}
			sum.Coders = append(sum.Coders, cs)
		}
	}
	return sum, nil
}
