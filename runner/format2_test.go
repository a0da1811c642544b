package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
)

// TestFormat2Bundle: bundles written by an earlier stress at format 2
// (testdata/format2: every call line carries its scenario's fields, seed
// and turn; no defaults.json) analyze with no problem, today's re-scoring
// agreeing with the decisions.parquet that version wrote; the built-in
// baselines study's has the cells and calls of a fresh run of today's
// code, is resumed after a cut (the kept lines stay as they were, the new
// ones are format 3) and is merged as a shard with a format-3 shard.
func TestFormat2Bundle(t *testing.T) {
	root := t.TempDir()
	load := func(name string) (string, *analysis.Loaded) {
		dir := filepath.Join(root, name)
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "format2", name))); err != nil {
			t.Fatal(err)
		}
		var rec results.Record
		readJSON(t, filepath.Join(dir, results.ManifestFile), &rec)
		if rec.Format != 2 {
			t.Fatalf("%s: format %d, want 2", name, rec.Format)
		}
		var log bytes.Buffer
		ld, err := analysis.LoadBundle(context.Background(), dir, &log)
		if err != nil || ld.Problems != 0 {
			t.Fatalf("analyze %s: %v, %d problems\n%s", name, err, ld.Problems, log.String())
		}
		checkBundle2(t, dir)
		return dir, ld
	}
	_, lab := load("lab")
	if n := lab.Acc.Decisions(); n != 72 {
		t.Errorf("lab bundle: %d decisions, want 72", n)
	}
	old, ld := load("baselines")
	load("baselines-shard1")

	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(root, "full")
	runTo(t, prepare(t, m), full, runner.Options{})
	var rec results.Record
	readJSON(t, filepath.Join(full, results.ManifestFile), &rec)
	if rec.Format != results.Format || results.Format != 3 {
		t.Fatalf("a new bundle has format %d", rec.Format)
	}
	fresh, err := analysis.LoadBundle(context.Background(), full, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(fresh.Acc.Cells()) != fmt.Sprint(ld.Acc.Cells()) {
		t.Errorf("cells differ:\n%v\n%v", fresh.Acc.Cells(), ld.Acc.Cells())
	}
	sameCalls(t, full, old)
	sameRows(t, full, old)

	// Resume after a cut in the middle of a line.
	calls, _ := os.ReadFile(filepath.Join(old, results.CallsFile))
	gs := groups(t, "", calls)
	whole := bytes.Join(gs[:len(gs)/2], nil)
	cut := filepath.Join(root, "cut")
	os.MkdirAll(cut, 0o755)
	os.WriteFile(filepath.Join(cut, results.CallsFile), append(whole, gs[len(gs)/2][:40]...), 0o644)
	copyFile(t, filepath.Join(old, results.MessagesFile), filepath.Join(cut, results.MessagesFile))
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
	got, _ := os.ReadFile(filepath.Join(cut, results.CallsFile))
	if !bytes.HasPrefix(got, whole) || bytes.Contains(got[len(whole):], []byte(`"server"`)) {
		t.Error("the resumed bundle does not keep the old lines and leave the server out of the new ones")
	}
	readJSON(t, filepath.Join(cut, results.ManifestFile), &rec)
	if _, err := os.Stat(filepath.Join(cut, results.DefaultsFile)); err != nil || rec.Format != results.Format {
		t.Errorf("resumed bundle: format %d, %v", rec.Format, err)
	}
	checkBundle(t, cut, readSummary(t, cut))

	// Merge of the format-2 shard with a format-3 one.
	shard2 := filepath.Join(root, "shard2")
	runTo(t, prepare(t, m), shard2, runner.Options{Shard: results.Shard{I: 2, N: 2}})
	merged := filepath.Join(root, "merged")
	if _, _, err := runner.Merge(context.Background(), merged, []string{filepath.Join(root, "baselines-shard1"), shard2}, runner.MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	sameCalls(t, full, merged)
	sameRows(t, full, merged)
	checkBundle(t, merged, readSummary(t, merged))
}

// checkBundle2 re-scores a bundle's calls.jsonl and requires the rows of
// its decisions.parquet.
func checkBundle2(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, problems, err := analysis.Rescore(f, results.CallsFile)
	if err != nil || len(problems) > 0 {
		t.Fatalf("%s: rescore: %v %v", dir, err, problems)
	}
	pq, err := results.ReadRows(filepath.Join(dir, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	if errs := analysis.Agree(rows, pq, 5); len(errs) > 0 || len(rows) != len(pq) {
		t.Fatalf("%s: calls.jsonl and decisions.parquet disagree: %v", dir, errs)
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
	for i := range ra {
		if ra[i] != rb[i] {
			t.Fatalf("row %d differs:\n%+v\n%+v", i, ra[i], rb[i])
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
