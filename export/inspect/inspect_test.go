package inspect

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/simulator"
)

// FuzzAppendString: appendString writes valid JSON that decodes to what
// encoding/json decodes its own encoding of the string to (invalid UTF-8
// replaced by U+FFFD in both).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" back \\ slash", "ctl \x00\x01\x1f\x7f", "nl\n\r\t", "\u2028\u2029", "bad \xff\xfe utf8", "é ü 漢字 😀", "<html>&amp;</html>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendString(nil, s)
		if !json.Valid(got) {
			t.Fatalf("%q: invalid JSON %s", s, got)
		}
		var a, b string
		want, _ := json.Marshal(s)
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(want, &b)
		if a != b {
			t.Errorf("%q: decodes to %q, encoding/json's to %q", s, a, b)
		}
	})
}

// TestClean: a log file name part keeps letters, digits and dots, and
// maps everything else (Inspect's _ / : + included) to -.
func TestClean(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"slashes and underscores", "baselines/default/code_only", "baselines-default-code-only"},
		{"a model tag's colon, its dot kept", "ollama/qwen3:0.6b", "ollama-qwen3-0.6b"},
		{"space, plus, backslash, NUL and a non-ASCII letter", "a b+c\\d\x00é", "a-b-c-d--"},
		{"a timestamp's colons and plus", "2026-12-02T00:17:07+00:00", "2026-12-02T00-17-07-00-00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := clean(tc.in); got != tc.want {
				t.Errorf("clean(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestHeaderSpace: the header of a log fits the space reserved for it
// whatever its cell's numbers; one that does not (a long error) is
// written in front of a copy of the samples; both files are the same
// JSON document.
func TestHeaderSpace(t *testing.T) {
	h := &header{Version: LogVersion, Status: "success", Eval: evalSpec{Task: "t/p/c", Model: "b/m", Config: evalConfig{Epochs: 12}},
		Stats: stats{StartedAt: timestamp(time.Unix(0, 0)), ModelUsage: map[string]usage{"b/m": {}}}}
	for _, tc := range []struct {
		name string
		long bool // the header has a long error
	}{{"header in its reserved space", false}, {"long header in front of a copy of the samples", true}} {
		long := tc.long
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			lf := &logFile{name: "log.json"}
			if err := lf.create(dir, h); err != nil {
				t.Fatal(err)
			}
			lf.w.WriteString(`{"id":"S01","epoch":1}`)
			full := *h
			full.Results = &evalResults{TotalSamples: 1 << 40, CompletedSamples: 1 << 40}
			m := metrics{Mean: evalMetric{Name: "mean", Value: 1.0 / 3}, Count: evalMetric{Name: "count", Value: 1 << 40}}
			for _, c := range scoreColumns {
				full.Results.Scores = append(full.Results.Scores, evalScore{Name: c.name, Scorer: c.name, ScoredSamples: 1 << 40, Metrics: m})
			}
			for _, c := range analysis.PassKColumns {
				for k := range 12 {
					full.Results.Scores = append(full.Results.Scores, evalScore{Name: c.Column().Name, Scorer: c.Column().Name, Reducer: passKReducer(k + 1),
						ScoredSamples: 1 << 40, UnscoredSamples: 1 << 40, Metrics: m})
				}
			}
			full.Stats.CompletedAt = timestamp(time.Now())
			full.Stats.ModelUsage = map[string]usage{"b/m": {1 << 50, 1 << 50, 1 << 51}}
			if long {
				full.Status, full.Error = "error", &evalError{Message: strings.Repeat("partial;", 2000)}
			}
			if err := lf.write(&full); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "log.json"))
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				header
				Samples []json.RawMessage `json:"samples"`
			}
			if err := json.Unmarshal(b, &got); err != nil || len(got.Samples) != 1 || got.Results.TotalSamples != 1<<40 || (got.Error != nil) != long {
				t.Errorf("long %v: %v, %d samples, results %+v", long, err, len(got.Samples), got.Results)
			}
			if spaces := bytes.Count(b, []byte(" ")); long != (spaces < 64) {
				t.Errorf("long %v: %d spaces left (the header's space is used unless the header is too long)", long, spaces)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("long %v: the directory holds %d files", long, len(entries))
			}
		})
	}
}

// TestPassKScores: a cell's pass^k are scores of its column with
// reducer pass^k, over the scenarios with k replicates (the others
// unscored), mean the estimate and count mean × scored; an undefined
// pass^k (no scenario has k replicates) is left out.
func TestPassKScores(t *testing.T) {
	pk := analysis.PassKSet{{Column: simulator.Strict, Values: []analysis.PassK{
		{K: 1, Estimate: 0.5, Scenarios: 4}, {K: 2, Estimate: 0.25, Scenarios: 3, Dropped: 1}, {K: 3, Estimate: analysis.Num(math.NaN()), Dropped: 4}}}}
	b, err := json.Marshal(passKScores(pk))
	want := `[{"name":"strict","scorer":"strict","reducer":"pass^1","scored_samples":4,"unscored_samples":0,"params":{},"metrics":{"mean":{"name":"mean","value":0.5,"params":{}},"count":{"name":"count","value":2,"params":{}}}},` +
		`{"name":"strict","scorer":"strict","reducer":"pass^2","scored_samples":3,"unscored_samples":1,"params":{},"metrics":{"mean":{"name":"mean","value":0.25,"params":{}},"count":{"name":"count","value":0.75,"params":{}}}}]`
	if err != nil || string(b) != want {
		t.Errorf("pass^k scores %s (%v)\nwant %s", b, err, want)
	}
	if got := passKScores(nil); got != nil {
		t.Errorf("no pass^k: %v", got)
	}
}
