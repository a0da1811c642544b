package runner_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
)

// hashModel answers deterministically from the request alone (seed, turn,
// last message), with a mix of every kind of answer, so trajectories have
// replays, invalid answers and false successes; it sleeps a random few
// microseconds so that parallel runs finish decisions out of order.
type hashModel struct{}

var hashAnswers = []string{
	`{"operation_status": "failed", "recovery_policy": "retry_now"}`,
	`{"operation_status": "failed", "recovery_policy": "retry_now"}`,
	`{"operation_status": "failed", "recovery_policy": "retry_now"}`,
	`{"operation_status": "failed", "recovery_policy": "select_tool"}`,
	`{"operation_status": "failed", "recovery_policy": "revise_arguments"}`,
	`{"operation_status": "failed", "recovery_policy": "stop_or_escalate"}`,
	`{"operation_status": "succeeded", "recovery_policy": "stop_or_escalate"}`,
	`I cannot tell.`,
	`{"operation_status": "failed", "recovery_policy": "authenticate"}`,
	`{"operation_status": "failed", "recovery_policy": "retry_later"}`,
}

func (hashModel) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	if err := ctx.Err(); err != nil {
		return models.Reply{}, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d/%d/%s", req.Seed, len(req.Messages), req.Messages[len(req.Messages)-1].Content)
	sum := h.Sum(nil)
	time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
	text := hashAnswers[int(sum[0])%len(hashAnswers)]
	return models.Reply{Text: text, Body: []byte(`{"text":` + fmt.Sprintf("%q", text) + `}`), PromptTokens: len(req.Messages), OutputTokens: 9}, nil
}

// gateModel blocks every call until its gate opens or the call's context
// ends, and counts the calls in flight.
type gateModel struct{}

var gate struct {
	sync.Mutex
	open     chan struct{}
	inFlight atomic.Int32
	peak     atomic.Int32 // the most calls in flight at once since setGate
}

func (gateModel) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	gate.Lock()
	open := gate.open
	gate.Unlock()
	n := gate.inFlight.Add(1)
	defer gate.inFlight.Add(-1)
	for p := gate.peak.Load(); n > p && !gate.peak.CompareAndSwap(p, n); p = gate.peak.Load() {
	}
	select {
	case <-open:
	case <-ctx.Done():
		return models.Reply{}, ctx.Err()
	}
	return hashModel{}.Generate(context.Background(), req)
}

func setGate(open bool) {
	gate.Lock()
	defer gate.Unlock()
	gate.open = make(chan struct{})
	gate.peak.Store(0)
	if open {
		close(gate.open)
	}
}

func openGate() {
	gate.Lock()
	defer gate.Unlock()
	close(gate.open)
}

func init() {
	models.Register("hash-test", models.Backend{New: func(models.Spec) (models.Model, error) { return hashModel{}, nil }})
	models.Register("gate-test", models.Backend{New: func(models.Spec) (models.Model, error) { return gateModel{}, nil }})
	setGate(true)
}

// hashStudy is the built-in corpus and prompt with two hash models: 2 x 4
// conditions x 21 scenarios x reps decisions.
func hashStudy(t testing.TB, backend string, reps, parallel int, endpoints []string, maxInFlight int) *manifests.Resolved {
	t.Helper()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	m.Replicates = reps
	m.MaxInFlight = maxInFlight
	m.Models = []manifests.Model{
		{Name: "h1", Backend: backend, Model: "x", Parallel: parallel, Endpoints: endpoints},
		{Name: "h2", Backend: backend, Model: "y", Parallel: parallel},
	}
	return m
}

func prepare(t testing.TB, m *manifests.Resolved) *runner.Plan {
	t.Helper()
	p, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// normCalls reads calls.jsonl with what depends on timing or scheduling
// removed: latency, the answering endpoint, event times.
func normCalls(t testing.TB, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		delete(v, "latency_ms")
		delete(v, "endpoint")
		if ev, ok := v["transport_events"].([]any); ok {
			for _, e := range ev {
				delete(e.(map[string]any), "at")
				delete(e.(map[string]any), "wait_ms")
			}
		}
		nb, _ := json.Marshal(v)
		out = append(out, string(nb))
	}
	return out
}

// sameBundle checks that two bundles hold the same decisions: calls.jsonl
// line for line (modulo timing), decisions.parquet row for row, and the
// same counts.
func sameBundle(t testing.TB, want, got string) {
	t.Helper()
	a, b := normCalls(t, want), normCalls(t, got)
	if len(a) != len(b) {
		t.Fatalf("%s has %d call lines, %s has %d", want, len(a), got, len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("call line %d differs:\n%s\n%s", i+1, a[i], b[i])
		}
	}
	sameRows(t, want, got)
	var sa, sb results.Summary
	readJSON(t, filepath.Join(want, results.SummaryFile), &sa)
	readJSON(t, filepath.Join(got, results.SummaryFile), &sb)
	sa.RunID, sb.RunID = "", ""
	if fmt.Sprint(sa) != fmt.Sprint(sb) {
		t.Fatalf("summaries differ:\n%+v\n%+v", sa, sb)
	}
}

func readJSON(t testing.TB, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func runTo(t testing.TB, p *runner.Plan, dir string, opt runner.Options) *results.Summary {
	t.Helper()
	opt.Out = dir
	_, sum, err := p.Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestParallelDeterminism runs one study at parallelism 1 and at 8 calls
// in flight over three endpoints: the bundles are equal decision for
// decision, in canonical order.
func TestParallelDeterminism(t *testing.T) {
	root := t.TempDir()
	seq := filepath.Join(root, "seq")
	par := filepath.Join(root, "par")
	s1 := runTo(t, prepare(t, hashStudy(t, "hash-test", 3, 1, nil, 1)), seq, runner.Options{})
	s8 := runTo(t, prepare(t, hashStudy(t, "hash-test", 3, 4, []string{"http://a:1", "http://u:secret@b:2", "http://c:3"}, 8)), par, runner.Options{})
	if s1.Decisions != 504 || s1.Calls <= 504 || s1.Cells[0].Extra == 0 || s1.Cells[0].Count(simulator.Invalid) == 0 {
		t.Fatalf("summary %+v: want 504 decisions with replays and invalid answers", s1)
	}
	sameBundle(t, seq, par)
	checkBundle(t, par, s8)
	// Every call of h1 names its endpoint, without credentials; the three
	// endpoints shared the work.
	b, _ := os.ReadFile(filepath.Join(par, results.CallsFile))
	if bytes.Contains(b, []byte("secret")) {
		t.Error("an endpoint's credentials reached calls.jsonl")
	}
	used := map[string]int{}
	cr := results.NewCallReader(bytes.NewReader(b), "calls.jsonl")
	for cr.Scan() {
		c := cr.Call()
		if (c.Key.Model == "h1") != (c.Endpoint != "") {
			t.Fatalf("call %s turn %d: endpoint %q", c.Key, c.Turn, c.Endpoint)
		}
		used[c.Endpoint]++
	}
	if len(used) != 4 || used["http://b:2"] == 0 {
		t.Errorf("endpoints used: %v", used)
	}
}

// startedRecord returns dir's manifest.json as a bundle of an older
// version records it when its run starts: with no durable point, so that
// only its last line may be damaged.
func startedRecord(t testing.TB, dir string) []byte {
	t.Helper()
	var rec map[string]any
	readJSON(t, filepath.Join(dir, results.ManifestFile), &rec)
	delete(rec, "calls_durable_bytes")
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// groups splits a calls.jsonl into its decisions' lines; dir, when not
// "", is the bundle whose defaults.json fills what its lines leave out.
func groups(t testing.TB, dir string, b []byte) [][]byte {
	gr := results.NewGroupReader(bytes.NewReader(b), "calls.jsonl")
	if dir != "" {
		d, err := results.LoadDefaults(filepath.Join(dir, results.DefaultsFile))
		if err != nil {
			t.Fatal(err)
		}
		gr.SetDefaults(d)
	}
	var out [][]byte
	for gr.Next() {
		g := gr.Group()
		out = append(out, b[g.Offset:g.Offset+g.Size])
	}
	if gr.Err() != nil || gr.Torn() != nil {
		t.Fatal(gr.Err(), gr.Torn())
	}
	return out
}

// TestResumeAfterAnyCut simulates a crash at many byte offsets of
// calls.jsonl, written in completion order (shuffled): each resumed bundle
// equals the uninterrupted run, decision for decision. Cuts fall inside
// lines (a torn line), between the lines of a multi-turn decision (a
// decision interrupted mid-trajectory) and between decisions.
func TestResumeAfterAnyCut(t *testing.T) {
	root := t.TempDir()
	full := filepath.Join(root, "full")
	m := hashStudy(t, "hash-test", 1, 4, nil, 0)
	runTo(t, prepare(t, m), full, runner.Options{})
	calls, _ := os.ReadFile(filepath.Join(full, results.CallsFile))
	rec := startedRecord(t, full)
	gs := groups(t, full, calls)
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(gs), func(i, j int) { gs[i], gs[j] = gs[j], gs[i] })
	shuffled := bytes.Join(gs, nil)
	// Cuts: nothing written, every kind of boundary, random offsets.
	cuts := []int{0, len(shuffled)}
	off := 0
	multi := 0
	for _, g := range gs {
		if n := bytes.Count(g, []byte("\n")); n > 1 && multi < 4 {
			first := bytes.IndexByte(g, '\n') + 1
			cuts = append(cuts, off+first, off+first+5) // after turn 0; inside turn 1
			multi++
		}
		off += len(g)
	}
	if multi < 4 {
		t.Fatalf("only %d multi-turn decisions", multi)
	}
	for range 8 {
		cuts = append(cuts, rng.IntN(len(shuffled)))
	}
	for k, cut := range cuts {
		dir := filepath.Join(root, fmt.Sprint("cut", k))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, results.ManifestFile), rec, 0o644)
		os.WriteFile(filepath.Join(dir, results.CallsFile), shuffled[:cut], 0o644)
		copyTables(t, full, dir)
		var log bytes.Buffer
		p := prepare(t, m)
		sum, err := p.Resume(context.Background(), dir, runner.Options{Log: &log})
		if err != nil {
			t.Fatalf("cut at %d: %v\n%s", cut, err, log.String())
		}
		if sum.Remaining != 0 {
			t.Errorf("cut at %d: %d remaining", cut, sum.Remaining)
		}
		midLine := cut > 0 && shuffled[cut-1] != '\n'
		if midLine && !strings.Contains(log.String(), "torn tail") {
			t.Errorf("cut at %d inside a line: log %q does not mention the torn tail", cut, log.String())
		}
		sameBundle(t, full, dir)
		var r results.Record
		readJSON(t, filepath.Join(dir, results.ManifestFile), &r)
		if r.Finished == nil || r.Completed != 168 || r.Remaining != 0 || len(r.Sessions) != 2 || r.Sessions[1].Ended == nil {
			t.Errorf("cut at %d: manifest.json: finished %v, completed %d, remaining %d, sessions %+v", cut, r.Finished, r.Completed, r.Remaining, r.Sessions)
		}
	}
}

// TestResumeRefuses checks the refusals: a changed manifest, corpus file
// or prompt; a damaged line in the middle of calls.jsonl; a decision twice;
// another shard.
func TestResumeRefuses(t *testing.T) {
	root := t.TempDir()
	full := filepath.Join(root, "full")
	m := hashStudy(t, "hash-test", 1, 2, nil, 0)
	runTo(t, prepare(t, m), full, runner.Options{})
	calls, _ := os.ReadFile(filepath.Join(full, results.CallsFile))
	rec := startedRecord(t, full)
	bundle := func(name string, c []byte) string {
		dir := filepath.Join(root, name)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, results.ManifestFile), rec, 0o644)
		os.WriteFile(filepath.Join(dir, results.CallsFile), c, 0o644)
		copyTables(t, full, dir)
		return dir
	}
	lines := strings.SplitAfter(string(calls), "\n")
	for _, tc := range []struct {
		name  string
		edit  func(*manifests.Resolved)
		calls string
		opt   runner.Options
		want  string
	}{
		{"manifest", func(m *manifests.Resolved) { m.SHA256 = strings.Repeat("0", 64) }, "", runner.Options{}, "the manifest changed: sha256"},
		{"prompt", func(m *manifests.Resolved) { m.Prompts[0].SHA256 = "abc" }, "", runner.Options{}, "prompt template default (prompts/default.tmpl) changed"},
		{"corpus", func(m *manifests.Resolved) { m.Corpus.Files[3].SHA256 = "abc" }, "", runner.Options{}, "corpus file corpus/paper/P04.json changed"},
		{"middle", nil, strings.Join(lines[:5], "") + "{oops\n" + strings.Join(lines[5:9], ""), runner.Options{}, "calls.jsonl:6:"},
		{"twice", nil, strings.Join(lines[:5], "") + lines[2], runner.Options{}, "appears twice"},
		{"shard", nil, "", runner.Options{Shard: results.Shard{I: 2, N: 3}}, "it runs shard 1/1, not 2/3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := calls
			if tc.calls != "" {
				c = []byte(tc.calls)
			}
			dir := bundle(tc.name, c)
			m := hashStudy(t, "hash-test", 1, 2, nil, 0)
			if tc.edit != nil {
				tc.edit(m)
			}
			_, err := prepare(t, m).Resume(context.Background(), dir, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, results.CallsFile)); !bytes.Equal(b, c) {
				t.Error("a refused resume changed calls.jsonl")
			}
		})
	}
}

// TestInterrupt cancels a run while calls are in flight: the calls finish
// within the grace period and are kept, no new decision starts, the bundle
// is consistent and says what remains, and a resume completes it to equal
// an uninterrupted run. Calls still hanging when the grace period ends are
// cancelled and their decisions redone.
func TestInterrupt(t *testing.T) {
	root := t.TempDir()
	want := filepath.Join(root, "want")
	runTo(t, prepare(t, hashStudy(t, "hash-test", 1, 2, nil, 0)), want, runner.Options{})

	for _, tc := range []struct {
		name  string
		grace time.Duration
		open  bool // open the gate during the grace period
	}{{"finish", 30 * time.Second, true}, {"cancel", 50 * time.Millisecond, false}} {
		t.Run(tc.name, func(t *testing.T) {
			setGate(false)
			defer setGate(true)
			dir := filepath.Join(root, tc.name)
			m := hashStudy(t, "gate-test", 1, 2, nil, 3)
			ctx, cancel := context.WithCancel(context.Background())
			var log bytes.Buffer
			type result struct {
				sum *results.Summary
				err error
			}
			done := make(chan result)
			go func() {
				_, sum, err := prepare(t, m).Run(ctx, runner.Options{Out: dir, Grace: tc.grace, Log: &log})
				done <- result{sum, err}
			}()
			for gate.inFlight.Load() < 3 {
				time.Sleep(time.Millisecond)
			}
			cancel()
			if tc.open {
				time.Sleep(20 * time.Millisecond)
				openGate()
			}
			r := <-done
			// Four workers (two models, parallel 2) and max_in_flight 3.
			if p := gate.peak.Load(); p != 3 {
				t.Errorf("at most %d calls were in flight at once, want max_in_flight (3)", p)
			}
			if !errors.Is(r.err, runner.ErrInterrupted) {
				t.Fatalf("error %v, want ErrInterrupted", r.err)
			}
			wantDone := 0
			if tc.open {
				wantDone = 3
			}
			if r.sum.Decisions != wantDone || r.sum.Remaining != 168-wantDone {
				t.Errorf("interrupted run kept %d decisions (%d remaining), want %d", r.sum.Decisions, r.sum.Remaining, wantDone)
			}
			var rec results.Record
			readJSON(t, filepath.Join(dir, results.ManifestFile), &rec)
			if rec.Completed != wantDone || rec.Remaining != 168-wantDone || rec.Finished != nil || !rec.Sessions[0].Interrupted {
				t.Errorf("manifest.json: completed %d, remaining %d, finished %v, sessions %+v", rec.Completed, rec.Remaining, rec.Finished, rec.Sessions)
			}
			if _, err := os.Stat(filepath.Join(dir, results.DecisionsFile)); err != nil {
				t.Error("the interrupted bundle has no decisions.parquet")
			}
			setGate(true)
			if _, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{}); err != nil {
				t.Fatal(err)
			}
			sameBundle(t, want, dir)
		})
	}
}

// TestShardMerge runs a study as three shards and merges them: the merged
// bundle equals the whole run. Merging refuses a missing shard, a shard
// given twice, an unfinished shard and a shard of another manifest.
func TestShardMerge(t *testing.T) {
	root := t.TempDir()
	whole := filepath.Join(root, "whole")
	m := hashStudy(t, "hash-test", 2, 2, nil, 0)
	runTo(t, prepare(t, m), whole, runner.Options{})
	var shards []string
	total := 0
	for i := 1; i <= 3; i++ {
		dir := filepath.Join(root, fmt.Sprint("shard", i))
		sum := runTo(t, prepare(t, m), dir, runner.Options{Shard: results.Shard{I: i, N: 3}})
		total += sum.Decisions
		shards = append(shards, dir)
	}
	if total != 336 {
		t.Fatalf("shards hold %d decisions, want 336", total)
	}
	merged := filepath.Join(root, "merged")
	// A stopped merge (a cancelled context) leaves nothing at its output.
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := runner.Merge(stopped, merged, shards, runner.MergeOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled merge: %v", err)
	}
	if es, _ := os.ReadDir(root); len(es) != 4 {
		t.Errorf("a cancelled merge left %d entries in its directory, want the 4 bundles", len(es))
	}
	// Shards may be given in any order.
	rec, sum, err := runner.Merge(context.Background(), merged, []string{shards[2], shards[0], shards[1]}, runner.MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Decisions != 336 || len(rec.MergedFrom) != 3 || rec.MergedFrom[0].Shard.I != 1 || rec.Shard != nil || rec.Remaining != 0 {
		t.Errorf("merged: %d decisions, record %+v", sum.Decisions, rec)
	}
	sameBundle(t, whole, merged)
	checkBundle(t, merged, sum)

	// An unfinished shard: interrupt shard 2 of a fresh set at once.
	unfinished := filepath.Join(root, "unfinished")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	prepare(t, m).Run(ctx, runner.Options{Out: unfinished, Shard: results.Shard{I: 2, N: 3}})
	other := hashStudy(t, "hash-test", 2, 2, nil, 0)
	other.SHA256 = strings.Repeat("1", 64)
	otherDir := filepath.Join(root, "other")
	runTo(t, prepare(t, other), otherDir, runner.Options{Shard: results.Shard{I: 3, N: 3}})
	// Shard 3 of another submission (stress slurm's STRESS_SUBMISSION).
	otherSub := filepath.Join(root, "other-submission")
	runTo(t, prepare(t, m), otherSub, runner.Options{Shard: results.Shard{I: 3, N: 3}, Scheduler: &results.Scheduler{Kind: "slurm", JobID: "9", TaskID: "2", Submission: "s2"}})
	for _, tc := range []struct {
		name string
		dirs []string
		want string
	}{
		{"a shard missing", shards[:2], "shard 3/3 is missing"},
		{"a shard twice", []string{shards[0], shards[1], shards[1], shards[2]}, "both hold shard 2/3"},
		{"an unfinished shard", []string{shards[0], unfinished, shards[2]}, "is not finished (112 decisions remain); resume it with: stress run -resume"},
		{"shards of another study", []string{shards[0], shards[1], otherDir}, "are not shards of one study: manifest sha256"},
		{"shard counts differ", []string{whole, shards[0]}, "shard counts differ"},
		{"another submission", []string{shards[0], shards[1], otherSub}, `are shards of different submissions (STRESS_SUBMISSION "" and "s2")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runner.Merge(context.Background(), filepath.Join(root, "bad"), tc.dirs, runner.MergeOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("merge %v: error %v, want %q", tc.dirs, err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(root, "bad")); err == nil {
		t.Error("a refused merge created its output directory")
	}
	// Overlap: a shard whose calls.jsonl was given another shard's lines.
	b1, _ := os.ReadFile(filepath.Join(shards[0], results.CallsFile))
	b2, _ := os.ReadFile(filepath.Join(shards[1], results.CallsFile))
	os.WriteFile(filepath.Join(shards[1], results.CallsFile), append(b2, b1[:bytes.IndexByte(b1, '\n')+1]...), 0o644)
	if _, _, err := runner.Merge(context.Background(), filepath.Join(root, "bad2"), shards, runner.MergeOptions{}); err == nil || !strings.Contains(err.Error(), "belongs to shard 1/3, not 2/3") {
		t.Errorf("merge with a foreign decision: %v", err)
	}
}
