package analysis_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// synthRows calls fn with rows of a synthetic study: models × 4
// conditions × scenarios (scenario i on server i mod servers) × reps, with
// pseudo-random outcomes (a cheap hash of the key). The *Row is reused.
func synthRows(models, scenarios, servers, reps int, fn func(*results.Row) error) error {
	var r results.Row
	scen := make([]string, scenarios)
	serv := make([]string, servers)
	for i := range scen {
		scen[i] = fmt.Sprintf("S%05d", i+1)
	}
	for i := range serv {
		serv[i] = fmt.Sprintf("P%03d", i+1)
	}
	for m := range models {
		for c, cond := range study.Conditions {
			for s := range scenarios {
				for rep := 1; rep <= reps; rep++ {
					h := uint64(m*7919+c*104729+s*1299709+rep*15485863) * 0x9e3779b97f4a7c15
					u := float64(h>>11) / (1 << 53)
					r = results.Row{Model: fmt.Sprintf("model%d", m), Prompt: "default", Condition: string(cond), Scenario: scen[s], Replicate: int64(rep), Server: serv[s%servers], Status: results.StatusOK, Outcome: simulator.Values{}.WithFlag(simulator.Strict, u < 0.3+0.1*float64(c)).WithFlag(simulator.Cover, u < 0.8).WithFlag(simulator.Retry, u > 0.9).WithFlag(simulator.Invalid, u > 0.97).WithFlag(simulator.AnyFS, u > 0.985).WithFlag(simulator.TerminalFS, u > 0.99)}
					if r.Outcome.Of(simulator.Retry) {
						r.Replays = 1 + int64(h%3)
					}
					if err := fn(&r); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// writeSynth writes the synthetic rows to a decisions.parquet file.
func writeSynth(tb testing.TB, file string, models, scenarios, servers, reps int) {
	f, err := os.Create(file)
	if err != nil {
		tb.Fatal(err)
	}
	w := parquet.NewGenericWriter[results.Row](f, parquet.Compression(&parquet.Snappy))
	buf := make([]results.Row, 0, 4096)
	err = synthRows(models, scenarios, servers, reps, func(r *results.Row) error {
		buf = append(buf, *r)
		if len(buf) == cap(buf) {
			_, err := w.Write(buf)
			buf = buf[:0]
			return err
		}
		return nil
	})
	if err == nil {
		_, err = w.Write(buf)
	}
	if err == nil {
		err = w.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// TestScanRowsStreaming: streaming a Parquet file through an Accumulator
// gives the same cells as reading it whole (the Accumulator copies the
// strings it keeps from the reused row).
func TestScanRowsStreaming(t *testing.T) {
	file := filepath.Join(t.TempDir(), "decisions.parquet")
	writeSynth(t, file, 3, 40, 7, 9) // 4,320 rows, several read batches
	acc := analysis.NewAccumulator()
	n := 0
	if err := results.ScanRows(file, func(r *results.Row) error { acc.Add(r); n++; return nil }); err != nil {
		t.Fatal(err)
	}
	rows, err := results.ReadRows(file)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4320 || len(rows) != n {
		t.Fatalf("scanned %d rows, read %d, want 4320", n, len(rows))
	}
	if got, want := acc.Cells(), results.Count(rows); !slices.Equal(got, want) {
		t.Errorf("streamed cells %+v\nwant %+v", got, want)
	}
	if got := acc.Arms(); len(got) != 3 || got[2].Model != "model2" {
		t.Errorf("arms %v", got)
	}
	if got := acc.Servers(); len(got) != 7 || got[6] != "P007" {
		t.Errorf("servers %v", got)
	}
	an, err := acc.Analyze(context.Background(), analysis.Options{B: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(an.Pairs) != 6 || an.Pairs[0].N != 360 {
		t.Errorf("pairs: %d, first %+v", len(an.Pairs), an.Pairs[0].PairStats)
	}
	// An error from the callback stops the scan and is returned.
	stop := fmt.Errorf("stop")
	if err := results.ScanRows(file, func(*results.Row) error { return stop }); err != stop {
		t.Errorf("ScanRows returned %v, want the callback's error", err)
	}
}

// BenchmarkAnalyze840: the paper's shape (2 models × 4 conditions × 21
// scenarios on 10 servers × 5 replicates = 840 decisions): accumulate the
// rows, then every cell's 7 rates with Wilson and cluster-bootstrap
// intervals and the 4 predeclared pairs, B = 10,000 resamples each.
func BenchmarkAnalyze840(b *testing.B) {
	var rows []results.Row
	for _, m := range []string{"llama", "qwen"} {
		for _, c := range study.Conditions {
			for i, u := range paperUnits() {
				rows = append(rows, row(m, c, u, i%3 == 0, i%4 != 0))
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		acc := accumulate(rows)
		if _, err := acc.Analyze(context.Background(), analysis.Options{B: 10000}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyze1M: a 1,000,000-decision synthetic bundle (1 model × 4
// conditions × 1,000 scenarios on 100 servers × 250 replicates) streamed
// from a Parquet file (results.ScanRows), then the full analysis at
// B = 10,000. Reports the time split and the live heap after the scan.
func BenchmarkAnalyze1M(b *testing.B) {
	file := filepath.Join(b.TempDir(), "decisions.parquet")
	writeSynth(b, file, 1, 1000, 100, 250)
	b.ReportAllocs()
	var scan, boot time.Duration
	var heap uint64
	for b.Loop() {
		t0 := time.Now()
		acc := analysis.NewAccumulator()
		n := 0
		if err := results.ScanRows(file, func(r *results.Row) error { acc.Add(r); n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != 1000000 {
			b.Fatalf("%d rows", n)
		}
		t1 := time.Now()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = max(heap, ms.HeapAlloc)
		t2 := time.Now()
		an, err := acc.Analyze(context.Background(), analysis.Options{B: 10000})
		if err != nil {
			b.Fatal(err)
		}
		if len(an.Pairs) != 2 || an.Pairs[0].N != 250000 {
			b.Fatalf("pairs %+v", an.Pairs)
		}
		scan += t1.Sub(t0)
		boot += time.Since(t2)
	}
	b.ReportMetric(scan.Seconds()/float64(b.N), "scan-s/op")
	b.ReportMetric(boot.Seconds()/float64(b.N), "analyze-s/op")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
}
