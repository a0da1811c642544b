package inspect

import (
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/internal/window"
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
	// Scenarios returns the corpus' records by id, for the samples' cause
	// and surface and the observations of stored replays (the only
	// fields read, as study.LoadCorpusBrief reads them); nil when the
	// corpus could not be read (the samples then lack them). It is called
	// once per worker, before its first sample, so that the corpus may
	// load while the bundle is read; nil is no corpus.
	Scenarios func() map[string]*study.Scenario
	// CheckPartial is given the number of decisions read from the bundle;
	// it returns the warning for a partial bundle ("" for a complete one,
	// whose logs have status success; a partial one's have status error
	// and the warning as their error) or the error that refuses it.
	CheckPartial func(read int) (warning string, err error)
	// Version is the stress version that exports (the logs' packages).
	Version string
	// Eval writes the logs in Inspect's .eval form (zip archives) instead
	// of .json.
	Eval bool
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
var logName = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}.*\.(json|eval)$`)

// owned reports whether name is an entry an export writes at the top of
// its directory (so an earlier export is replaced as a whole).
func owned(name string) bool {
	return name == ListingFile || name == IndexFile || logName.MatchString(name)
}

// cellKey is the (model, prompt, condition) of a log.
type cellKey struct{ model, prompt, condition string }

// logFile is one log being written: its samples go to its file as they
// come, and its header, which needs the cell's counts, at the end (into
// the space reserved for it, or, for an .eval log, as its last member).
type logFile struct {
	key      cellKey
	name     string
	taskID   string
	evalID   string
	file     *os.File // the log, written after the header's space
	reserved int      // the bytes reserved for the header
	w        *bufio.Writer
	n        int
	errors   int
	usage    usage
	ids      map[string]struct{} // the samples' ids (scenarios), each once
	model    string              // Inspect's model name, provider/model
	digest   string              // the model's pinned digest, "" when none
	// An .eval log's archive, and its samples' summaries, deflated as
	// they come into a file beside it until its end.
	zw   *zip.Writer
	sums *os.File
	sw   *bufio.Writer
	sumz *deflateCounter // into sw
}

// Export writes the bundle at dir as Inspect eval logs into out (a new
// directory, renamed into place at the end; an earlier export there is
// replaced as a whole, anything else refused). It reads the bundle as
// analyze does (analysis.LoadBundleEach: every decision re-scored, the
// counts checked against decisions.parquet) and refuses what analyze
// refuses; problems are written to log. It returns the index written.
func Export(ctx context.Context, dir, out string, opt Options, log io.Writer) (*Index, error) {
	od, err := outdir.Create(out, owned)
	if err != nil {
		return nil, fmt.Errorf("flag -out: %w", err)
	}
	defer od.Abort()
	od.ReportSwept(log)
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
	calls, err := input.OpenStream(filepath.Join(dir, results.CallsFile))
	if err != nil {
		return nil, err
	}
	defer calls.Close()
	e := &exporter{info: info, opt: opt, tmp: tmp, table: table, defaults: defaults, calls: &window.Reader{F: calls},
		logs: map[cellKey]*logFile{}, started: timestamp(info.Started)}
	defer e.closeAll()
	e.start()
	ld, err := analysis.LoadBundleEach(ctx, dir, log, e.decision)
	e.stop()
	if err == nil {
		err = e.failed()
	}
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
	cells := ld.Acc.Cells()
	passK := make([]analysis.PassKSet, len(cells))
	for i := range cells {
		passK[i] = ld.Acc.PassK(i)
	}
	return e.finish(cells, passK)
}

// exporter holds an export's state while the bundle is read. The
// reader's goroutine (LoadBundleEach's callback, decision) hands each
// decision to the workers, which decode its lines and write its sample,
// and in reading order to the writer, which appends the samples to their
// logs.
type exporter struct {
	info     *analysis.BundleInfo
	opt      Options
	tmp      string
	table    *results.Messages
	defaults *results.Defaults
	calls    *window.Reader
	logs     map[cellKey]*logFile
	order    []*logFile
	started  string
	warning  string // the partial bundle's, "" for a complete one

	free, work, written chan *job
	wg                  sync.WaitGroup
	mu                  sync.Mutex
	err                 error // the first error of a worker or the writer
}

// job is one decision on its way through the workers to its log.
type job struct {
	lf    *logFile
	raw   []byte // the decision's call lines
	line  int    // the line number of the first
	heads []results.Head
	row   results.Row
	out   []byte // the sample, once written
	// For an .eval log: the sample's summary, and the sample deflated.
	summary []byte
	comp    compressed
	usage   usage
	err     error
	done    chan struct{}
}

// start starts the workers and the writer.
func (e *exporter) start() {
	workers := max(1, runtime.GOMAXPROCS(0))
	const perWorker = 64
	e.free = make(chan *job, workers*perWorker)
	e.work = make(chan *job, workers*perWorker)
	e.written = make(chan *job, workers*perWorker)
	for range workers * perWorker {
		e.free <- &job{done: make(chan struct{}, 1)}
	}
	for range workers {
		s := &sampler{table: e.table, msgs: map[string]*message{}, started: e.started, att: map[string][]byte{}, summaries: e.opt.Eval}
		var d deflater
		e.wg.Go(func() {
			if e.opt.Scenarios != nil {
				s.scen = e.opt.Scenarios()
			}
			for j := range e.work {
				j.err = s.sample(j, e.calls.F.Name())
				if j.err == nil && e.opt.Eval {
					j.err = d.compress(j.out, &j.comp)
				}
				j.done <- struct{}{}
			}
		})
	}
	e.wg.Go(func() {
		for j := range e.written {
			<-j.done
			if j.err == nil && e.failed() == nil {
				j.err = j.lf.add(j)
			}
			if j.err != nil {
				e.fail(j.err)
			}
			e.free <- j
		}
	})
}

// stop waits for the workers and the writer to finish.
func (e *exporter) stop() {
	close(e.work)
	close(e.written)
	e.wg.Wait()
}

// fail records err, the first error of a worker or the writer.
func (e *exporter) fail(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
}

// failed returns the first error of a worker or the writer.
func (e *exporter) failed() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// decision hands one decision to the workers and the writer.
func (e *exporter) decision(g *results.Group, row *results.Row) error {
	if err := e.failed(); err != nil {
		return err
	}
	raw, err := e.calls.Slice(g.Offset, g.Size)
	if err != nil {
		return err
	}
	lf, err := e.log(cellKey{row.Model, row.Prompt, row.Condition})
	if err != nil {
		return err
	}
	j := <-e.free
	j.lf, j.line, j.row, j.err = lf, g.Line, *row, nil
	j.raw = append(j.raw[:0], raw...)
	j.heads = append(j.heads[:0], g.Heads...)
	e.work <- j
	e.written <- j
	return nil
}

// add appends j's sample to the log.
func (lf *logFile) add(j *job) error {
	lf.n++
	lf.ids[j.row.Scenario] = struct{}{}
	if j.row.Status != results.StatusOK {
		lf.errors++
	}
	lf.usage.InputTokens += j.usage.InputTokens
	lf.usage.OutputTokens += j.usage.OutputTokens
	lf.usage.TotalTokens += j.usage.TotalTokens
	if lf.zw != nil {
		return lf.addEval(j)
	}
	if lf.n > 1 {
		lf.w.WriteByte(',')
	}
	_, err := lf.w.Write(j.out)
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
	lf := &logFile{key: k, taskID: id("task"), evalID: id("eval"), ids: map[string]struct{}{}}
	md := e.info.RunModels()[k.model]
	// Inspect's pattern {task}_{model}_{id}, each part cleaned.
	lf.name = fmt.Sprintf("%s_%s_%s_%s.json", clean(fileTime(e.info.Started)), clean(taskName(e.info, k)), clean(inspectModel(md)), lf.taskID)
	create := lf.create
	if e.opt.Eval {
		lf.name = strings.TrimSuffix(lf.name, ".json") + ".eval"
		create = lf.createEval
	}
	if err := create(e.tmp, e.header(lf, nil, nil)); err != nil {
		return nil, err
	}
	lf.model, lf.digest = inspectModel(md), md.Digest
	e.logs[k] = lf
	e.order = append(e.order, lf)
	return lf, nil
}

// closeAll closes the sample files still open.
func (e *exporter) closeAll() {
	for _, lf := range e.order {
		if lf.file != nil {
			lf.file.Close()
		}
		if lf.sums != nil {
			lf.sums.Close()
		}
	}
}

// finish writes each log (its header with the cell's counts and pass^k,
// passK[i] of cells[i], then its samples), listing.json and
// export.json.
func (e *exporter) finish(cells []results.Cell, passK []analysis.PassKSet) (*Index, error) {
	byKey := map[cellKey]int{}
	for i := range cells {
		c := &cells[i]
		byKey[cellKey{c.Model, c.Prompt, string(c.Condition)}] = i
	}
	ix := &Index{Format: "inspect", Bundle: e.info.Dir, RunID: e.info.RunID, Manifest: e.info.ManifestSHA256, Version: LogVersion}
	listing := map[string]listingEntry{}
	for _, lf := range e.order {
		var h *header
		if i, ok := byKey[lf.key]; ok {
			h = e.header(lf, &cells[i], passK[i])
		} else {
			h = e.header(lf, nil, nil)
		}
		write := lf.write
		if lf.zw != nil {
			write = lf.writeEval
		}
		if err := write(h); err != nil {
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

// The samples of a log are written to its file as they come, after a
// space reserved for the header, which needs the cell's counts: '{', the
// reserved bytes (spaces, then the header's members), then
// "samples":[…]}. JSON allows the spaces left over between the header's
// last member and "samples". A header that does not fit (a partial
// bundle's long warning) is written in front of a copy of the samples.

// samplesKey follows the reserved space.
const samplesKey = `"samples":[`

// reserve returns the bytes to reserve for the header of a log whose
// header without results is h: h with the longest results and stats any
// cell can have.
func reserve(h *header) int {
	long := evalMetric{Name: "count", Value: -1.2345678901234567e-300}
	r := &evalResults{TotalSamples: math.MinInt, CompletedSamples: math.MinInt}
	for _, c := range scoreColumns {
		r.Scores = append(r.Scores, evalScore{Name: c.name, Scorer: c.name, ScoredSamples: math.MinInt, UnscoredSamples: math.MinInt,
			Metrics: metrics{Mean: long, Count: long}})
	}
	for _, col := range analysis.PassKColumns {
		name := col.Column().Name
		for k := range h.Eval.Config.Epochs {
			r.Scores = append(r.Scores, evalScore{Name: name, Scorer: name, Reducer: passKReducer(k + 1), ScoredSamples: math.MinInt, UnscoredSamples: math.MinInt,
				Metrics: metrics{Mean: long, Count: long}})
		}
	}
	max := *h
	max.Results = r
	max.Stats.CompletedAt = timestamp(time.Time{})
	max.Stats.ModelUsage = map[string]usage{}
	for m := range h.Stats.ModelUsage {
		max.Stats.ModelUsage[m] = usage{math.MinInt64, math.MinInt64, math.MinInt64}
	}
	b, err := json.Marshal(&max)
	if err != nil {
		return 4096
	}
	return len(b) + 64
}

// create creates the log's file, its header's space reserved for h.
func (lf *logFile) create(dir string, h *header) error {
	lf.reserved = reserve(h)
	f, err := os.Create(filepath.Join(dir, lf.name))
	if err != nil {
		return err
	}
	lf.file, lf.w = f, bufio.NewWriterSize(f, 1<<16)
	lf.w.WriteByte('{')
	for range lf.reserved {
		lf.w.WriteByte(' ')
	}
	_, err = lf.w.WriteString(samplesKey)
	return err
}

// write ends the log: the samples, then the header h in its space.
func (lf *logFile) write(h *header) error {
	path := lf.file.Name()
	_, err := lf.w.WriteString("]}\n")
	if err == nil {
		err = lf.w.Flush()
	}
	var head []byte
	if err == nil {
		head, err = marshalHead(h)
	}
	if err == nil {
		head = append(head[1:], ',') // its members
		if len(head) <= lf.reserved {
			_, err = lf.file.WriteAt(head, 1)
		} else {
			err = lf.rewrite(head)
		}
	}
	err = errors.Join(err, lf.file.Close())
	lf.file = nil
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// rewrite writes the log anew with head, the header's members, in front
// of the samples.
func (lf *logFile) rewrite(head []byte) error {
	path := lf.file.Name()
	f, err := os.Create(path + ".new")
	if err != nil {
		return err
	}
	defer os.Remove(path + ".new")
	_, err = f.Write(append([]byte{'{'}, head...))
	if err == nil {
		_, err = io.Copy(f, io.NewSectionReader(lf.file, int64(1+lf.reserved), math.MaxInt64))
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	return os.Rename(path+".new", path)
}

// header returns the log header of lf, with c's counts and its pass^k
// pk as its results.
func (e *exporter) header(lf *logFile, c *results.Cell, pk analysis.PassKSet) *header {
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
	params := map[string]any{"replay": replay, "replay_cap": info.ReplayCap}
	h := &header{
		Version: LogVersion,
		Status:  "success",
		Eval: evalSpec{
			EvalID: lf.evalID, RunID: info.RunID, Created: timestamp(info.Started),
			Task: task, TaskID: lf.taskID, TaskDisplayName: task,
			TaskArgs:            map[string]any{"model": k.model, "prompt": k.prompt, "condition": k.condition},
			TaskArgsPassed:      map[string]any{"model": k.model, "prompt": k.prompt, "condition": k.condition},
			Solver:              solver,
			Dataset:             dataset{Name: spec.Name, Location: spec.Corpus, Samples: len(lf.ids)},
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
		Plan: plan{Name: "plan", Steps: []planStep{{Solver: solver, Params: params, ParamsPassed: params}}},
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
		h.Results = results_(c, pk)
	}
	return h
}

// passKReducer is the reducer of pass^k's scores: "pass^k".
func passKReducer(k int) string { return "pass^" + strconv.Itoa(k) }

// passKScores are the cell's pass^k (pk, from
// analysis.Accumulator.PassK) as scores, after its columns' scores: per
// column of analysis.PassKColumns the cell has and per k whose estimate
// is defined, the column's score with reducer "pass^k" (Inspect reduces
// a sample's epochs so: here a scenario's replicates, by the unbiased
// estimator C(c, k)/C(n, k)), over the scenarios with at least k
// replicates (scored; those with fewer unscored): mean pass^k, count
// mean × scored (the sum of the scenarios' values, as a column's count
// is of its decisions').
func passKScores(pk analysis.PassKSet) []evalScore {
	var out []evalScore
	for _, sr := range pk {
		name := sr.Column.String()
		for _, v := range sr.Values {
			x := float64(v.Estimate)
			if math.IsNaN(x) || math.IsInf(x, 0) {
				continue
			}
			out = append(out, evalScore{Name: name, Scorer: name, Reducer: passKReducer(v.K), ScoredSamples: v.Scenarios, UnscoredSamples: v.Dropped,
				Metrics: metrics{Mean: evalMetric{Name: "mean", Value: x}, Count: evalMetric{Name: "count", Value: x * float64(v.Scenarios)}}})
		}
	}
	return out
}

// results_ is the log's results: per score, the cell's rate (mean), its
// count and the decisions it is over, as analyze counts them, then the
// cell's pass^k (pk) as scores with a reducer (passKScores).
func results_(c *results.Cell, pk analysis.PassKSet) *evalResults {
	r := &evalResults{TotalSamples: c.N + c.Errors, CompletedSamples: c.N}
	for _, sc := range scoreColumns {
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
		r.Scores = append(r.Scores, evalScore{Name: sc.name, Scorer: sc.name, ScoredSamples: n, UnscoredSamples: c.N + c.Errors - n,
			Metrics: metrics{Mean: evalMetric{Name: "mean", Value: mean}, Count: evalMetric{Name: "count", Value: float64(k)}}})
	}
	r.Scores = append(r.Scores, passKScores(pk)...)
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
