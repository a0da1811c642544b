package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
)

// steadyOnly is the one-model mock study: 4 conditions × 21 scenarios ×
// 1 replicate = 84 decisions.
var steadyOnly = map[string]string{"llama3.2-3b": "steady"}

// interruptedBundle makes a bundle as an interrupted run leaves it: the
// mock study is run, its calls.jsonl cut after half of its lines (as a
// kill leaves it), and the run resumed with a context cancelled before
// any decision starts, which rewrites the bundle with the decisions done
// and remaining in manifest.json. It returns the directory and the
// decisions done.
func interruptedBundle(t *testing.T) (string, int) {
	t.Helper()
	dir := mockBundle(t, steadyOnly, 1, nil)
	calls := filepath.Join(dir, results.CallsFile)
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(calls, []byte(strings.Join(lines[:len(lines)/2], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	setDurable(t, dir, 0) // as a run killed before its first sync leaves it
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sum, err := mockPlan(t, steadyOnly, 1, nil).Resume(ctx, dir, runner.Options{})
	if !errors.Is(err, runner.ErrInterrupted) {
		t.Fatalf("resume with a cancelled context: %v, want ErrInterrupted", err)
	}
	if sum.Decisions == 0 || sum.Decisions >= 84 {
		t.Fatalf("the interrupted bundle holds %d of 84 decisions", sum.Decisions)
	}
	return dir, sum.Decisions
}

// editManifest rewrites fields of dir's manifest.json (nil deletes one).
func editManifest(t *testing.T, dir string, fields map[string]any) {
	t.Helper()
	file := filepath.Join(dir, results.ManifestFile)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestPartialBundle: analyze, compare and report refuse an interrupted
// bundle (exit status 1, printing nothing but the reason); with -partial
// they print the numbers below a warning line, analyze -json and compare
// -json carry the warning first, and the report says it is partial on its
// first line.
func TestPartialBundle(t *testing.T) {
	dir, done := interruptedBundle(t)
	warning := fmt.Sprintf("partial bundle %s: manifest.json records %d of 84 decisions done, %d remaining", dir, done, 84-done)

	for _, args := range [][]string{{"analyze", dir}, {"analyze", "-json", dir}, {"compare", dir, dir}, {"report", dir}, {"export", dir}} {
		t.Run(argsName(args), func(t *testing.T) {
			out, _, err := runCmd(t, args...)
			if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), args[0]+" refuses "+warning+"; finish it with stress run -resume "+dir+", or pass -partial") {
				t.Errorf("%v: error %v, want a failure that refuses the partial bundle", args, err)
			}
			if out != "" {
				t.Errorf("%v printed the numbers of a refused bundle:\n%s", args, out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "report")); err == nil {
		t.Error("a refused report wrote its directory")
	}
	if _, err := os.Stat(filepath.Join(dir, "inspect")); err == nil {
		t.Error("a refused export wrote its directory")
	}

	// export -partial writes logs of status error, the warning as their
	// error, and says so first.
	out, log, err := runCmd(t, "export", "-partial", dir)
	if want := "warning: " + warning + "; the logs cover only the decisions it holds"; err != nil || firstLine(out) != want {
		t.Errorf("export -partial: %v\n%s%s\nwant first %q", err, out, log, want)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "inspect", "2*.json"))
	samples := 0
	for _, f := range logs {
		var lg struct {
			Status  string
			Error   struct{ Message string }
			Samples []json.RawMessage
		}
		if err := json.Unmarshal(mustRead(t, f), &lg); err != nil || lg.Status != "error" || lg.Error.Message != warning {
			t.Errorf("%s: status %q error %q (%v), want error %q", f, lg.Status, lg.Error.Message, err, warning)
		}
		samples += len(lg.Samples)
	}
	if len(logs) == 0 || samples != done {
		t.Errorf("export -partial: %d logs, %d samples; want the %d decisions done", len(logs), samples, done)
	}

	out, log, err = runCmd(t, "analyze", "-partial", dir)
	if err != nil {
		t.Fatalf("analyze -partial: %v\n%s", err, log)
	}
	if want := "warning: " + warning + "; the numbers below cover only the decisions it holds"; firstLine(out) != want {
		t.Errorf("analyze -partial: first line %q, want %q", firstLine(out), want)
	}
	if rest := out[strings.Index(out, "\n")+1:]; !strings.HasPrefix(rest, "model ") || !strings.Contains(rest, "llama3.2-3b") {
		t.Errorf("analyze -partial: no counts table below the warning:\n%s", out)
	}

	js, _, err := runCmd(t, "analyze", "-partial", "-json", dir)
	var doc struct {
		Warnings []string `json:"warnings"`
		Cells    []struct {
			N, Errors int
		} `json:"cells"`
	}
	if err != nil || json.Unmarshal([]byte(js), &doc) != nil {
		t.Fatalf("analyze -partial -json: %v\n%s", err, js)
	}
	n := 0
	for _, c := range doc.Cells {
		n += c.N + c.Errors
	}
	if len(doc.Warnings) != 1 || doc.Warnings[0] != warning || n != done || !strings.HasPrefix(js, "{\n  \"warnings\": [") {
		t.Errorf("analyze -partial -json: warnings %q over %d decisions, want [%q] over %d, first:\n%.200s", doc.Warnings, n, warning, done, js)
	}

	out, _, err = runCmd(t, "compare", "-partial", "-b", "1000", dir, dir)
	if err != nil || strings.Count(out, "warning: "+warning+"; the numbers below") != 2 || !strings.HasPrefix(out, "warning: ") ||
		!strings.Contains(out, "\nA: "+dir) {
		t.Errorf("compare -partial: %v\n%s", err, out)
	}
	js, _, err = runCmd(t, "compare", "-partial", "-json", "-b", "1000", dir, dir)
	if err != nil || json.Unmarshal([]byte(js), &doc) != nil || len(doc.Warnings) != 2 || doc.Warnings[1] != warning {
		t.Errorf("compare -partial -json: %v, warnings %q", err, doc.Warnings)
	}

	out, log, err = runCmd(t, "report", "-partial", "-b", "1000", dir)
	if err != nil {
		t.Fatalf("report -partial: %v\n%s", err, log)
	}
	if want := "warning: " + warning + "; the report and its figures cover only the decisions it holds"; firstLine(out) != want {
		t.Errorf("report -partial: first line %q, want %q", firstLine(out), want)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report", "report.md"))
	title := "Partial results report: 20260101T000000Z-mock"
	if firstLine(string(md)) != "# "+title || !strings.HasPrefix(string(md), "# "+title+"\n\nWarning: "+warning+". Every count") {
		t.Errorf("report.md does not say it is partial first:\n%.400s", md)
	}
	if want := fmt.Sprintf("| decisions | %d of the 84 the bundle holds when complete (0 transport errors, not counted) |", done); !strings.Contains(string(md), want) {
		t.Errorf("report.md lacks %q", want)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "report", "report.html"))
	html := string(page)
	if !strings.Contains(html, "<title>"+title+"</title>") || !strings.Contains(html, "<body>\n<h1>"+title+"</h1>\n<p>Warning: "+warning+". Every count") {
		t.Errorf("report.html does not say it is partial first:\n%.1200s", html)
	}
}

// TestPartialCount: a bundle whose manifest.json says it is finished but
// which holds fewer decisions than manifest.json records is partial too.
func TestPartialCount(t *testing.T) {
	dir := mockBundle(t, steadyOnly, 1, nil)
	editManifest(t, dir, map[string]any{"decisions": 90, "completed": 90})
	warning := "partial bundle " + dir + ": it holds 84 of its 90 decisions"
	_, _, err := runCmd(t, "analyze", dir)
	if err == nil || errors.Is(err, errUsage) || err.Error() != "analyze refuses "+warning+"; pass -partial to use the decisions it holds" {
		t.Errorf("analyze: error %v, want a refusal of the %s", err, warning)
	}
	out, _, err := runCmd(t, "analyze", "-partial", dir)
	if err != nil || !strings.HasPrefix(out, "warning: "+warning+"; ") {
		t.Errorf("analyze -partial: %v\n%.300s", err, out)
	}
	// A complete bundle: no warning, with or without -partial.
	full := mockBundle(t, steadyOnly, 1, nil)
	a, _, err1 := runCmd(t, "analyze", full)
	b, _, err2 := runCmd(t, "analyze", "-partial", full)
	if err1 != nil || err2 != nil || a != b || strings.Contains(a, "warning") {
		t.Errorf("complete bundle: %v, %v, output with -partial differs or warns:\n%.300s", err1, err2, b)
	}
}

// TestCorruptManifest: a missing or corrupt manifest.json (invalid JSON, a
// required field missing) is a failure naming the file, with or without
// -partial.
func TestCorruptManifest(t *testing.T) {
	good := mockBundle(t, steadyOnly, 1, nil)
	file := filepath.Join(good, results.ManifestFile)
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(t *testing.T)
		want string
	}{
		{"invalid JSON", func(*testing.T) { os.WriteFile(file, orig[:len(orig)/2], 0o644) }, "unexpected end of JSON input"},
		{"no run_id", func(t *testing.T) { editManifest(t, good, map[string]any{"run_id": nil}) }, "field run_id is missing"},
		{"no decisions", func(t *testing.T) { editManifest(t, good, map[string]any{"decisions": nil}) }, "field decisions is missing"},
		{"missing", func(*testing.T) { os.Remove(file) }, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(file, orig, 0o644)
			tc.edit(t)
			for _, args := range [][]string{{"analyze", good}, {"analyze", "-partial", "-json", good}, {"report", "-partial", good}, {"compare", "-partial", good, good}} {
				t.Run(argsName(args), func(t *testing.T) {
					_, _, err := runCmd(t, args...)
					if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), tc.want) {
						t.Errorf("%s: %v: error %v, want a failure naming %s with %q", tc.name, args, err, file, tc.want)
					}
				})
			}
		})
	}
}

// TestPartialKilled: a run killed mid-session leaves no decisions.parquet
// (a session removes it when it starts and writes it when it ends or is
// interrupted); analyze, report and compare -partial then fail naming the
// missing file and saying that stress run -resume finishes the bundle,
// instead of a bare "no such file".
func TestPartialKilled(t *testing.T) {
	dir, _ := interruptedBundle(t)
	for _, f := range []string{results.DecisionsFile, results.SummaryFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	pq := filepath.Join(dir, results.DecisionsFile)
	for _, args := range [][]string{{"analyze", "-partial", dir}, {"analyze", "-partial", "-json", dir}, {"report", "-partial", "-b", "1000", dir}, {"compare", "-partial", dir, dir}} {
		t.Run(argsName(args), func(t *testing.T) {
			out, _, err := runCmd(t, args...)
			want := args[0] + " -partial: " + pq + " is missing: the run was killed before it wrote it (or is still running); finish it with stress run -resume " + dir
			if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), want) {
				t.Errorf("%v: error %v, want a failure with %q", args, err, want)
			}
			if out != "" {
				t.Errorf("%v printed:\n%s", args, out)
			}
		})
	}
}
