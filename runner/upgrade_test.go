package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
)

// upgrade converts the checked-in bundle testdata/FORMAT/NAME
// (results.Upgrade) into root/NAME and checks that it analyzes without
// problems, its calls.jsonl re-scored agreeing with its decisions.parquet.
func upgrade(t *testing.T, root, format, name string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if _, err := results.Upgrade(context.Background(), filepath.Join("testdata", format, name), dir, io.Discard); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	ld, err := analysis.LoadBundle(context.Background(), dir, &log)
	if err != nil || ld.Problems != 0 {
		t.Fatalf("analyze %s: %v\n%s", name, err, log.String())
	}
	f, err := os.Open(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, problems, err := analysis.Rescore(f, results.CallsFile)
	if err != nil || len(problems) > 0 {
		t.Fatalf("%s: rescore: %v %v", name, err, problems)
	}
	pq, err := results.ReadRows(filepath.Join(dir, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	// A file written before some columns existed (proven) is compared
	// without them, as analyze compares it.
	missing, err := results.MissingColumns(filepath.Join(dir, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i] = rows[i].Without(missing)
	}
	for i := range pq {
		pq[i] = pq[i].Without(missing)
	}
	if errs := analysis.Agree(rows, pq, 5); len(errs) > 0 || len(rows) != len(pq) {
		t.Fatalf("%s: calls.jsonl and decisions.parquet disagree: %v", name, errs)
	}
	return dir
}

// TestUpgradedBundle: bundles written by earlier versions of stress
// (testdata/format1 and testdata/format2), upgraded, analyze with no
// problem, today's re-scoring agreeing with the decisions.parquet that
// version wrote; the built-in baselines study's has the calls and rows of
// a fresh run of today's code, is resumed after a cut and is merged as a
// shard with a shard of today's code.
func TestUpgradedBundle(t *testing.T) {
	root := t.TempDir()
	upgrade(t, root, "format1", "hash-small")
	upgrade(t, root, "format2", "lab")
	old := upgrade(t, root, "format2", "baselines")
	shard1 := upgrade(t, root, "format2", "baselines-shard1")

	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(root, "full")
	runTo(t, prepare(t, m), full, runner.Options{})
	sameCalls(t, full, old)
	sameRows(t, full, old)

	// Resume after a cut in the middle of a line.
	calls, _ := os.ReadFile(filepath.Join(old, results.CallsFile))
	gs := groups(t, old, calls)
	whole := bytes.Join(gs[:len(gs)/2], nil)
	cut := filepath.Join(root, "cut")
	os.MkdirAll(cut, 0o755)
	os.WriteFile(filepath.Join(cut, results.CallsFile), append(whole, gs[len(gs)/2][:40]...), 0o644)
	copyTables(t, old, cut)
	var r map[string]any
	readJSON(t, filepath.Join(old, results.ManifestFile), &r)
	r["calls_durable_bytes"] = len(whole)
	delete(r, "finished")
	rb, _ := json.Marshal(r)
	os.WriteFile(filepath.Join(cut, results.ManifestFile), rb, 0o644)
	if _, err := prepare(t, m).Resume(context.Background(), cut, runner.Options{}); err != nil {
		t.Fatal(err)
	}
	sameCalls(t, full, cut)
	sameRows(t, full, cut)
	checkBundle(t, cut, readSummary(t, cut))

	// Merge of the upgraded shard with one of today's.
	shard2 := filepath.Join(root, "shard2")
	runTo(t, prepare(t, m), shard2, runner.Options{Shard: results.Shard{I: 2, N: 2}})
	merged := filepath.Join(root, "merged")
	if _, _, err := runner.Merge(context.Background(), merged, []string{shard1, shard2}, runner.MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	sameCalls(t, full, merged)
	sameRows(t, full, merged)
	checkBundle(t, merged, readSummary(t, merged))
}

// TestOlderFormatRefused: a bundle of format 1 or 2 is neither resumed
// nor merged; the error names the bundle, its format and stress upgrade,
// and the bundle is left as it was (no lock file either).
func TestOlderFormatRefused(t *testing.T) {
	root := t.TempDir()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ format, name, want string }{
		{"format1", "hash-small", "is a bundle of format 1; this version reads format 3: run `stress upgrade "},
		{"format2", "baselines-shard1", "is a bundle of format 2; this version reads format 3: run `stress upgrade "},
	} {
		t.Run("a "+tc.format+" bundle is refused", func(t *testing.T) {
			dir := filepath.Join(root, tc.name)
			if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", tc.format, tc.name))); err != nil {
				t.Fatal(err)
			}
			want := dir + " " + tc.want + dir + " -out NEW_DIR`"
			_, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("resume %s: %v, want %q", tc.name, err, want)
			}
			_, _, err = runner.Merge(context.Background(), filepath.Join(root, "merged"), []string{dir}, runner.MergeOptions{})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("merge %s: %v, want %q", tc.name, err, want)
			}
			if _, err := os.Stat(filepath.Join(dir, results.LockFile)); !os.IsNotExist(err) {
				t.Errorf("%s: a refused bundle got a lock file (%v)", tc.name, err)
			}
		})
	}
}

// sameCalls compares two bundles' calls with their requests expanded,
// but for latency and endpoint.
func sameCalls(t *testing.T, want, got string) {
	t.Helper()
	a, err := results.ReadCalls(filepath.Join(want, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := results.ReadCalls(filepath.Join(got, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("%d calls against %d", len(a), len(b))
	}
	for i := range a {
		a[i].LatencyMS, b[i].LatencyMS, a[i].Endpoint, b[i].Endpoint = 0, 0, "", ""
		ja, _ := json.Marshal(&a[i])
		jb, _ := json.Marshal(&b[i])
		if !bytes.Equal(ja, jb) {
			t.Fatalf("call %d differs:\n%s\n%s", i, ja, jb)
		}
	}
}

// sameRows compares two bundles' decisions.parquet row for row.
func sameRows(t testing.TB, want, got string) {
	t.Helper()
	ra, err := results.ReadRows(filepath.Join(want, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := results.ReadRows(filepath.Join(got, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ra) != len(rb) {
		t.Fatalf("%d rows vs %d", len(ra), len(rb))
	}
	// Rows are compared without the columns a file written before they
	// existed lacks (an upgraded bundle keeps its decisions.parquet).
	var missing []simulator.Col
	for _, dir := range []string{want, got} {
		m, err := results.MissingColumns(filepath.Join(dir, results.DecisionsFile))
		if err != nil {
			t.Fatal(err)
		}
		missing = append(missing, m...)
	}
	for i := range ra {
		if ra[i].Without(missing) != rb[i].Without(missing) {
			t.Fatalf("row %d differs:\n%+v\n%+v", i, ra[i], rb[i])
		}
	}
}

func readSummary(t *testing.T, dir string) *results.Summary {
	t.Helper()
	var s results.Summary
	readJSON(t, filepath.Join(dir, results.SummaryFile), &s)
	return &s
}
