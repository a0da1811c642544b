package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/stress -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n%s", file, diff(string(want), got))
	}
}

// diff shows the first differing lines of want and got.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}

// argsName names a case of a table of command lines by its command line,
// each path cut to its last element (t.Run turns the spaces into _), or
// "no arguments".
func argsName(args []string) string {
	if len(args) == 0 {
		return "no arguments"
	}
	parts := make([]string, len(args))
	for i, a := range args {
		if strings.Contains(a, string(filepath.Separator)) {
			a = filepath.Base(a)
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

func runCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestRunAndAnalyze(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	out, log, err := runCmd(t, "run", "-out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "run.golden", out)
	if !strings.Contains(log, "1260 decisions") {
		t.Errorf("log %q lacks the decision count", log)
	}
	for _, f := range []string{"manifest.json", "calls.jsonl", "decisions.parquet", "summary.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	an, _, err := runCmd(t, "analyze", dir)
	if err != nil {
		t.Fatal(err)
	}
	// analyze prints the same counts table first, then the intervals.
	if !strings.HasPrefix(an, out+"\n") {
		t.Errorf("analyze prints\n%s\nbut run printed\n%s", an, out)
	}
	js, _, err := runCmd(t, "analyze", "-json", dir)
	if err != nil {
		t.Fatal(err)
	}
	goldenJSON(t, "analyze-json.golden", js)

	// decisions.parquet is checked against calls.jsonl by the fingerprint
	// summary.json recorded while the file is the one written; a changed
	// file is read row by row and its changed row reported, and a bundle
	// whose summary.json records nothing (an earlier version's) is read
	// row by row too.
	changed := filepath.Join(t.TempDir(), "changed")
	os.CopyFS(changed, os.DirFS(dir))
	rows, err := results.ReadRows(filepath.Join(changed, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	rows[3].Outcome.Set(simulator.Strict, 1-rows[3].Outcome.Value(simulator.Strict))
	rw, err := results.CreateRows(filepath.Join(changed, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		rw.Add(r)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, log, err := runCmd(t, "analyze", changed); err == nil || !strings.Contains(log, "disagreement: decision "+rows[3].Key().String()) {
		t.Errorf("changed decisions.parquet: err %v, log:\n%s", err, log)
	}
	older := filepath.Join(t.TempDir(), "older")
	os.CopyFS(older, os.DirFS(dir))
	var sum map[string]any
	sb, _ := os.ReadFile(filepath.Join(older, results.SummaryFile))
	json.Unmarshal(sb, &sum)
	if sum["decisions_parquet"] == nil {
		t.Error("summary.json records nothing of decisions.parquet")
	}
	delete(sum, "decisions_parquet")
	sb, _ = json.Marshal(sum)
	os.WriteFile(filepath.Join(older, results.SummaryFile), sb, 0o644)
	if an2, log, err := runCmd(t, "analyze", older); err != nil || an2 != an {
		t.Errorf("a bundle without the record: err %v, log:\n%s", err, log)
	}

	// Without its defaults.json, a format-3 bundle is refused once, naming
	// the file, not line by line.
	bare := filepath.Join(t.TempDir(), "bare")
	os.CopyFS(bare, os.DirFS(dir))
	os.Remove(filepath.Join(bare, results.DefaultsFile))
	if _, log, err := runCmd(t, "analyze", bare); err == nil || !strings.Contains(err.Error(), "calls.jsonl:1: ") || !strings.Contains(err.Error(), "no defaults.json beside") || strings.Contains(log, "problem:") {
		t.Errorf("a bundle without defaults.json: err %v, log:\n%s", err, log)
	}

	// A bundle whose calls.jsonl was tampered with is reported, line located.
	calls := filepath.Join(dir, "calls.jsonl")
	b, _ := os.ReadFile(calls)
	lines := strings.SplitAfter(string(b), "\n")
	lines[2] = "{not json\n"
	edited := strings.Replace(lines[5], `\"recovery_policy\":\"stop_or_escalate\"`, `\"recovery_policy\":\"select_tool\"`, 1)
	if edited == lines[5] {
		t.Fatalf("edit did not apply to %s", lines[5])
	}
	lines[5] = edited
	os.WriteFile(calls, []byte(strings.Join(lines, "")), 0o644)
	_, log, err = runCmd(t, "analyze", dir)
	if err == nil || !strings.Contains(log, "calls.jsonl:3:") || !strings.Contains(log, "calls.jsonl:6: decision always_stop/default/normalized/S02/1 turn 0: response_sha256 does not match") ||
		!strings.Contains(log, "disagreement: decision always_stop/default/normalized/S02/1") {
		t.Errorf("tampered bundle: err %v, log:\n%s", err, log)
	}
}

func TestProfile(t *testing.T) {
	out, _, err := runCmd(t, "profile")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "profile.golden", out)
	js, _, err := runCmd(t, "profile", "-json")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "profile-json.golden", js)
}

func TestRender(t *testing.T) {
	out, _, err := runCmd(t, "render", "-scenario", "S07", "-condition", "prose")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "render-S07-prose.golden", out)
	want, _ := os.ReadFile("../../conditions/testdata/default/S07-prose.golden")
	if !strings.HasPrefix(string(want), out) {
		t.Error("render output is not the prefix of the conditions golden file")
	}
	// Another prompt file changes the messages.
	alt := filepath.Join(t.TempDir(), "terse.tmpl")
	os.WriteFile(alt, []byte(`{{define "system"}}Answer in JSON.{{end}}{{define "user"}}{{.Observation}} {{.Annotation}}{{end}}{{define "replay"}}again{{end}}`), 0o644)
	out, _, err = runCmd(t, "render", "-scenario", "S07", "-condition", "code_only", "-prompt", alt)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "--- system ---\nAnswer in JSON.\n--- user ---\n{") || !strings.Contains(out, "Error code: example.mcp.arguments.invalid_type") {
		t.Errorf("render with -prompt:\n%s", out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"run", "-bogus"}, "-bogus"},
		{[]string{"run", "a.yaml", "b.yaml"}, "at most one manifest"},
		{[]string{"render", "-condition", "prose"}, "flag -scenario is required"},
		{[]string{"render", "-scenario", "S07", "-condition", "loud"}, `flag -condition: unknown condition "loud"`},
		{[]string{"render", "-scenario", "S99", "-condition", "prose"}, `flag -scenario: no scenario "S99"`},
		{[]string{"analyze"}, "one bundle directory"},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			_, _, err := runCmd(t, tc.args...)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("stress %v: error %v, want a usage error containing %q", tc.args, err, tc.want)
			}
		})
	}
	// Bad files are failures (exit 1) that name the file.
	_, _, err := runCmd(t, "run", "nonexistent.yaml")
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "nonexistent.yaml") {
		t.Errorf("missing manifest: %v", err)
	}
	_, _, err = runCmd(t, "run", "-out", t.TempDir()+"/x", "../../manifests/paper.yaml")
	if err == nil || !strings.Contains(err.Error(), "models[0].") {
		t.Errorf("paper.yaml without an ollama backend or digests must be refused naming the field: %v", err)
	}
}
