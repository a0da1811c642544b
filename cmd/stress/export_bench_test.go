package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkExportVsAnalyze times stress export (.json, then .eval) against
// stress analyze on the same bundle, in process, by the process's CPU
// time (user and system, getrusage): the bundle of the synthetic study
// BenchmarkAnalyze runs (100,020 decisions), or STRESS_BENCH_BUNDLE. Each
// iteration runs the three commands one after the other (so that the
// machine's drift falls on all of them alike) and the benchmark reports
// the CPU seconds of each per iteration and the ratios json/analyze and
// eval/analyze of their totals; scripts/bench measures the same as
// separate processes.
func BenchmarkExportVsAnalyze(b *testing.B) {
	root := b.TempDir()
	bundle := benchBundle(b, root)
	out := filepath.Join(root, "logs")
	cmds := []struct {
		name string
		args []string
	}{
		{"analyze", []string{"analyze", bundle}},
		{"json", []string{"export", "-quiet", "-out", out, bundle}},
		{"eval", []string{"export", "-quiet", "-eval", "-out", out, bundle}},
	}
	var total [3]time.Duration
	for b.Loop() {
		for i, c := range cmds {
			start := cpuTime(b)
			var errOut bytes.Buffer
			if err := run(context.Background(), c.args, io.Discard, &errOut); err != nil {
				b.Fatalf("%v\n%s", err, errOut.String())
			}
			total[i] += cpuTime(b) - start
			if err := os.RemoveAll(out); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i, c := range cmds {
		b.ReportMetric(total[i].Seconds()/float64(b.N), c.name+"-cpu-s/op")
	}
	b.ReportMetric(float64(total[1])/float64(total[0]), "json/analyze")
	b.ReportMetric(float64(total[2])/float64(total[0]), "eval/analyze")
}

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
