package report

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// passKAnalysis analyzes two models × two conditions × 12 scenarios on
// 6 servers × reps replicates; with lab, every decision has lab
// outcomes (Recovered at even replicates).
func passKAnalysis(t *testing.T, reps int, lab bool) *analysis.Analysis {
	t.Helper()
	acc := analysis.NewAccumulator()
	for m := range 2 {
		for _, c := range study.Conditions[:2] {
			for s := range 12 {
				for rep := 1; rep <= reps; rep++ {
					v := simulator.Values{}.WithFlag(simulator.Strict, (s+m)%4 >= rep%4).WithFlag(simulator.Cover, true)
					if lab {
						v = v.WithFlag(simulator.Recovered, rep%2 == 0 || s%3 == 0).WithFlag(simulator.Harm, false).With(simulator.Calls, 1).With(simulator.LabMS, 0)
					}
					r := results.Row{Model: fmt.Sprintf("m%d", m), Prompt: "p", Condition: string(c), Scenario: fmt.Sprint(s), Replicate: int64(rep),
						Server: fmt.Sprint(s % 6), Status: results.StatusOK, Outcome: v}
					acc.Add(&r)
				}
			}
		}
	}
	an, err := acc.Analyze(context.Background(), analysis.Options{B: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return an
}

// TestPassKFigure: with 5 replicates the figure is drawn (a panel per
// condition and the legend's tile) and the report has its section, table
// and figure; with one replicate the figure is not drawn, says why, and
// an earlier report's files for it are removed.
func TestPassKFigure(t *testing.T) {
	for _, lab := range []bool{false, true} {
		t.Run(fmt.Sprint(lab), func(t *testing.T) {
			an := passKAnalysis(t, 5, lab)
			f, err := passKFigure(an)
			if err != nil || f.Empty != "" {
				t.Fatalf("lab %v: %v, empty %q", lab, err, f.Empty)
			}
			cfg, err := png.DecodeConfig(bytes.NewReader(f.PNG))
			if err != nil || cfg.Width != 1200 || cfg.Height != 340 || !bytes.HasPrefix(f.SVG, []byte("<?xml")) {
				t.Errorf("lab %v: PNG %+v %v, want 1200×340 (2 conditions and the legend)", lab, cfg, err)
			}
			if lab != strings.Contains(f.Caption, "Recovered dashed") || !strings.Contains(f.Caption, "Strict solid") {
				t.Errorf("lab %v: caption %q", lab, f.Caption)
			}
			if lab && os.Getenv("STRESS_PASSK_FIGURE") != "" {
				os.WriteFile(os.Getenv("STRESS_PASSK_FIGURE"), f.PNG, 0o644)
			}
		})
	}
	an := passKAnalysis(t, 5, true)
	dir := t.TempDir()
	if _, err := Write(dir, &Input{Analysis: an, ProfileNote: "none"}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, MarkdownFile))
	for _, want := range []string{"## Consistency across replicates (pass^k)", "| model | prompt | condition | column | scenarios | interval | k=1 | k=2 | k=3 | k=4 | k=5 |",
		"| m0 | p | normalized | Strict | 12 | estimate |", "| m0 | p | normalized | Recovered | 12 | estimate |", "figures/pass-k.png"} {
		t.Run(want, func(t *testing.T) {
			if !strings.Contains(string(md), want) {
				t.Errorf("report.md lacks %q", want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, FigureDir, "pass-k.svg")); err != nil {
		t.Error(err)
	}
	// One replicate: no figure, the sentence instead, the old files gone.
	if _, err := Write(dir, &Input{Analysis: passKAnalysis(t, 1, false), ProfileNote: "none"}); err != nil {
		t.Fatal(err)
	}
	md, _ = os.ReadFile(filepath.Join(dir, MarkdownFile))
	if !strings.Contains(string(md), "No scenario ran more than once: pass^k is pass^1, the rate; no figure.") || strings.Contains(string(md), "figures/pass-k") {
		t.Errorf("one replicate: report.md\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(dir, FigureDir, "pass-k.png")); err == nil {
		t.Error("pass-k.png is left from the earlier report")
	}
	// No cell at all: no section.
	empty, err := analysis.NewAccumulator().Analyze(context.Background(), analysis.Options{B: 10})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if f, err := passKFigure(empty); err != nil || f.Empty == "" {
		t.Errorf("empty analysis: %v, %q", err, f.Empty)
	}
	if err := build(&Input{Analysis: empty}, nil).Markdown(&b); err != nil || strings.Contains(b.String(), "pass^k") {
		t.Errorf("empty analysis: %v\n%s", err, b.String())
	}
}
