package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis/report"
	"github.com/mcpstress/stress/results"
)

// shapeManifest writes a small study of the error shapes on the lab
// corpus (live replay, one replicate, the code-reading baseline and the
// fail-closed client) and returns its file.
func shapeManifest(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../manifests")
	if err != nil {
		t.Fatal(err)
	}
	text := `name: shapes-small
corpus: ` + filepath.Join(root, "corpus", "lab") + `
prompts:
  - name: default
    path: ` + filepath.Join(root, "prompts", "default.tmpl") + `
conditions: [normalized, structured, category, sep2145, toolfailure, ratelimited, toolfailure+sep2145]
replicates: 1
seed: 20261201
temperature: 0.7
replay_cap: 3
replay: live
environment: lab
models:
  - name: code_registry
    backend: baseline
    model: code_registry
  - name: fail_closed
    backend: fail_closed
    model: registry
`
	file := filepath.Join(t.TempDir(), "shapes.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestLikeForLikeGolden pins what analyze (text and -json) and report
// show of a shape study's coverage and like-for-like contrasts
// (testdata/analyze-shapes.golden, analyze-shapes-json.golden,
// report-shapes.md.golden): each shape's coverage of the lab corpus, k of
// 40 and the scenarios it does not express, apart from the counts; each
// shape contrast's pairs on the scenarios both conditions express, with
// those left out counted and named. A bundle written before the coverage
// was recorded analyzes as it did: every contrast on every scenario.
func TestLikeForLikeGolden(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", dir, shapeManifest(t)); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	out, log, err := runCmd(t, "analyze", "-b", "200", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "analyze-shapes.golden", out)

	js, _, err := runCmd(t, "analyze", "-json", "-b", "200", dir)
	if err != nil {
		t.Fatal(err)
	}
	// The coverage, and each pair's like-for-like fields.
	var doc struct {
		Coverage json.RawMessage `json:"coverage"`
		Pairs    []struct {
			Model       string          `json:"model"`
			A           string          `json:"a"`
			B           string          `json:"b"`
			Column      string          `json:"column"`
			N           int             `json:"n"`
			Unpaired    int             `json:"unpaired"`
			LikeForLike bool            `json:"like_for_like"`
			Excluded    json.RawMessage `json:"excluded"`
		} `json:"pairs"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	goldenJSON(t, "analyze-shapes-json.golden", string(b)+"\n")

	if _, log, err := runCmd(t, "report", "-b", "200", dir); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report", report.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	// The Coverage section and the first like-for-like contrast's.
	_, cov, ok1 := strings.Cut(string(md), "## Coverage\n")
	cov, _, ok2 := strings.Cut(cov, "\n## ")
	_, con, ok3 := strings.Cut(string(md), "### condition: sep2145 − structured on Strict")
	con, _, ok4 := strings.Cut(con, "\n### ")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		t.Fatalf("report.md lacks the Coverage section or the sep2145 − structured contrast:\n%s", md)
	}
	golden(t, "report-shapes.md.golden", "## Coverage\n"+cov+"\n### condition: sep2145 − structured on Strict"+con)

	// The same bundle as a stress before coverage wrote it: no coverage,
	// every contrast on every scenario, as then.
	d, err := results.LoadDefaults(filepath.Join(dir, results.DefaultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := results.WriteJSON(filepath.Join(dir, results.DefaultsFile), d.WithoutCoverage()); err != nil {
		t.Fatal(err)
	}
	js, _, err = runCmd(t, "analyze", "-json", "-b", "200", dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js, `"coverage"`) || strings.Contains(js, `"excluded"`) {
		t.Error("a bundle without coverage has coverage or excluded scenarios")
	}
	doc.Pairs = nil
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range doc.Pairs {
		if p.N != 40 {
			t.Errorf("without coverage, %s %s − %s on %s: %d pairs, want 40", p.Model, p.A, p.B, p.Column, p.N)
		}
	}
}
