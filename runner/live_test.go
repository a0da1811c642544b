package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/internal/testserver/fakeenv"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// liveFaults are the fake environment's faults of the live tests: every
// scenario is a transient fault failing twice, but S02 and S03 (a timeout
// after a committed write), S04 (fails once, and a success is shown to
// the model) and S15 (fails once).
var liveFaults = map[string]fakeenv.Spec{
	"S02": {Kind: fakeenv.Committed},
	"S03": {Kind: fakeenv.Committed},
	"S04": {Kind: fakeenv.Transient, Fails: 1, Continue: true},
	"S15": {Kind: fakeenv.Transient, Fails: 1},
}

func liveEnv(m *manifests.Resolved) *fakeenv.Factory {
	return fakeenv.New(m.Corpus.Scenarios, liveFaults, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 2})
}

// liveStudy is hashStudy with replay: live.
func liveStudy(t testing.TB, backend string, reps, parallel int) *manifests.Resolved {
	t.Helper()
	m := hashStudy(t, backend, reps, parallel, nil, 0)
	m.Replay = manifests.ReplayLive
	return m
}

var registerLive sync.Once

// TestLivePipeline runs scripted answers through live replay in the fake
// environment, the runner, the bundle, the analysis (re-scoring from
// calls.jsonl alone) and Parquet (read back by us and by DuckDB), and pins
// every column, the lab ones included.
func TestLivePipeline(t *testing.T) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	back := newScripted(map[string][]string{
		"S01": {retryNow},                                                                            // fails twice: two replays, recovered (3 calls, 120 ms)
		"S02": {retryNow},                                                                            // committed: the replay duplicates (harm; 2 calls, 80 ms)
		"S03": {stopA},                                                                               // committed: stopping keeps one write (recovered; 1 call)
		"S04": {retryNow, succ},                                                                      // the success is shown and claimed: recovered, no false success
		"S05": {`{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": 500}`}, // 2 delayed replays: 3 calls, 1120 ms
		"S06": {selectT},                                                                             // preferred, executed twice: strict, recovered
		"S07": {"the tool is broken"},                                                                // invalid, not executed
		"S08": {succ},                                                                                // a success claim that nothing backs: any and terminal FS
		"S15": {`{"operation_status": "failed", "recovery_policy": "authenticate"}`},                 // a credential call and the call: 3 calls, strict
	}, m.Seed, 2)
	registerLive.Do(func() {
		models.Register("scripted-live-test", models.Backend{New: func(models.Spec) (models.Model, error) { return back, nil }})
	})
	m.Models = []manifests.Model{{Name: "scripted", Backend: "scripted-live-test", Model: "x"}}
	m.Conditions = []study.Condition{study.Normalized}
	m.Replicates = 2
	m.Replay = manifests.ReplayLive
	plan := prepare(t, m)
	dir, sum, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "run"), Env: liveEnv(m)})
	if err != nil {
		t.Fatal(err)
	}
	// Per replicate: strict S06, S15; cover S01, S02, S05, S06, S15;
	// retry (retry_now, outside every non-harm set) S01, S02, S04;
	// invalid S07; any and terminal FS S08; extra 2+1+1+2+2+1 = 9;
	// recovered S01, S03, S04, S05, S06, S15; harm S02; calls S01 3, S02 2,
	// S03 1, S04 2, S05 3, S06 3, S15 3, and 1 for S07, S08 and the 12
	// that stop: 17 + 14 = 31; lab ms 40 a call and S05's 2 × 500 of
	// delay: 31·40 + 1000 = 2240. Model calls: 25.
	want := results.Cell{Model: "scripted", Prompt: "default", Condition: study.Normalized, N: 42, Extra: 18, LabN: 42, // Both Strict decisions (S06, S15) recovered; 4 others did.
		LabelAction: results.Agreement{StrictRecovered: 4, OtherRecovered: 8, OtherUnrecovered: 30}, Counts: [simulator.NumColumns]int{simulator.Strict: 4, simulator.Proven: 4, simulator.Cover: 10, simulator.Retry: 6, simulator.Invalid: 2, simulator.AnyFS: 2, simulator.TerminalFS: 2, simulator.Recovered: 12, simulator.Harm: 2, simulator.HarmDuplicate: 2, simulator.Calls: 62, simulator.LabMS: 4480}}
	if len(sum.Cells) != 1 || sum.Cells[0] != want {
		t.Fatalf("cells %+v\nwant %+v", sum.Cells, want)
	}
	if sum.Calls != 50 {
		t.Errorf("%d model calls, want 50", sum.Calls)
	}
	checkBundle(t, dir, sum)
	duckDBCells(t, dir, sum, 42)
	rows, err := results.ReadRows(filepath.Join(dir, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if !r.Lab() || !hasAll(r.Outcome, simulator.Recovered, simulator.Harm, simulator.Calls, simulator.LabMS) {
			t.Fatalf("row %+v lacks lab columns", r)
		}
		if r.Scenario == "S05" && (r.Outcome.Value(simulator.Calls) != 3 || r.Outcome.Value(simulator.LabMS) != 1120 || !r.Outcome.Of(simulator.Recovered) || r.Replays != 2) {
			t.Errorf("S05 row: calls %d, lab ms %d, recovered %v, replays %d", r.Outcome.Value(simulator.Calls), r.Outcome.Value(simulator.LabMS), r.Outcome.Of(simulator.Recovered), r.Replays)
		}
	}
	// manifest.json records the replay mode; every call line records it
	// with its observation; the last line of each decision its outcome.
	var rec results.Record
	readJSON(t, filepath.Join(dir, results.ManifestFile), &rec)
	if rec.Manifest.Replay != manifests.ReplayLive {
		t.Errorf("manifest.json: replay %q", rec.Manifest.Replay)
	}
	calls, err := results.ReadCalls(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		last := i == len(calls)-1 || calls[i+1].Turn == 0
		if c.Replay != manifests.ReplayLive || c.Observation == nil || (c.Env != nil) != last {
			t.Fatalf("call line %d (%s turn %d): replay %q, observation %s, env %v", i+1, c.Key, c.Turn, c.Replay, c.Observation, c.Env)
		}
		if c.Key.Scenario == "S04" && c.Turn == 1 && !strings.Contains(c.Request.Messages[3].Content, `"text": "done"`) {
			t.Errorf("S04 turn 1 does not show the success: %q", c.Request.Messages[3].Content)
		}
	}
	// The analysis re-scores the lab columns from calls.jsonl alone.
	ld, err := analysis.LoadBundle(context.Background(), dir, &bytes.Buffer{})
	if err != nil || ld.Problems != 0 {
		t.Fatalf("load: %v, %d problems", err, ld.Problems)
	}
	if c := ld.Acc.Cells(); len(c) != 1 || c[0] != want {
		t.Errorf("analysis cells %+v", c)
	}
}

// TestLiveDeterminismAndResume: a live study gives the same bundle at
// parallelism 1 and 4 and as two merged shards, and a run cut at many points of calls.jsonl and
// resumed equals the uninterrupted one (a decision interrupted between
// its lines has no outcome line yet and is redone).
func TestLiveDeterminismAndResume(t *testing.T) {
	root := t.TempDir()
	full := filepath.Join(root, "full")
	m := liveStudy(t, "hash-test", 1, 1)
	sum := runTo(t, prepare(t, m), full, runner.Options{Env: liveEnv(m)})
	if c := sum.Cells[0]; c.LabN != c.N || c.Extra == 0 || c.Count(simulator.Recovered) == 0 || c.Count(simulator.Harm) == 0 || c.Count(simulator.Calls) <= c.N {
		t.Fatalf("cell %+v: want lab outcomes with replays, recoveries and harm", c)
	}
	checkBundle(t, full, sum)
	par := filepath.Join(root, "par")
	mp := liveStudy(t, "hash-test", 1, 4)
	runTo(t, prepare(t, mp), par, runner.Options{Env: liveEnv(mp)})
	sameBundle(t, full, par)
	// Shards of a live study merge into the whole run.
	var shards []string
	for i := 1; i <= 2; i++ {
		dir := filepath.Join(root, fmt.Sprint("shard", i))
		runTo(t, prepare(t, m), dir, runner.Options{Env: liveEnv(m), Shard: results.Shard{I: i, N: 2}})
		shards = append(shards, dir)
	}
	merged := filepath.Join(root, "merged")
	if _, _, err := runner.Merge(context.Background(), merged, shards, runner.MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	sameBundle(t, full, merged)

	calls, _ := os.ReadFile(filepath.Join(full, results.CallsFile))
	rec := startedRecord(t, full)
	gs := groups(t, full, calls)
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(gs), func(i, j int) { gs[i], gs[j] = gs[j], gs[i] })
	shuffled := bytes.Join(gs, nil)
	cuts := []int{0, len(shuffled)}
	off, multi := 0, 0
	for _, g := range gs {
		if n := bytes.Count(g, []byte("\n")); n > 1 && multi < 3 {
			first := bytes.IndexByte(g, '\n') + 1
			cuts = append(cuts, off+first, off+len(g)-1) // after turn 0; before the last newline
			multi++
		}
		off += len(g)
	}
	if multi < 3 {
		t.Fatalf("only %d multi-turn decisions", multi)
	}
	for range 4 {
		cuts = append(cuts, rng.IntN(len(shuffled)))
	}
	for k, cut := range cuts {
		t.Run(fmt.Sprintf("resume after a cut at byte %d", cut), func(t *testing.T) {
			dir := filepath.Join(root, fmt.Sprint("cut", k))
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, results.ManifestFile), rec, 0o644)
			os.WriteFile(filepath.Join(dir, results.CallsFile), shuffled[:cut], 0o644)
			copyTables(t, full, dir)
			var log bytes.Buffer
			env := liveEnv(m)
			sum, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{Log: &log, Env: env})
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			if sum.Remaining != 0 {
				t.Errorf("%d remaining", sum.Remaining)
			}
			sameBundle(t, full, dir)
			// Only the decisions not kept were run again.
			whole := shuffled[:bytes.LastIndexByte(shuffled[:cut], '\n')+1]
			kept := bytes.Count(whole, []byte(`"env":{`))
			if got := int(env.Made.Load()); got != 168-kept {
				t.Errorf("%d environments made, want %d (168 - %d kept)", got, 168-kept, kept)
			}
		})
	}
}

// TestLiveRefusals: a live study without an environment factory, or with
// a prompt that has no live template, is refused before any call or file;
// an environment that fails stops the run, and a resume with a working
// one completes it.
func TestLiveRefusals(t *testing.T) {
	root := t.TempDir()
	m := liveStudy(t, "hash-test", 1, 1)
	out := filepath.Join(root, "none")
	_, _, err := prepare(t, m).Run(context.Background(), runner.Options{Out: out})
	if err == nil || !strings.Contains(err.Error(), `field replay: "live" needs an environment`) {
		t.Errorf("no factory: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run created its bundle")
	}
	if _, err := prepare(t, m).Resume(context.Background(), out, runner.Options{}); err == nil || !strings.Contains(err.Error(), "field replay") {
		t.Errorf("resume without a factory: %v", err)
	}
	// A stored study ignores the factory.
	stored := hashStudy(t, "hash-test", 1, 1, nil, 0)
	env := liveEnv(stored)
	runTo(t, prepare(t, stored), filepath.Join(root, "stored"), runner.Options{Env: env})
	if env.Made.Load() != 0 {
		t.Error("a stored study made environments")
	}

	old := liveStudy(t, "hash-test", 1, 1)
	text := old.Prompts[0].Text
	old.Prompts[0].Text = text[:strings.Index(text, `{{define "live"`)]
	if _, err := runner.Prepare(old, false); err == nil || !strings.Contains(err.Error(), `field prompts[0].path: prompts/default.tmpl defines no "live" template`) {
		t.Errorf("prompt without live: %v", err)
	}

	// Environments that fail (one breaks after a call, one never starts)
	// make error decisions, recorded as the environment's and reported
	// apart; the run goes on, and a resume with -retry-errors runs them
	// again once the environment is mended.
	broken := filepath.Join(root, "broken")
	faults := maps.Clone(liveFaults)
	faults["S09"] = fakeenv.Spec{Kind: fakeenv.Transient, Fails: 2, Broken: true}
	faults["S10"] = fakeenv.Spec{Kind: fakeenv.Transient, Fails: 2, FailStart: true}
	bad := fakeenv.New(m.Corpus.Scenarios, faults, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 2})
	_, sum, err := prepare(t, m).Run(context.Background(), runner.Options{Out: broken, Env: bad})
	if err != nil {
		t.Fatalf("a run with failing environments stopped: %v", err)
	}
	perScenario := sum.Decisions / len(m.Corpus.Scenarios)
	calls, err := results.ReadCalls(filepath.Join(broken, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	envErrs := map[string]int{}
	for _, c := range calls {
		if c.Error != "" {
			if !c.EnvError || !strings.Contains(c.Error, "environment of scenario "+c.Key.Scenario) {
				t.Errorf("%s turn %d: error %q, env_error %v", c.Key, c.Turn, c.Error, c.EnvError)
			}
			envErrs[c.Key.Scenario]++
			if c.Key.Scenario == "S10" && (c.Turn != 0 || c.Response != "" || len(c.Request.Messages) == 0) {
				t.Errorf("%s: a start failure on turn %d, response %q", c.Key, c.Turn, c.Response)
			}
		}
	}
	// S09's environment breaks when a policy is executed, S10's at start.
	if envErrs["S09"] == 0 || envErrs["S10"] != perScenario || sum.Errors != envErrs["S09"]+envErrs["S10"] {
		t.Errorf("environment failures per scenario %v, %d error decisions", envErrs, sum.Errors)
	}
	failed := sum.Errors
	f, err := os.Open(filepath.Join(broken, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := analysis.Transport(f, filepath.Join(broken, results.CallsFile))
	f.Close()
	var tb strings.Builder
	if err != nil || ts.EnvFailedTotal != failed || analysis.WriteTransport(&tb, ts) != nil ||
		!strings.Contains(tb.String(), fmt.Sprintf("Environment failures (the live environment did not start, died or could not be read; excluded from the counts; stress run -resume DIR -retry-errors runs them again): %d", failed)) ||
		strings.Contains(tb.String(), "Transport events") {
		t.Errorf("the transport summary: %v\n%s", err, tb.String())
	}
	if _, err := prepare(t, m).Resume(context.Background(), broken, runner.Options{Env: liveEnv(m), RetryErrors: true}); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "want")
	runTo(t, prepare(t, m), want, runner.Options{Env: liveEnv(m)})
	sameBundle(t, want, broken)
}

// TestLiveResultLine: a decision the environment settled records the
// unseen result on its last line, and its row counts that execution.
func TestLiveResultLine(t *testing.T) {
	m := liveStudy(t, "hash-test", 1, 1)
	dir := filepath.Join(t.TempDir(), "run")
	runTo(t, prepare(t, m), dir, runner.Options{Env: liveEnv(m)})
	calls, err := results.ReadCalls(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := results.ReadRows(filepath.Join(dir, results.DecisionsFile))
	byKey := map[string]results.Row{}
	for _, r := range rows {
		byKey[r.Key().String()] = r
	}
	settled := 0
	for i, c := range calls {
		if c.Result == nil {
			continue
		}
		settled++
		if c.Env == nil || (i+1 < len(calls) && calls[i+1].Turn != 0) {
			t.Fatalf("%s turn %d: a result on a line that is not the last", c.Key, c.Turn)
		}
		var v map[string]any
		if json.Unmarshal(c.Result, &v) != nil {
			t.Fatalf("result %s", c.Result)
		}
		if r := byKey[c.Key.String()]; r.Replays != r.Turns {
			t.Errorf("%s: %d replays in %d turns, want as many (the last answer was executed)", c.Key, r.Replays, r.Turns)
		}
	}
	if settled == 0 {
		t.Error("no decision was settled by the environment")
	}
}

// retryModel answers retry_now at once, whatever it is shown.
type retryModel struct{}

func (retryModel) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	return models.Reply{Text: retryNow}, nil
}

func init() {
	models.Register("retry-bench", models.Backend{New: func(models.Spec) (models.Model, error) { return retryModel{}, nil }})
}

// BenchmarkLiveStudy runs 840 decisions (2 models × 4 conditions × 21
// scenarios × 5 replicates) of a zero-latency model that retries until
// the cap, through the runner with the bundle written, under stored and
// live replay (the fake environment, whose fault outlasts the cap):
// ns/executed is the time per replay, so the live overhead per executed
// call is the difference of the two.
//
//	go test ./runner -run '^$' -bench LiveStudy -benchtime 5x
func BenchmarkLiveStudy(b *testing.B) {
	for _, live := range []bool{false, true} {
		name := "stored"
		if live {
			name = "live"
		}
		b.Run(name, func(b *testing.B) {
			m := hashStudy(b, "retry-bench", 5, 1, nil, 0)
			var opt runner.Options
			if live {
				m.Replay = manifests.ReplayLive
				opt.Env = fakeenv.New(m.Corpus.Scenarios, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 10})
			}
			p := prepare(b, m)
			root := b.TempDir()
			i := 0
			for b.Loop() {
				i++
				sum := runTo(b, p, filepath.Join(root, fmt.Sprint(i)), opt)
				if sum.Cells[0].Extra != 3*105 {
					b.Fatalf("cell %+v: want 3 replays a decision", sum.Cells[0])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(840*3*b.N), "ns/executed")
		})
	}
}

// hasAll reports whether o has a value in every column of cols.
func hasAll(o simulator.Values, cols ...simulator.Col) bool {
	for _, c := range cols {
		if _, ok := o.Get(c); !ok {
			return false
		}
	}
	return true
}
