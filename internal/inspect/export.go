package inspect

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/study"
)

// ListingFile is the index of the logs that Inspect's static viewer
// reads from a log directory (what inspect_ai's write_log_listing
// writes).
const ListingFile = "listing.json"

// IndexFile records, for each log written, the bundle cell it holds: the
// mapping from file names (which Inspect restricts) to models, prompts
// and conditions.
const IndexFile = "export.json"

// Options are what Export needs beyond the bundle.
type Options struct {
	// Info is the bundle's manifest.json, as analysis read it.
	Info *analysis.BundleInfo
	// Scenarios are the corpus' records by id, for the samples' cause and
	// surface and the observations of stored replays; nil when the corpus
	// could not be read (the samples then lack them).
	Scenarios map[string]*study.Scenario
	// CheckPartial is given the number of decisions read from the bundle;
	// it returns the warning for a partial bundle ("" for a complete one,
	// whose logs have status success; a partial one's have status error
	// and the warning as their error) or the error that refuses it.
	CheckPartial func(read int) (warning string, err error)
	// Version is the stress version that exports (the logs' packages).
	Version string
}

// Index is export.json: what was exported, and the log of each cell.
type Index struct {
	Format   string     `json:"format"` // "inspect"
	Bundle   string     `json:"bundle"`
	RunID    string     `json:"run_id"`
	Manifest string     `json:"manifest_sha256"`
	Version  int        `json:"log_version"`
	Logs     []IndexLog `json:"logs"`
}

// IndexLog is one log of an export: its file and the cell it holds.
type IndexLog struct {
	File      string `json:"file"`
	Model     string `json:"model"`
	Prompt    string `json:"prompt"`
	Condition string `json:"condition"`
	Task      string `json:"task"`
	TaskID    string `json:"task_id"`
	Samples   int    `json:"samples"`
	Errors    int    `json:"errors"`
}

// logName matches the names of Inspect log files Export writes.
var logName = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}.*\.json$`)

// Owned reports whether name is an entry an export writes at the top of
// its directory (so an earlier export is replaced as a whole).
func Owned(name string) bool {
	return name == ListingFile || name == IndexFile || logName.MatchString(name)
}

// cellKey is the (model, prompt, condition) of a log.
type cellKey struct{ model, prompt, condition string }

// logFile is one log being written: its samples go to a file of their
// own until the header, which needs the cell's counts, is known.
type logFile struct {
	key     cellKey
	name    string
	taskID  string
	evalID  string
	samples *os.File
	w       *bufio.Writer
	n       int
	errors  int
	usage   usage
	sampler *sampler
}

// Export writes the bundle at dir as Inspect eval logs into out (a new
// directory, renamed into place at the end; an earlier export there is
// replaced as a whole, anything else refused). It reads the bundle as
// analyze does (analysis.LoadBundleEach: every decision re-scored, the
// counts checked against decisions.parquet) and refuses what analyze
// refuses; problems are written to log. It returns the index written.
func Export(ctx context.Context, dir, out string, opt Options, log io.Writer) (*Index, error) {
	od, err := outdir.Create(out, Owned)
	if err != nil {
		return nil, fmt.Errorf("flag -out: %w", err)
	}
	defer od.Abort()
	ix, err := export(ctx, dir, od.Path(), opt, log)
	if err != nil {
		return nil, err
	}
	if err := od.Commit(); err != nil {
		return nil, err
	}
	return ix, nil
}

// export writes the logs into tmp.
func export(ctx context.Context, dir, tmp string, opt Options, log io.Writer) (*Index, error) {
	info := opt.Info
	table, err := results.LoadMessages(filepath.Join(dir, results.MessagesFile), -1)
	if err != nil {
		return nil, err
	}
	defaults, err := results.LoadDefaults(filepath.Join(dir, results.DefaultsFile))
	if err != nil {
		return nil, err
	}
	calls, err := os.Open(filepath.Join(dir, results.CallsFile))
	if err != nil {
		return nil, err
	}
	defer calls.Close()
	e := &exporter{info: info, opt: opt, tmp: tmp, table: table, defaults: defaults, calls: calls,
		logs: map[cellKey]*logFile{}, msgs: map[string]*message{}, started: timestamp(info.Started)}
	e.cr = results.NewCallReader(bytes.NewReader(nil), calls.Name())
	e.cr.SetDefaults(defaults)
	e.cr.KeepRefs()
	defer e.closeAll()
	ld, err := analysis.LoadBundleEach(ctx, dir, log, e.decision)
	if err != nil {
		return nil, err
	}
	if ld.Problems > 0 {
		return nil, fmt.Errorf("%s: %d problems in %s", dir, ld.Problems, results.CallsFile)
	}
	if opt.CheckPartial != nil {
		if e.warning, err = opt.CheckPartial(ld.Acc.Decisions()); err != nil {
			return nil, err
		}
	}
	return e.finish(ld.Acc.Cells())
}

// exporter holds an export's state while the bundle is read.
type exporter struct {
	info     *analysis.BundleInfo
	opt      Options
	tmp      string
	table    *results.Messages
	defaults *results.Defaults
	calls    *os.File
	logs     map[cellKey]*logFile
	order    []*logFile
	msgs     map[string]*message
	started  string
	warning  string // the partial bundle's, "" for a complete one
	buf      []byte
	cr       *results.CallReader // decodes the lines of a decision
	d        decision
}

// decision writes one decision's sample into its cell's log.
func (e *exporter) decision(g *results.Group, row *results.Row) error {
	if cap(e.buf) < int(g.Size) {
		e.buf = make([]byte, g.Size)
	}
	buf := e.buf[:g.Size]
	if _, err := e.calls.ReadAt(buf, g.Offset); err != nil {
		return fmt.Errorf("%s: %w", e.calls.Name(), err)
	}
	d := &e.d
	d.calls, d.refs, d.row = d.calls[:0], d.refs[:0], row
	for len(buf) > 0 {
		n := bytes.IndexByte(buf, '\n')
		if n < 0 {
			n = len(buf)
		}
		line := g.Line + len(d.calls)
		e.cr.Decode(buf[:n], line)
		buf = buf[min(n+1, len(buf)):]
		if err := e.cr.LineErr(); err != nil {
			return err
		}
		leaves, err := e.table.Leaves(e.cr.Refs())
		if err != nil {
			return fmt.Errorf("%s:%d: %w", e.calls.Name(), line, err)
		}
		d.calls = append(d.calls, *e.cr.Call())
		d.refs = append(d.refs, leaves)
	}
	if len(d.calls) != len(g.Heads) {
		return fmt.Errorf("%s:%d: decision %s: read %d lines, want %d", e.calls.Name(), g.Line, row.Key(), len(d.calls), len(g.Heads))
	}
	lf, err := e.log(cellKey{row.Model, row.Prompt, row.Condition})
	if err != nil {
		return err
	}
	sample, err := lf.sampler.write(d)
	if err != nil {
		return err
	}
	if lf.n > 0 {
		lf.w.WriteByte(',')
	}
	lf.n++
	if row.Status != results.StatusOK {
		lf.errors++
	}
	for i := range d.calls {
		lf.usage.add(d.calls[i].PromptTokens, d.calls[i].OutputTokens)
	}
	_, err = lf.w.Write(sample)
	return err
}

// log returns the log of cell k, opening it at its first decision.
func (e *exporter) log(k cellKey) (*logFile, error) {
	if lf := e.logs[k]; lf != nil {
		return lf, nil
	}
	id := func(salt string) string {
		h := sha256.Sum256([]byte(salt + "\x00" + e.info.RunID + "\x00" + k.model + "\x00" + k.prompt + "\x00" + k.condition))
		return hex.EncodeToString(h[:11])
	}
	lf := &logFile{key: k, taskID: id("task"), evalID: id("eval")}
	md := e.info.RunModels()[k.model]
	// Inspect's pattern {task}_{model}_{id}, each part cleaned.
	lf.name = fmt.Sprintf("%s_%s_%s_%s.json", clean(fileTime(e.info.Started)), clean(taskName(e.info, k)), clean(inspectModel(md)), lf.taskID)
	f, err := os.Create(filepath.Join(e.tmp, lf.name+".samples"))
	if err != nil {
		return nil, err
	}
	lf.samples, lf.w = f, bufio.NewWriterSize(f, 1<<16)
	lf.sampler = &sampler{table: e.table, msgs: e.msgs, model: inspectModel(md), digest: md.Digest,
		started: e.started, scen: e.opt.Scenarios, att: map[string][]byte{}}
	e.logs[k] = lf
	e.order = append(e.order, lf)
	return lf, nil
}

// closeAll closes the sample files still open.
func (e *exporter) closeAll() {
	for _, lf := range e.order {
		if lf.samples != nil {
			lf.samples.Close()
		}
	}
}

// finish writes each log (its header with the cell's counts, then its
// samples), listing.json and export.json.
func (e *exporter) finish(cells []results.Cell) (*Index, error) {
	byKey := map[cellKey]*results.Cell{}
	for i := range cells {
		c := &cells[i]
		byKey[cellKey{c.Model, c.Prompt, string(c.Condition)}] = c
	}
	ix := &Index{Format: "inspect", Bundle: e.info.Dir, RunID: e.info.RunID, Manifest: e.info.ManifestSHA256, Version: LogVersion}
	listing := map[string]listingEntry{}
	for _, lf := range e.order {
		h := e.header(lf, byKey[lf.key])
		if err := lf.write(e.tmp, h); err != nil {
			return nil, err
		}
		le := listingEntry{EvalID: h.Eval.EvalID, RunID: h.Eval.RunID, Task: h.Eval.Task, TaskID: h.Eval.TaskID,
			Version: LogVersion, Status: h.Status, Model: h.Eval.Model, StartedAt: h.Stats.StartedAt,
			CompletedAt: h.Stats.CompletedAt, Error: h.Error}
		if h.Results != nil && len(h.Results.Scores) > 0 {
			m := h.Results.Scores[0].Metrics.Mean
			le.PrimaryMetric = &m
		}
		listing[lf.name] = le
		ix.Logs = append(ix.Logs, IndexLog{File: lf.name, Model: lf.key.model, Prompt: lf.key.prompt, Condition: lf.key.condition,
			Task: h.Eval.Task, TaskID: lf.taskID, Samples: lf.n, Errors: lf.errors})
	}
	if err := results.WriteJSON(filepath.Join(e.tmp, ListingFile), listing); err != nil {
		return nil, err
	}
	if err := results.WriteJSON(filepath.Join(e.tmp, IndexFile), ix); err != nil {
		return nil, err
	}
	return ix, nil
}

// write writes the log: the header, then the samples copied from their
// file, which is removed.
func (lf *logFile) write(dir string, h *header) error {
	if err := lf.w.Flush(); err != nil {
		return err
	}
	head, err := marshalHead(h)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, lf.name)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(append(head, `,"samples":[`...))
	if err == nil {
		if _, err = lf.samples.Seek(0, io.SeekStart); err == nil {
			_, err = io.Copy(f, lf.samples)
		}
	}
	if err == nil {
		_, err = f.Write([]byte("]}\n"))
	}
	err = errors.Join(err, f.Close(), lf.samples.Close())
	lf.samples = nil
	if err == nil {
		err = os.Remove(filepath.Join(dir, lf.name+".samples"))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// header returns the log header of lf, with c's counts as its results.
func (e *exporter) header(lf *logFile, c *results.Cell) *header {
	info := e.info
	k := lf.key
	md := info.RunModels()[k.model]
	spec := info.Manifest
	temp := spec.Temperature
	var think any
	for _, m := range spec.Models {
		if m.Name == k.model {
			think = m.Options["think"]
		}
	}
	modelArgs := map[string]any{"label": k.model, "backend": md.Backend, "model": md.ModelID}
	if md.Digest != "" {
		modelArgs["digest"] = md.Digest
	}
	if think != nil {
		modelArgs["think"] = think
	}
	task := taskName(info, k)
	replay, solver := "stored", "stress/label"
	if spec.Replay != "" {
		replay = spec.Replay
	}
	if spec.Task != "" {
		solver = "stress/" + spec.Task
	}
	h := &header{
		Version: LogVersion,
		Status:  "success",
		Eval: evalSpec{
			EvalID: lf.evalID, RunID: info.RunID, Created: timestamp(info.Started),
			Task: task, TaskID: lf.taskID, TaskDisplayName: task,
			TaskArgs:            map[string]any{"model": k.model, "prompt": k.prompt, "condition": k.condition},
			TaskArgsPassed:      map[string]any{"model": k.model, "prompt": k.prompt, "condition": k.condition},
			Solver:              solver,
			Dataset:             dataset{Name: spec.Name, Location: spec.Corpus, Samples: lf.n},
			Model:               inspectModel(md),
			ModelGenerateConfig: generateConfig{Temperature: &temp},
			ModelArgs:           modelArgs,
			Config:              evalConfig{Epochs: spec.Replicates, EpochsReducer: []string{"mean"}, LogSamples: true, ScoreDisplay: true},
			Packages:            map[string]string{"stress": e.opt.Version},
			Metadata: map[string]any{
				"study": spec.Name, "manifest_sha256": info.ManifestSHA256, "run_id": info.RunID,
				"model": k.model, "prompt": k.prompt, "condition": k.condition,
				"replay": replay, "replay_cap": info.ReplayCap, "seed": spec.Seed,
			},
		},
		Plan: plan{Name: "plan", Steps: []planStep{{Solver: solver, Params: map[string]any{"replay": replay, "replay_cap": info.ReplayCap}}}},
		Stats: stats{StartedAt: timestamp(info.Started), ModelUsage: map[string]usage{inspectModel(md): lf.usage},
			ConnectionLimitHistory: []struct{}{}},
		Tags:     []string{"stress"},
		Metadata: map[string]any{},
	}
	if info.Finished != nil {
		h.Stats.CompletedAt = timestamp(*info.Finished)
	}
	if e.warning != "" {
		h.Status = "error"
		h.Error = &evalError{Message: e.warning}
	}
	if c != nil {
		h.Results = results_(c)
	}
	return h
}

// results_ is the log's results: per score, the cell's rate (mean), its
// count and the decisions it is over, as analyze counts them.
func results_(c *results.Cell) *evalResults {
	r := &evalResults{TotalSamples: c.N + c.Errors, CompletedSamples: c.N}
	for _, sc := range ScoreColumns() {
		var k, n int
		if sc.col < 0 {
			k, n = c.Extra, c.N
		} else {
			k, n = c.Count(sc.col), c.Denominator(sc.col)
			if sc.col.Column().Kind.Lab() && n == 0 {
				continue
			}
		}
		mean := 0.0
		if n > 0 {
			mean = float64(k) / float64(n)
		}
		r.Scores = append(r.Scores, evalScore{Name: sc.name, Scorer: sc.name, ScoredSamples: n, UnscoredSample: c.N + c.Errors - n,
			Metrics: metrics{Mean: evalMetric{Name: "mean", Value: mean}, Count: evalMetric{Name: "count", Value: float64(k)}}})
	}
	return r
}

// inspectModel is Inspect's name of a model: backend/model id.
func inspectModel(m analysis.RunModel) string {
	id := m.ModelID
	if id == "" {
		id = m.Label
	}
	return m.Backend + "/" + id
}

// taskName is a log's task: the study, its prompt and its condition (the
// model is the log's model).
func taskName(info *analysis.BundleInfo, k cellKey) string {
	return info.Manifest.Name + "/" + k.prompt + "/" + k.condition
}

// clean makes s a part of an Inspect log file name, as inspect_ai does
// (_, /, : and + become -), and also maps what a file name cannot hold
// portably (other punctuation, spaces and control characters) to -.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.':
			return r
		}
		return '-'
	}, s)
}

// timestamp formats t as Inspect's datetimes (UTC, six fractional
// digits: Python 3.10 reads three or six only).
func timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000-07:00")
}

// fileTime formats t as the time at the start of a log file name.
func fileTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15-04-05-07-00")
}
