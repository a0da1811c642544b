package runner_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/study"
)

// TestDefaultsCoverage: a run records in defaults.json which of its
// conditions express each scenario (category: not the paper corpus's
// unknown tools); a bundle written before it did (a table without
// coverage) resumes and keeps its table, and merges with shards that
// record it into a bundle that does not, as that shard does not; shards
// that all record it merge into one that does.
func TestDefaultsCoverage(t *testing.T) {
	root := t.TempDir()
	m := hashStudy(t, "hash-test", 1, 2, nil, 0)
	m.Conditions = []study.Condition{study.Normalized, study.Category}
	load := func(dir string) *results.Defaults {
		t.Helper()
		d, err := results.LoadDefaults(filepath.Join(dir, results.DefaultsFile))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	var shards []string
	for i := 1; i <= 2; i++ {
		dir := filepath.Join(root, "shard"+string(rune('0'+i)))
		runTo(t, prepare(t, m), dir, runner.Options{Shard: results.Shard{I: i, N: 2}})
		shards = append(shards, dir)
	}
	d := load(shards[0])
	if !d.Coverage() || !slices.Equal(d.Scenarios["S01"].Unexpressed, []study.Condition{study.Category}) || d.Scenarios["S02"].Unexpressed != nil {
		t.Fatalf("defaults.json: conditions %v, S01 %v, S02 %v", d.Conditions, d.Scenarios["S01"].Unexpressed, d.Scenarios["S02"].Unexpressed)
	}
	merged := filepath.Join(root, "merged")
	if _, _, err := runner.Merge(context.Background(), merged, shards, runner.MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := load(merged); !got.Coverage() || got.Same(d, "merged") != nil {
		t.Errorf("merged: conditions %v", got.Conditions)
	}

	// Shard 1 as a stress before coverage wrote it.
	old := d.WithoutCoverage()
	if err := results.WriteJSON(filepath.Join(shards[0], results.DefaultsFile), old); err != nil {
		t.Fatal(err)
	}
	mixed := filepath.Join(root, "mixed")
	if _, _, err := runner.Merge(context.Background(), mixed, []string{shards[1], shards[0]}, runner.MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := load(mixed); got.Coverage() || got.Same(old, "mixed") != nil || got.Scenarios["S01"].Unexpressed != nil {
		t.Errorf("merged with an old shard: conditions %v, S01 %v", got.Conditions, got.Scenarios["S01"].Unexpressed)
	}

	// An unfinished bundle of an older stress resumes, keeping its table.
	dir := filepath.Join(root, "unfinished")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	prepare(t, m).Run(ctx, runner.Options{Out: dir})
	if err := results.WriteJSON(filepath.Join(dir, results.DefaultsFile), old); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, results.DefaultsFile))
	sum, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{})
	if err != nil || sum.Decisions != 2*2*21 {
		t.Fatalf("resume: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, results.DefaultsFile)); !bytes.Equal(before, after) {
		t.Error("the resumed bundle's table changed")
	}
}
