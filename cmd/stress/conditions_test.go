package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis/report"
	"github.com/mcpstress/stress/conditions"
)

// TestConditionsStudy runs the shipped manifests/conditions.yaml (issue
// 18's conditions, the baselines and the fail-closed client, offline) and
// pins what analyze prints for it (testdata/analyze-conditions.golden);
// analyze -json and report carry the fourteen predeclared contrasts of
// the factorial and the delivery channels in each of the five arms, named
// with what each isolates. explicit_policy, which reads a label only from
// a JSON "policy" member, is the check of the machinery: +100 points on
// the format contrast at the label, 105 discordant pairs, exact McNemar
// p = 2⁻¹⁰⁴.
func TestConditionsStudy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	if _, log, err := runCmd(t, "run", "-out", dir, "../../manifests/conditions.yaml"); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	out, log, err := runCmd(t, "analyze", "-b", "200", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "analyze-conditions.golden", out)

	js, _, err := runCmd(t, "analyze", "-json", "-b", "200", dir)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Pairs []struct {
			Model, A, B, Isolates string
			Predeclared           bool
			N                     int     `json:"n"`
			Diff                  float64 `json:"diff"`
			AB                    int     `json:"discordant_ab"`
			BA                    int     `json:"discordant_ba"`
			P                     float64 `json:"mcnemar_p"`
		} `json:"pairs"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	isolates := map[string]int{}
	found := false
	for _, p := range doc.Pairs {
		if !p.Predeclared || p.Isolates == "" || p.N != 105 {
			t.Errorf("pair %+v: want a predeclared contrast over 105 pairs, named with what it isolates", p)
		}
		isolates[p.Isolates]++
		if p.Model == "explicit_policy" && p.A == "structured" && p.B == "sentence_label" {
			found = true
			if p.Isolates != "format at label, no statement" || p.Diff != 1 || p.AB != 105 || p.BA != 0 || math.Abs(p.P-math.Pow(2, -104)) > 1e-12*math.Pow(2, -104) {
				t.Errorf("explicit_policy format contrast %+v", p)
			}
		}
	}
	if len(doc.Pairs) != 70 || len(isolates) != 14 || !found {
		t.Errorf("%d pairs, %d contrasts (%v); want 70 = 14 contrasts × 5 arms", len(doc.Pairs), len(isolates), isolates)
	}
	for k, n := range isolates {
		if n != 5 {
			t.Errorf("contrast %q in %d arms, want 5", k, n)
		}
	}

	if _, log, err := runCmd(t, "report", "-b", "200", dir); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	// Fifteen conditions a panel: the names are set vertically, with the
	// room they need.
	w, h := report.StrictCoverSize(5)
	for name, size := range map[string][2]int{"strict-cover": {w, h + 2*report.VerticalLabels}, "extra": {report.WideWidth, report.WideHeight + report.VerticalLabels}} {
		b, err := os.ReadFile(filepath.Join(dir, "report", "figures", name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		checkPNG(t, name, b, size[0], size[1])
	}
	md, err := os.ReadFile(filepath.Join(dir, "report", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"### condition: structured − sentence_label on Strict (predeclared: format at label, no statement)\n\n| within |",
		"| explicit_policy/default | 105 | 105 | 0 | +100.0 |",
		"### condition: category_text − category on Strict (predeclared: channel: structuredContent dropped)",
		"### condition: sentence_paraphrase_failed − sentence_paraphrase on Strict (predeclared: failure statement at sentence, paraphrase)",
		"format (JSON − one sentence) at a fixed wording and statement"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}

// TestRenderNewConditions: render shows each condition of issue 18.
func TestRenderNewConditions(t *testing.T) {
	for c, want := range map[string]string{
		"sentence_paraphrase_failed": conditions.FailureStatement + " Error details: the code is example.mcp.arguments.invalid_type, and the policy is to " + conditions.Paraphrase("revise_arguments") + ".",
		"category_text":              conditions.CategoryLabel,
		"envelope_false_replay":      `"sideEffects": "committed"`,
	} {
		t.Run(c, func(t *testing.T) {
			out, log, err := runCmd(t, "render", "-scenario", "S02", "-condition", c)
			if err != nil || !strings.Contains(out, want) {
				t.Errorf("render %s: %v %s\n%s\nwant it to contain %q", c, err, log, out, want)
			}
		})
	}
}
