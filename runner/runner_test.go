package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	_ "github.com/mcpstress/stress/models/baseline"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
	"github.com/mcpstress/stress/synth"
)

func runBuiltin(t testing.TB) (string, *results.Summary) {
	t.Helper()
	dir, sum, _ := runManifest(t, manifests.DefaultName)
	return dir, sum
}

// runManifest runs the built-in manifest name into a temporary directory
// and returns the bundle, its summary and the manifest.
func runManifest(t testing.TB, name string) (string, *results.Summary, *manifests.Resolved) {
	t.Helper()
	m, err := manifests.LoadBuiltin(name)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	dir, sum, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	return dir, sum, m
}

// TestDefaultStudy pins the baseline counts of
// docs/specification.md section 4 and issue 2: always-stop never covers,
// code-registry is 105/105 wherever the code is shown, explicit-policy
// wherever the policy label is shown.
func TestDefaultStudy(t *testing.T) {
	dir, sum := runBuiltin(t)
	if sum.Decisions != 1260 || sum.Calls != 1260 || sum.Errors != 0 || len(sum.Cells) != 12 {
		t.Fatalf("summary: %d decisions, %d calls, %d errors, %d cells; want 1260, 1260, 0, 12", sum.Decisions, sum.Calls, sum.Errors, len(sum.Cells))
	}
	for _, c := range sum.Cells {
		want := 0
		switch {
		case c.Model == "code_registry" && (c.Condition == study.CodeOnly || c.Condition == study.Structured):
			want = 105
		case c.Model == "explicit_policy" && c.Condition == study.Structured:
			want = 105
		}
		if c.N != 105 || c.Count(simulator.Strict) != want || c.Count(simulator.Cover) != want || c.Count(simulator.Retry) != 0 || c.Count(simulator.Invalid) != 0 || c.Count(simulator.AnyFS) != 0 || c.Count(simulator.TerminalFS) != 0 || c.Extra != 0 || c.Errors != 0 {
			t.Errorf("%s/%s: %+v; want N 105, strict = cover = %d, all else 0", c.Model, c.Condition, c, want)
		}
	}
	checkBundle(t, dir, sum)
}

// checkBundle re-derives the counts from calls.jsonl alone, compares them
// with decisions.parquet and summary.json, and checks manifest.json.
func checkBundle(t *testing.T, dir string, sum *results.Summary) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, problems, err := analysis.Rescore(f, "calls.jsonl")
	if err != nil || len(problems) > 0 {
		t.Fatalf("rescore: %v %v", err, problems)
	}
	pq, err := results.ReadRows(filepath.Join(dir, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(pq) != sum.Decisions {
		t.Errorf("parquet has %d rows, want %d", len(pq), sum.Decisions)
	}
	if errs := analysis.Agree(rows, pq, 5); len(errs) > 0 {
		t.Fatalf("calls.jsonl and decisions.parquet disagree: %v", errs)
	}
	if got := results.Count(rows); fmt.Sprint(got) != fmt.Sprint(sum.Cells) {
		t.Errorf("counts from calls.jsonl %v\n differ from the run's %v", got, sum.Cells)
	}
	var rec results.Record
	b, err := os.ReadFile(filepath.Join(dir, results.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Finished == nil || rec.ManifestSHA256 == "" || len(rec.CorpusFiles) != 10 || len(rec.Prompts) == 0 || rec.Prompts[0].SHA256 == "" || rec.Binary.GoVersion == "" || len(rec.Binary.SHA256) != 64 || rec.ReplayCap != 3 {
		t.Errorf("manifest.json lacks facts: %s", b)
	}
	var s2 results.Summary
	b, _ = os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if err := json.Unmarshal(b, &s2); err != nil || !reflect.DeepEqual(s2, *sum) {
		t.Errorf("summary.json %s does not match the run (%v)", b, err)
	}
	// What summary.json records of decisions.parquet is the file's sha256
	// and the fingerprint of the rows it reads back.
	var fp results.Fingerprint
	for i := range pq {
		fp.Add(&pq[i])
	}
	h, err := results.FileSHA256(filepath.Join(dir, results.DecisionsFile))
	if err != nil || s2.Parquet != (results.ParquetCheck{SHA256: h, Rows: fp.N, RowsSum: fp.Hex()}) {
		t.Errorf("summary.json records %+v of decisions.parquet; the file has sha256 %s and rows %d %s", s2.Parquet, h, fp.N, fp.Hex())
	}
}

// TestParquetReadByDuckDB reads decisions.parquet with DuckDB, an
// independent Parquet implementation, and compares its sums with ours.
func TestParquetReadByDuckDB(t *testing.T) {
	dir, sum := runBuiltin(t)
	duckDBCells(t, dir, sum, 1260)
}

// TestLargeParquetReadByDuckDB does the same for a synthetic study of
// 80,016 decisions, whose decisions.parquet has two row groups and
// columns of several pages, as a large run writes it.
func TestLargeParquetReadByDuckDB(t *testing.T) {
	root := t.TempDir()
	if err := synth.Write(context.Background(), filepath.Join(root, "study"), synth.Options{Scenarios: 1667, Servers: 100, Replicates: 4, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	m, err := manifests.Load(filepath.Join(root, "study", synth.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	dir, sum, err := prepare(t, m).Run(context.Background(), runner.Options{Out: filepath.Join(root, "run")})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	for _, ix := range pf.OffsetIndexes() {
		pages = max(pages, len(ix.PageLocations))
	}
	if len(pf.RowGroups()) < 2 || pages < 2 {
		t.Fatalf("decisions.parquet has %d row groups and at most %d pages a column chunk: the test needs more", len(pf.RowGroups()), pages)
	}
	t.Logf("%d row groups, up to %d pages a column chunk", len(pf.RowGroups()), pages)
	duckDBCells(t, dir, sum, 80016)
}

// duckDBCells reads dir's decisions.parquet with DuckDB and checks its
// rows, column types and per-cell sums (the lab columns included) against
// the run's summary.
func duckDBCells(t *testing.T, dir string, sum *results.Summary, rows int) {
	t.Helper()
	script, _ := filepath.Abs("../scripts/duckdb/check.mjs")
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@duckdb", "node-api")); err != nil {
		t.Fatalf("DuckDB for Node is not installed (run scripts/test, which installs it): %v", err)
	}
	out, err := exec.Command("node", script, filepath.Join(dir, results.DecisionsFile)).Output()
	if err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
	var got struct {
		Rows    int `json:"rows"`
		Columns []struct{ Name, Type string }
		Cells   []results.Cell `json:"cells"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Rows != rows {
		t.Errorf("DuckDB reads %d rows, want %d", got.Rows, rows)
	}
	cols := map[string]string{}
	for _, c := range got.Columns {
		cols[c.Name] = c.Type
	}
	for name, typ := range map[string]string{"model": "VARCHAR", "replicate": "BIGINT", "seed": "BIGINT", "strict": "BOOLEAN", "terminal_fs": "BOOLEAN", "replays": "BIGINT", "status": "VARCHAR",
		"recovered": "BOOLEAN", "harm": "BOOLEAN", "invalid_action": "BOOLEAN", "calls": "BIGINT", "lab_ms": "BIGINT"} {
		if cols[name] != typ {
			t.Errorf("column %s: DuckDB type %q, want %s", name, cols[name], typ)
		}
	}
	want := map[string]results.Cell{}
	for _, c := range sum.Cells {
		want[c.Model+"/"+string(c.Condition)] = c
	}
	if len(got.Cells) != len(want) {
		t.Fatalf("DuckDB sees %d cells, want %d", len(got.Cells), len(want))
	}
	for _, c := range got.Cells {
		if w := want[c.Model+"/"+string(c.Condition)]; c != w {
			t.Errorf("DuckDB cell %+v\n           want %+v", c, w)
		}
	}
}

// scripted is a test backend: it answers from a table keyed by scenario
// id, one answer per turn (the last repeating), and recognises the scenario
// and turn from the request's seed, which the simulator derives from them.
type scripted struct {
	answers map[string][]string
	bySeed  map[int64][2]int // seed -> (index into ids, turn)
	ids     []string
}

func newScripted(answers map[string][]string, studySeed uint64, replicates int) *scripted {
	s := &scripted{answers: answers, bySeed: map[int64][2]int{}}
	for id := range answers {
		s.ids = append(s.ids, id)
		for rep := 1; rep <= replicates; rep++ {
			for turn := 0; turn < 4; turn++ {
				s.bySeed[simulator.Seed(studySeed, id, rep, turn)] = [2]int{len(s.ids) - 1, turn}
			}
		}
	}
	return s
}

func (s *scripted) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	if hit, ok := s.bySeed[req.Seed]; ok {
		id := s.ids[hit[0]]
		a := s.answers[id]
		return models.Reply{Text: a[min(hit[1], len(a)-1)], PromptTokens: 7, OutputTokens: 3, Body: []byte("body " + id)}, nil
	}
	return models.Reply{Text: `{"operation_status": "failed", "recovery_policy": "stop_or_escalate"}`}, nil
}

const (
	retryNow = `{"operation_status": "failed", "recovery_policy": "retry_now"}`
	selectT  = `{"operation_status": "failed", "recovery_policy": "select_tool"}`
	revise   = `{"operation_status": "failed", "recovery_policy": "revise_arguments"}`
	stopA    = `{"operation_status": "failed", "recovery_policy": "stop_or_escalate"}`
	succ     = `{"operation_status": "succeeded", "recovery_policy": "stop_or_escalate"}`
	fencedA  = "```json\n{\"operation_status\": \"failed\", \"recovery_policy\": \"revise_arguments\"}\n```"
)

var registerOnce sync.Once

// TestScriptedPipeline feeds scripted answers through runner, simulator,
// bundle and analysis, and checks every column of the counts table.
func TestScriptedPipeline(t *testing.T) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	// Preferred policies: select_tool for S01, S03, S05; revise_arguments
	// for S02, S04, S07, S10, S11, S13. Unlisted scenarios stop.
	back := newScripted(map[string][]string{
		"S01": {selectT},                                                                      // strict, cover
		"S02": {retryNow, retryNow, retryNow, retryNow},                                       // 4 x retry_now: 3 replays, final retry_now (cover, not strict)
		"S03": {retryNow, retryNow, retryNow, stopA},                                          // 3 replays then stop
		"S04": {succ},                                                                         // terminal false success, stop
		"S05": {`{"operation_status": "succeeded", "recovery_policy": "retry_now"}`, selectT}, // any-FS only, 1 replay, strict
		"S07": {"the tool is broken"},                                                         // invalid
		"S10": {fencedA},                                                                      // fenced JSON: strict
		"S11": {retryNow, `{"operation_status": "failed"}`},                                   // replay then invalid (missing field)
		"S13": {`{"operation_status": "succeeded", "recovery_policy": "reboot"}`},             // invalid and any-FS + terminal-FS
	}, m.Seed, 2)
	registerOnce.Do(func() {
		models.Register("scripted-test", models.Backend{New: func(models.Spec) (models.Model, error) { return back, nil }})
	})
	m.Models = []manifests.Model{{Name: "scripted", Backend: "scripted-test", Model: "x"}}
	m.Conditions = []study.Condition{study.Normalized}
	m.Replicates = 2
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	dir, sum, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	// Per replicate: strict S01, S05, S10 = 3; cover = 3 + S02 = 4;
	// retry: S02, S03, S05, S11 = 4; invalid S07, S11, S13 = 3;
	// any FS: S04, S05, S13 = 3; terminal FS: S04, S13 = 2;
	// extra: 3 + 3 + 1 + 1 = 8. Every other scenario stops.
	want := results.Cell{Model: "scripted", Prompt: "default", Condition: study.Normalized, N: 42, Extra: 16, Counts: [simulator.NumColumns]int{simulator.Strict: 6, simulator.Proven: 6, simulator.Cover: 8, simulator.Retry: 8, simulator.Invalid: 6, simulator.AnyFS: 6, simulator.TerminalFS: 4}}
	if len(sum.Cells) != 1 || sum.Cells[0] != want {
		t.Fatalf("cells %+v\nwant %+v", sum.Cells, want)
	}
	if sum.Calls != 42+16 {
		t.Errorf("calls %d, want %d", sum.Calls, 42+16)
	}
	checkBundle(t, dir, sum)
	// Raw bodies, token counts and hashes are stored per call.
	f, _ := os.Open(filepath.Join(dir, results.CallsFile))
	defer f.Close()
	cr := results.NewCallReader(f, "calls.jsonl")
	n := 0
	for cr.Scan() {
		c := cr.Call()
		if c.Key.Scenario == "S02" && c.Turn == 3 {
			n++
			if string(c.Body) != "body S02" || c.BodySHA256 != results.SHA256([]byte("body S02")) || c.PromptTokens != 7 || c.Response != retryNow || len(c.Request.Messages) != 8 {
				t.Errorf("S02 turn 3 call: %+v", c)
			}
		}
	}
	if n != 2 {
		t.Errorf("S02 reached turn 3 in %d replicates, want 2", n)
	}
}

// TestPinning checks that a run refuses an unpinned model of a pinned
// backend unless allowed, and records that it was allowed.
func TestPinning(t *testing.T) {
	registerPinned.Do(func() {
		models.Register("pinned-test", models.Backend{Pinned: true, New: func(s models.Spec) (models.Model, error) {
			return newScripted(nil, 0, 0), nil
		}})
	})
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	m.Models = []manifests.Model{{Name: "llama", Backend: "pinned-test", Model: "llama3.2"}}
	m.Replicates = 1
	_, err = runner.Prepare(m, false)
	if err == nil || !strings.Contains(err.Error(), "models[0].digest") || !strings.Contains(err.Error(), "-allow-unpinned") {
		t.Fatalf("error %v, want a refusal naming models[0].digest and -allow-unpinned", err)
	}
	plan, err := runner.Prepare(m, true)
	if err != nil {
		t.Fatal(err)
	}
	dir, _, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "run"), Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, results.ManifestFile))
	if !strings.Contains(string(b), `"allow_unpinned": true`) || !strings.Contains(string(b), `"unpinned_models": [`) {
		t.Errorf("manifest.json does not record the unpinned run: %s", b)
	}
	m.Models[0].Backend = "nonesuch"
	if _, err := runner.Prepare(m, true); err == nil || !strings.Contains(err.Error(), `models[0].backend: unknown backend "nonesuch"`) {
		t.Errorf("error %v, want an unknown-backend error naming the field", err)
	}
}

var registerPinned sync.Once

func TestOutputDirMustBeEmpty(t *testing.T) {
	m, _ := manifests.LoadBuiltin(manifests.DefaultName)
	plan, _ := runner.Prepare(m, false)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("precious"), 0o644)
	if _, _, err := plan.Run(context.Background(), runner.Options{Out: dir}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("error %v, want a refusal to write into a non-empty directory", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "precious" {
		t.Error("existing data was touched")
	}
}

// BenchmarkDefaultStudy measures the whole default study (1,260 decisions)
// through runner, simulator and storage, bundle written.
func BenchmarkDefaultStudy(b *testing.B) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		b.Fatal(err)
	}
	plan, err := runner.Prepare(m, false)
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(root, fmt.Sprint(i))}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(plan.Decisions()*b.N)/b.Elapsed().Seconds(), "decisions/s")
}
