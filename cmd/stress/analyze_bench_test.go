package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkAnalyze runs stress analyze on the bundle of a synthetic study
// of 1,667 scenarios × 3 baselines × 4 conditions × 5 replicates
// (100,020 decisions), run once first; scripts/bench measures the
// 1,000,200-decision study the same way, against its run.
// STRESS_BENCH_BUNDLE, when set, names a bundle to analyze instead (to
// profile the analysis of a larger one).
func BenchmarkAnalyze(b *testing.B) {
	root := b.TempDir()
	study, bundle := filepath.Join(root, "study"), filepath.Join(root, "run")
	steps := [][]string{
		{"synth", "-scenarios", "1667", "-servers", "100", "-replicates", "5", "-seed", "1", "-out", study},
		{"run", "-quiet", "-out", bundle, filepath.Join(study, "manifest.yaml")},
	}
	if dir := os.Getenv("STRESS_BENCH_BUNDLE"); dir != "" {
		bundle, steps = dir, nil
	}
	for _, args := range steps {
		var errOut bytes.Buffer
		if err := run(context.Background(), args, io.Discard, &errOut); err != nil {
			b.Fatalf("%v\n%s", err, errOut.String())
		}
	}
	b.ResetTimer()
	for b.Loop() {
		var errOut bytes.Buffer
		if err := run(context.Background(), []string{"analyze", bundle}, io.Discard, &errOut); err != nil {
			b.Fatalf("%v\n%s", err, errOut.String())
		}
	}
}
