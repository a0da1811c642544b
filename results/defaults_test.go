package results_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/study"
)

// TestDefaultsCoverage: the defaults table records the study's conditions
// and, per scenario, those that do not express it (absent when every one
// does); Same compares them only when both tables record them, so a
// table written before they were recorded stays the same study's, and
// KeepDefaults keeps such a table as it is.
func TestDefaultsCoverage(t *testing.T) {
	m, err := manifests.LoadBuiltin("lab.yaml") // the lab corpus
	if err != nil {
		t.Fatal(err)
	}
	conds := []study.Condition{study.Normalized, study.Structured, study.Category, study.SEP2145, study.ToolFailureShape, study.RateLimited, study.ToolFailureSEP2145}
	d := results.NewDefaults(m.Seed, m.Corpus.Scenarios, conds)
	if !d.Coverage() || !slices.Equal(d.Conditions, conds) {
		t.Fatalf("conditions %v, want %v", d.Conditions, conds)
	}
	for _, tc := range []struct {
		name, id string
		want     []study.Condition
	}{
		{"outage as isError is classified only", "X01", []study.Condition{study.SEP2145, study.RateLimited}},
		{"success-shaped failure", "X22", []study.Condition{study.Category, study.SEP2145, study.ToolFailureShape, study.RateLimited, study.ToolFailureSEP2145}},
		{"server's rate limit as JSON-RPC error", "X40", []study.Condition{study.ToolFailureShape}},
		{"unknown tool as isError", "X29", []study.Condition{study.Category, study.SEP2145, study.RateLimited}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := d.Scenarios[tc.id].Unexpressed; !slices.Equal(got, tc.want) {
				t.Errorf("%s: unexpressed %v, want %v", tc.id, got, tc.want)
			}
		})
	}
	dir := t.TempDir()
	file := filepath.Join(dir, results.DefaultsFile)
	if wrote, err := results.KeepDefaults(file, d, true); err != nil || !wrote {
		t.Fatal(wrote, err)
	}
	// ratelimited expresses X40 alone: every scenario has the member; a
	// study of conditions that express every scenario has none.
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(raw, []byte(`"unexpressed"`)); n != len(d.Scenarios) {
		t.Errorf("%d of %d scenarios have an unexpressed member", n, len(d.Scenarios))
	}
	var plain bytes.Buffer
	all := results.NewDefaults(m.Seed, m.Corpus.Scenarios, []study.Condition{study.Normalized, study.Structured})
	if err := json.NewEncoder(&plain).Encode(all); err != nil || bytes.Contains(plain.Bytes(), []byte("unexpressed")) || !all.Coverage() {
		t.Errorf("a study whose conditions express every scenario: %v\n%s", err, plain.Bytes())
	}
	back, err := results.LoadDefaults(file)
	if err != nil || back.Same(d, file) != nil || !slices.Equal(back.Conditions, d.Conditions) {
		t.Fatalf("read back: %v", err)
	}

	// A table written before coverage was recorded: the same study's
	// either way, and kept as it is.
	old := d.WithoutCoverage()
	if old.Coverage() || old.Same(d, "old") != nil || d.Same(old, "new") != nil {
		t.Errorf("a table without coverage is not the same study's: %v, %v", old.Same(d, "old"), d.Same(old, "new"))
	}
	oldFile := filepath.Join(t.TempDir(), results.DefaultsFile)
	if _, err := results.KeepDefaults(oldFile, old, true); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(oldFile)
	if wrote, err := results.KeepDefaults(oldFile, d, false); err != nil || wrote {
		t.Errorf("keeping the new table over the old: wrote %v, %v", wrote, err)
	}
	if after, _ := os.ReadFile(oldFile); !bytes.Equal(before, after) || bytes.Contains(after, []byte("unexpressed")) {
		t.Error("the old table was rewritten")
	}

	// Two tables that both record coverage must agree on it, naming the
	// scenario or the conditions.
	other := results.NewDefaults(m.Seed, m.Corpus.Scenarios, conds)
	f := other.Scenarios["X40"]
	f.Unexpressed = nil
	other.Scenarios["X40"] = f
	if err := other.Same(d, "b/defaults.json"); err == nil || !strings.Contains(err.Error(), "scenario X40 is not expressed by [] there, but by [toolfailure]") {
		t.Errorf("changed coverage: %v", err)
	}
	fewer := results.NewDefaults(m.Seed, m.Corpus.Scenarios, conds[:3])
	if err := fewer.Same(d, "b/defaults.json"); err == nil || !strings.Contains(err.Error(), "b/defaults.json: conditions [normalized structured category]") {
		t.Errorf("other conditions: %v", err)
	}
}
