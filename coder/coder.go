// Package coder runs coders over a corpus: a model (any backend, through a
// coding prompt) or the capture rules (coding/rules) code the actionability
// profile of every record, each bit with an evidence pointer, and the
// codings become a corpus that stress agree compares with another.
//
// It is a small driver beside runner, not a study: a coding is one call per
// (model, prompt, record), with no conditions, replicates or replays, and
// its answer is a coding, not a policy, so neither the simulator's
// trajectory nor its scoring applies. It reuses what makes a run
// auditable: the models and their transport (retries, transport events,
// credential scrubbing), the pinning rule and the preflight check, the
// bundle lock (results.LockBundle), and a calls.jsonl of every raw request
// and response, fsynced line by line, from which an interrupted coding
// resumes.
package coder

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpstress/stress/coding/rules"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// RulesBackend is the backend name of the rules coder: the capture rules
// (coding/rules) instead of a model. It takes no prompt.
const RulesBackend = "rules"

// RulesModel is the model id a rules coder gives (a manifest's model
// field is required): the rules call no model, so Prepare refuses any
// other id, and the fields that only address a model.
const RulesModel = "capture-rules"

// Files of a coding bundle.
const (
	RecordFile = "manifest.json" // the Record
	CallsFile  = "calls.jsonl"   // one Line per coding, raw request and response
	CodedDir   = "coded"         // one corpus per model and prompt: coded/<model>.<prompt>/
)

// Record is a coding bundle's manifest.json.
type Record struct {
	Kind           string                         `json:"kind"` // "coding"
	RunID          string                         `json:"run_id"`
	Manifest       manifests.Manifest             `json:"manifest"`
	Source         string                         `json:"source"`
	SourceAbs      string                         `json:"source_abs,omitempty"`
	ManifestSHA256 string                         `json:"manifest_sha256"`
	CorpusFiles    []study.File                   `json:"corpus_files"`
	Prompts        []results.PromptRecord         `json:"prompts"`
	AllowUnpinned  bool                           `json:"allow_unpinned"`
	Unpinned       []string                       `json:"unpinned_models,omitempty"`
	Models         map[string]*results.ModelCheck `json:"model_checks,omitempty"`
	Codings        int                            `json:"codings"` // models × prompts × records
	Completed      int                            `json:"completed"`
	Errors         int                            `json:"errors"`
	Started        time.Time                      `json:"started"`
	Finished       *time.Time                     `json:"finished,omitempty"`
	Sessions       []results.Session              `json:"sessions"`
	Corpora        map[string]string              `json:"corpora,omitempty"` // model.prompt: its coded corpus, relative to the bundle
}

// Line is one coding in calls.jsonl.
type Line struct {
	Model              string                  `json:"model"`
	Prompt             string                  `json:"prompt"`
	Record             string                  `json:"record"`
	Seed               int64                   `json:"seed"`
	Request            *models.Request         `json:"request,omitempty"` // nil for the rules coder
	Response           string                  `json:"response"`
	ResponseSHA256     string                  `json:"response_sha256"`
	Body               string                  `json:"body,omitempty"`
	Meta               map[string]any          `json:"meta,omitempty"`
	PromptTokens       int                     `json:"prompt_tokens,omitempty"`
	OutputTokens       int                     `json:"output_tokens,omitempty"`
	Events             []models.TransportEvent `json:"transport_events,omitempty"`
	Redacted           bool                    `json:"redacted,omitempty"`
	OriginalBodySHA256 string                  `json:"original_body_sha256,omitempty"`
	Error              string                  `json:"error,omitempty"`   // the call failed for good (transport)
	Invalid            string                  `json:"invalid,omitempty"` // the answer is not a valid coding
	At                 time.Time               `json:"at"`
}

func (l *Line) key() string { return l.Model + "\x00" + l.Prompt + "\x00" + l.Record }

// Options tunes a coding run.
type Options struct {
	AllowUnpinned bool          // run models of pinned backends without a digest (recorded)
	RetryErrors   bool          // on resume, code again the records whose call failed for good
	Log           io.Writer     // messages (default io.Discard)
	Progress      io.Writer     // progress lines (nil: none)
	ProgressEvery time.Duration // between progress lines (default 10 s)
	Now           func() time.Time
}

// coderInst is one coder of the manifest, ready to call.
type coderInst struct {
	md    manifests.Model
	model models.Model // nil for the rules coder
}

// Plan is a coding run ready to start.
type Plan struct {
	m        *manifests.Resolved
	coders   []coderInst
	prompts  []*templateSet
	unpinned []string
	allow    bool
}

// Prepare checks a coding manifest and builds its coders: a coding
// manifest is a study manifest whose prompts are coding templates
// (defining "system" and "user"), with conditions [normalized] and 1
// replicate; a model with backend "rules" is the rules coder.
func Prepare(m *manifests.Resolved, allowUnpinned bool) (*Plan, error) {
	p := &Plan{m: m, allow: allowUnpinned}
	var errs []error
	if len(m.Conditions) != 1 || m.Conditions[0] != study.Normalized {
		errs = append(errs, fmt.Errorf("manifest %s: field conditions: a coding manifest codes the client-normalized observation: want [normalized]", m.Source))
	}
	if m.Replicates != 1 {
		errs = append(errs, fmt.Errorf("manifest %s: field replicates: a coding manifest codes each record once: want 1, got %d", m.Source, m.Replicates))
	}
	for i, md := range m.Models {
		if md.Backend == RulesBackend {
			if err := rulesFields(m.Source, i, md); err != nil {
				errs = append(errs, err)
				continue
			}
			p.coders = append(p.coders, coderInst{md: md})
			continue
		}
		b, unpinned, err := models.LookupModel(m.Source, i, md, allowUnpinned)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if unpinned {
			p.unpinned = append(p.unpinned, md.Name)
		}
		spec := models.SpecOf(md, md.Hosts()[0])
		spec.Parallel = 0 // the coder sends one call at a time
		if md.Format == "schema" {
			spec.Format = Schema()
		}
		inst, err := b.New(spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("manifest %s: models[%d]: %w", m.Source, i, err))
			continue
		}
		p.coders = append(p.coders, coderInst{md: md, model: inst})
	}
	for i, pf := range m.Prompts {
		t, err := ParsePrompt(pf.Name, pf.Text)
		if err != nil {
			errs = append(errs, fmt.Errorf("manifest %s: field prompts[%d]: %s: %w", m.Source, i, pf.Path, err))
			continue
		}
		p.prompts = append(p.prompts, t)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// rulesFields refuses a rules coder (models[i] of the manifest at source)
// that names a model: a model id other than RulesModel, or a field that
// only addresses a model (digest, host, endpoints, format, options,
// api_key_env, pin). The rules would ignore them, and the coding would
// pass for the model's.
func rulesFields(source string, i int, md manifests.Model) error {
	var errs []error
	if md.Model != RulesModel {
		errs = append(errs, fmt.Errorf("manifest %s: field models[%d].model: backend %s is the capture rules (coding/rules), which call no model: want %s, got %s",
			source, i, RulesBackend, RulesModel, input.Quote(md.Model)))
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
			source, i, RulesBackend, strings.Join(set, ", ")))
	}
	return errors.Join(errs...)
}

// Summary says what a coding run produced, per coder and prompt.
type Summary struct {
	Dir    string
	Coders []CoderSummary
}

// CoderSummary is one (model, prompt)'s outcome.
type CoderSummary struct {
	Model, Prompt string
	Records       int      // records of the corpus
	Coded         int      // valid codings, in Corpus
	Invalid       []string // "ID: why" for answers that are not codings
	Errors        int      // calls that failed for good
	Corpus        string   // the coded corpus' directory ("" when nothing was coded)
}

// Run codes every record with every coder into a new bundle at dir (which
// must not exist or be empty).
func (p *Plan) Run(ctx context.Context, dir string, opt Options) (*Summary, error) {
	opt = opt.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := results.LockBundle(dir, "stress code")
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	if empty, err := results.Empty(dir); err != nil || !empty {
		if err == nil {
			err = fmt.Errorf("output directory %s is not empty; choose another with -out, or continue it with -resume", dir)
		}
		return nil, err
	}
	checks, err := p.verify(ctx)
	if err != nil {
		return nil, err
	}
	now := opt.Now().UTC()
	m := p.m
	rec := &Record{Kind: "coding", RunID: now.Format("20060102T150405.000Z") + "-code-" + m.Name, Manifest: m.Manifest,
		Source: m.Source, ManifestSHA256: m.SHA256, CorpusFiles: m.Corpus.Files, AllowUnpinned: p.allow, Unpinned: p.unpinned,
		Models: checks, Codings: len(p.coders) * len(p.prompts) * len(m.Corpus.Scenarios), Started: now}
	if !strings.HasPrefix(m.Source, "builtin:") {
		if abs, err := filepath.Abs(m.Source); err == nil && abs != m.Source {
			rec.SourceAbs = abs
		}
	}
	for _, pf := range m.Prompts {
		rec.Prompts = append(rec.Prompts, results.PromptRecord{Name: pf.Name, Path: pf.Path, SHA256: pf.SHA256})
	}
	return p.session(ctx, dir, rec, nil, opt)
}

// Resume continues the coding bundle at dir: the codings it holds are
// kept (those whose call failed for good are redone with RetryErrors), a
// torn last line is cut off, and the rest are coded. The manifest, corpus
// and prompts must be those the bundle records.
func (p *Plan) Resume(ctx context.Context, dir string, opt Options) (*Summary, error) {
	opt = opt.withDefaults()
	lock, err := results.LockBundle(dir, "stress code -resume")
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	rec, err := ReadRecord(dir)
	if err != nil {
		return nil, err
	}
	if rec.ManifestSHA256 != p.m.SHA256 {
		return nil, fmt.Errorf("resume %s: the manifest %s differs from the one the bundle records (sha256 %.12s…, now %.12s…)", dir, p.m.Source, rec.ManifestSHA256, p.m.SHA256)
	}
	if !slices.Equal(rec.CorpusFiles, p.m.Corpus.Files) {
		return nil, fmt.Errorf("resume %s: the corpus differs from the one the bundle records", dir)
	}
	for i, pf := range p.m.Prompts {
		if i >= len(rec.Prompts) || rec.Prompts[i].SHA256 != pf.SHA256 {
			return nil, fmt.Errorf("resume %s: prompt %s differs from the one the bundle records", dir, pf.Path)
		}
	}
	lines, err := readLines(filepath.Join(dir, CallsFile), true, opt.Log)
	if err != nil {
		return nil, err
	}
	if _, err := p.verify(ctx); err != nil {
		return nil, err
	}
	return p.session(ctx, dir, rec, lines, opt)
}

// verify resolves and checks every model that can be verified on its
// server, before any call.
func (p *Plan) verify(ctx context.Context) (map[string]*results.ModelCheck, error) {
	checks := map[string]*results.ModelCheck{}
	var errs []error
	for _, c := range p.coders {
		v, ok := c.model.(models.Verifier)
		if !ok {
			continue
		}
		facts, err := v.Verify(ctx)
		checks[c.md.Name] = &results.ModelCheck{Facts: facts}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("preflight, before any call:\n%w", models.JoinErrors(errs...))
	}
	return checks, nil
}

func (o Options) withDefaults() Options {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// session codes what is left, appending to calls.jsonl, then writes the
// coded corpora and manifest.json.
func (p *Plan) session(ctx context.Context, dir string, rec *Record, kept []Line, opt Options) (*Summary, error) {
	started := opt.Now().UTC()
	sess := results.Session{Started: started, Binary: results.BinaryInfo()}
	rec.Sessions = append(rec.Sessions, sess)
	rec.Finished = nil
	if err := results.WriteJSON(filepath.Join(dir, RecordFile), rec); err != nil {
		return nil, err
	}
	done := map[string]Line{}
	var keep []Line
	for _, l := range kept {
		if l.Error != "" && opt.RetryErrors {
			continue
		}
		done[l.key()] = l
		keep = append(keep, l)
	}
	if opt.RetryErrors && len(keep) != len(kept) {
		// Rewrite calls.jsonl without the lines to redo.
		var b bytes.Buffer
		for _, l := range keep {
			data, _ := json.Marshal(l)
			b.Write(append(data, '\n'))
		}
		if err := os.WriteFile(filepath.Join(dir, CallsFile), b.Bytes(), 0o644); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, CallsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	total, ran := rec.Codings, 0
	last := opt.Now()
	progress := func(force bool) {
		if opt.Progress == nil || (!force && opt.Now().Sub(last) < opt.ProgressEvery) {
			return
		}
		last = opt.Now()
		fmt.Fprintf(opt.Progress, "progress: %d/%d codings\n", len(done), total)
	}
	var interrupted error
loop:
	for _, c := range p.coders {
		for pi, pt := range p.prompts {
			pname := p.m.Prompts[pi].Name
			for i := range p.m.Corpus.Scenarios {
				s := &p.m.Corpus.Scenarios[i]
				l := Line{Model: c.md.Name, Prompt: pname, Record: s.ID}
				if _, ok := done[l.key()]; ok {
					continue
				}
				if err := ctx.Err(); err != nil {
					interrupted = err
					break loop
				}
				l = p.code(ctx, c, pt, pname, s)
				if ctx.Err() != nil && l.Error != "" {
					interrupted = ctx.Err() // a call cut short is redone on resume
					break loop
				}
				sum := sha256.Sum256([]byte(l.Response))
				l.ResponseSHA256 = hex.EncodeToString(sum[:])
				data, err := json.Marshal(l)
				if err != nil {
					return nil, err
				}
				if _, err := f.Write(append(data, '\n')); err != nil {
					return nil, err
				}
				if err := f.Sync(); err != nil {
					return nil, err
				}
				done[l.key()] = l
				ran++
				progress(false)
			}
		}
	}
	progress(true)
	now := opt.Now().UTC()
	rec.Sessions[len(rec.Sessions)-1].Ended = &now
	rec.Sessions[len(rec.Sessions)-1].Ran = ran
	rec.Sessions[len(rec.Sessions)-1].Interrupted = interrupted != nil
	rec.Completed, rec.Errors = len(done), 0
	for _, l := range done {
		if l.Error != "" {
			rec.Errors++
		}
	}
	if interrupted != nil {
		if err := results.WriteJSON(filepath.Join(dir, RecordFile), rec); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("coding interrupted after %d of %d codings (%w); resume with: stress code -resume %s", len(done), total, interrupted, dir)
	}
	sum := &Summary{Dir: dir}
	rec.Corpora = map[string]string{}
	for _, c := range p.coders {
		for _, pf := range p.m.Prompts {
			cs := CoderSummary{Model: c.md.Name, Prompt: pf.Name, Records: len(p.m.Corpus.Scenarios)}
			var recs []study.Scenario
			for i := range p.m.Corpus.Scenarios {
				s := p.m.Corpus.Scenarios[i]
				l := done[(&Line{Model: c.md.Name, Prompt: pf.Name, Record: s.ID}).key()]
				switch {
				case l.Error != "":
					cs.Errors++
					continue
				case l.Invalid != "":
					cs.Invalid = append(cs.Invalid, s.ID+": "+l.Invalid)
					continue
				}
				prof, _ := ParseAnswer(l.Response, s.Observation)
				s.Profile = prof
				coder := "model:" + c.md.Name
				if c.md.Backend == RulesBackend {
					coder = RulesBackend
				}
				s.Coding = &study.Coding{Coder: coder, Coded: []string{study.FieldProfile}}
				recs = append(recs, s)
			}
			cs.Coded = len(recs)
			if len(recs) > 0 {
				rel := filepath.Join(CodedDir, c.md.Name+"."+pf.Name)
				out := filepath.Join(dir, rel)
				if err := os.RemoveAll(out); err != nil {
					return nil, err
				}
				if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
					return nil, err
				}
				if err := study.WriteCorpus(out, recs); err != nil {
					return nil, fmt.Errorf("writing the corpus of %s/%s: %w", c.md.Name, pf.Name, err)
				}
				cs.Corpus = out
				rec.Corpora[c.md.Name+"."+pf.Name] = rel
			}
			sum.Coders = append(sum.Coders, cs)
		}
	}
	fin := opt.Now().UTC()
	rec.Finished = &fin
	if err := results.WriteJSON(filepath.Join(dir, RecordFile), rec); err != nil {
		return nil, err
	}
	return sum, nil
}

// code makes one coding: the rules, or one model call and its parse.
func (p *Plan) code(ctx context.Context, c coderInst, pt *templateSet, prompt string, s *study.Scenario) Line {
	l := Line{Model: c.md.Name, Prompt: prompt, Record: s.ID, Seed: simulator.Seed(p.m.Seed, s.ID, 1, 0), At: time.Now().UTC()}
	if c.model == nil {
		l.Seed = 0
		l.Response = encodeCoding(rules.Code(s))
	} else {
		msgs, err := pt.Render(s)
		if err != nil {
			l.Error = "rendering the prompt: " + err.Error()
			return l
		}
		req := models.Request{Messages: msgs, Seed: l.Seed, Temperature: p.m.Temperature}
		l.Request = &req
		reply, err := c.model.Generate(ctx, req)
		if err != nil {
			l.Error = err.Error()
			var ce *models.CallError
			if errors.As(err, &ce) {
				l.Events = ce.Events
			}
			return l
		}
		l.Response, l.Body, l.Meta = reply.Text, string(reply.Body), reply.Meta
		l.PromptTokens, l.OutputTokens, l.Events = reply.PromptTokens, reply.OutputTokens, reply.Events
		l.Redacted, l.OriginalBodySHA256 = reply.Redacted, reply.OriginalBodySHA256
	}
	if _, err := ParseAnswer(l.Response, s.Observation); err != nil {
		l.Invalid = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return l
}

// ReadRecord reads a coding bundle's manifest.json.
func ReadRecord(dir string) (*Record, error) {
	file := filepath.Join(dir, RecordFile)
	b, err := input.ReadFile(file, input.BundleJSON)
	if err != nil {
		return nil, fmt.Errorf("%s is not a coding bundle: %w", dir, err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if rec.Kind != "coding" || rec.RunID == "" {
		return nil, fmt.Errorf("%s: not a coding bundle's manifest (kind %q, run_id %q)", file, rec.Kind, rec.RunID)
	}
	return &rec, nil
}

// readLines reads calls.jsonl. A last line that is not valid JSON (a
// write a crash cut short) is cut off when repair is set, and reported on
// log; damage before it, or a response that does not match its sha256, is
// an error naming the line.
func readLines(file string, repair bool, log io.Writer) ([]Line, error) {
	data, err := input.ReadFile(file, input.CodingCalls)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Line
	off := 0
	for n := 1; off < len(data); n++ {
		end := bytes.IndexByte(data[off:], '\n')
		last := end < 0
		if last {
			end = len(data) - off
		}
		raw := data[off : off+end]
		var l Line
		if err := json.Unmarshal(raw, &l); err != nil || (last && len(raw) > 0 && !json.Valid(raw)) {
			if (last || off+end+1 == len(data)) && repair {
				fmt.Fprintf(log, "%s: line %d is torn (a write cut short); cut off and redone\n", file, n)
				if err := os.Truncate(file, int64(off)); err != nil {
					return nil, err
				}
				break
			}
			return nil, fmt.Errorf("%s: line %d: damaged (%v): not a crash's doing; refusing to resume", file, n, err)
		}
		sum := sha256.Sum256([]byte(l.Response))
		if l.ResponseSHA256 != hex.EncodeToString(sum[:]) {
			return nil, fmt.Errorf("%s: line %d: the response does not match its response_sha256", file, n)
		}
		out = append(out, l)
		off += end + 1
	}
	return out, nil
}
