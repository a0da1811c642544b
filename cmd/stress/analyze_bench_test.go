package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// benchBundle returns the bundle the analyze and export benchmarks read:
// STRESS_BENCH_BUNDLE, else the run of a synthetic study of 1,667
// scenarios × 3 baselines × 4 conditions × 5 replicates (100,020
// decisions), made under root.
func benchBundle(b *testing.B, root string) string {
	b.Helper()
	if dir := os.Getenv("STRESS_BENCH_BUNDLE"); dir != "" {
		return dir
	}
	study, bundle := filepath.Join(root, "study"), filepath.Join(root, "run")
	for _, args := range [][]string{
		{"synth", "-scenarios", "1667", "-servers", "100", "-replicates", "5", "-seed", "1", "-out", study},
		{"run", "-quiet", "-out", bundle, filepath.Join(study, "manifest.yaml")},
	} {
		var errOut bytes.Buffer
		if err := run(context.Background(), args, io.Discard, &errOut); err != nil {
			b.Fatalf("%v\n%s", err, errOut.String())
		}
	}
	return bundle
}

// BenchmarkAnalyze runs stress analyze on the bundle of a synthetic study
// of 1,667 scenarios × 3 baselines × 4 conditions × 5 replicates
// (100,020 decisions), run once first; scripts/bench measures the
// 1,000,200-decision study the same way, against its run.
// STRESS_BENCH_BUNDLE, when set, names a bundle to analyze instead (to
// profile the analysis of a larger one).
func BenchmarkAnalyze(b *testing.B) {
	bundle := benchBundle(b, b.TempDir())
	b.ResetTimer()
	for b.Loop() {
		var errOut bytes.Buffer
		if err := run(context.Background(), []string{"analyze", bundle}, io.Discard, &errOut); err != nil {
			b.Fatalf("%v\n%s", err, errOut.String())
		}
	}
}

// BenchmarkOneDecision runs stress run, in process, on a study of one
// decision (one scenario, one baseline, one condition): the fixed cost of
// a run without the process start (scripts/bench times the command).
func BenchmarkOneDecision(b *testing.B) {
	root := b.TempDir()
	m := oneDecisionStudy(b, root)
	var errOut bytes.Buffer
	for i := 0; b.Loop(); i++ {
		if err := run(context.Background(), []string{"run", "-quiet", "-out", filepath.Join(root, fmt.Sprint(i)), m}, io.Discard, &errOut); err != nil {
			b.Fatalf("%v\n%s", err, errOut.String())
		}
	}
}

// oneDecisionStudy writes, under root, a synthetic study of one decision
// (one scenario, one baseline, one condition) and returns its manifest.
func oneDecisionStudy(tb testing.TB, root string) string {
	tb.Helper()
	study := filepath.Join(root, "study")
	var errOut bytes.Buffer
	if err := run(context.Background(), []string{"synth", "-scenarios", "1", "-servers", "1", "-out", study}, io.Discard, &errOut); err != nil {
		tb.Fatalf("%v\n%s", err, errOut.String())
	}
	m := filepath.Join(study, "manifest.yaml")
	text, err := os.ReadFile(m)
	if err != nil {
		tb.Fatal(err)
	}
	text = regexp.MustCompile(`(?m)^conditions: .*$`).ReplaceAll(text, []byte("conditions: [normalized]"))
	text = text[:bytes.Index(text, []byte("  - name: code_registry"))]
	if err := os.WriteFile(m, text, 0o644); err != nil {
		tb.Fatal(err)
	}
	return m
}
