package results

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/mcpstress/stress/simulator"
)

// BenchmarkRowWriter writes the decisions.parquet of a synthetic study
// (3 models × 4 conditions × 1,667 scenarios on 100 servers) of 1M and
// 10M rows and reports, besides the time, the heap the writer holds once
// its rows are written (live-MB, after a collection, before Close) and
// the file's bytes a row: the writer's memory must not grow with the
// rows (run with -benchtime 1x; 10M takes about 20 s).
func BenchmarkRowWriter(b *testing.B) {
	for _, n := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("rows=%dM", n/1_000_000), func(b *testing.B) {
			for range b.N {
				live, size := writeSyntheticRows(b, n)
				b.ReportMetric(float64(live)/1e6, "live-MB")
				b.ReportMetric(float64(size)/float64(n), "B/row")
			}
		})
	}
}

// writeSyntheticRows writes n rows of a synthetic study and returns the
// heap the writer held before Close and the file's size.
func writeSyntheticRows(b *testing.B, n int) (live uint64, size int64) {
	file := filepath.Join(b.TempDir(), DecisionsFile)
	heap := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	runtime.GC()
	metrics.Read(heap)
	before := heap[0].Value.Uint64()
	w, err := CreateRows(file)
	if err != nil {
		b.Fatal(err)
	}
	models := []string{"always_stop", "code_registry", "explicit_policy"}
	conditions := []string{"normalized", "code_only", "structured", "prose"}
	scenarios := make([]string, 1667)
	for i := range scenarios {
		scenarios[i] = fmt.Sprintf("synth-%04d", i)
	}
	for i := range n {
		cell, rest := i/(n/12+1), i%(n/12+1)
		sc, rep := rest%len(scenarios), rest/len(scenarios)
		var o simulator.Values
		o.Set(simulator.Col(0), int64(cell%2))
		row := Row{
			Model: models[cell/4], Prompt: "default", Condition: conditions[cell%4],
			Scenario: scenarios[sc], Replicate: int64(rep), Server: fmt.Sprintf("server-%03d", sc%100),
			Seed: int64(i) * 2654435761, Status: StatusOK, FinalLabel: "stop", FinalStatus: "stopped",
			Turns: 1, Outcome: o,
		}
		if err := w.Add(row); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	metrics.Read(heap)
	live = heap[0].Value.Uint64() - before
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(file)
	if err != nil {
		b.Fatal(err)
	}
	return live, st.Size()
}
