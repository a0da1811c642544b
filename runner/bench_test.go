package runner_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/internal/testserver/echohttp"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/synth"
)

// peakMem samples the heap in use and the memory obtained from the OS
// until stop is called, and returns their peaks in MiB.
func peakMem() (stop func() (heapMiB, sysMiB float64)) {
	var heap, sys atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > heap.Load() {
				heap.Store(ms.HeapInuse)
			}
			if ms.Sys > sys.Load() {
				sys.Store(ms.Sys)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() (float64, float64) {
		close(done)
		wg.Wait()
		return float64(heap.Load()) / (1 << 20), float64(sys.Load()) / (1 << 20)
	}
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// BenchmarkSynth runs a synthetic study of 1,667 scenarios through the
// zero-latency in-process baselines (3 models x 4 conditions x 1,667
// scenarios x 5 or 50 replicates: 100,020 or 1,000,200 decisions), bundle
// written and rewritten in canonical order; it reports decisions per
// second, peak heap and OS memory, and the bundle's size. The corpus is
// the same in both, so the memory difference is what grows with the
// number of decisions. The 1M case:
//
//	go test ./runner -run '^$' -bench 'Synth/decisions=1000200' -benchtime 1x
func BenchmarkSynth(b *testing.B) {
	const scen = 1667
	for _, reps := range []int{5, 50} {
		n := 3 * 4 * scen * reps
		b.Run(fmt.Sprintf("decisions=%d", n), func(b *testing.B) {
			root := b.TempDir()
			if err := synth.Write(context.Background(), filepath.Join(root, "study"), synth.Options{Scenarios: scen, Servers: 100, Replicates: reps, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			m, err := manifests.Load(filepath.Join(root, "study", synth.ManifestFile))
			if err != nil {
				b.Fatal(err)
			}
			plan := prepare(b, m)
			runtime.GC()
			stop := peakMem()
			b.ResetTimer()
			var last string
			for i := 0; i < b.N; i++ {
				last = filepath.Join(root, fmt.Sprint("run", i))
				if _, _, err := plan.Run(context.Background(), runner.Options{Out: last}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			heap, sys := stop()
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "decisions/s")
			b.ReportMetric(heap, "peak-heap-MiB")
			b.ReportMetric(sys, "peak-sys-MiB")
			size := dirSize(last)
			b.ReportMetric(float64(size)/(1<<20), "bundle-MiB")
			b.ReportMetric(float64(size)/float64(n), "bundle-B/decision")
			os.RemoveAll(root)
		})
	}
}

// BenchmarkHTTPOverhead measures the runner's overhead per call against a
// local HTTP server that answers at once: "direct" is the echohttp backend
// called in a loop (HTTP round trip, JSON, transport layer), "runner" is
// the same calls made by a run (rendering, simulator, bundle); the
// difference per call is the runner's overhead. At 1, 4 and 8 calls in
// flight.
func BenchmarkHTTPOverhead(b *testing.B) {
	srv := httptest.NewServer(echohttp.Handler(func(models.Request) string {
		return `{"operation_status": "failed", "recovery_policy": "stop_or_escalate"}`
	}))
	defer srv.Close()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		b.Fatal(err)
	}
	m.Replicates = 20 // 4 conditions x 21 scenarios x 20 = 1,680 decisions, one call each
	for _, par := range []int{1, 4, 8} {
		m.Models = []manifests.Model{{Name: "http", Backend: echohttp.Backend, Model: "x", Host: srv.URL, Parallel: par}}
		plan := prepare(b, m)
		n := 4 * 21 * m.Replicates
		b.Run(fmt.Sprintf("runner/parallel=%d", par), func(b *testing.B) {
			root := b.TempDir()
			for i := 0; i < b.N; i++ {
				if _, _, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(root, fmt.Sprint(i))}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n*b.N), "µs/call")
		})
		b.Run(fmt.Sprintf("direct/parallel=%d", par), func(b *testing.B) {
			model, err := echohttp.New(models.Spec{Name: "http", Host: srv.URL, Parallel: par})
			if err != nil {
				b.Fatal(err)
			}
			d := simulator.Run(context.Background(), model, promptOf(b, m), &m.Corpus.Scenarios[0], simulator.Key{Model: "http", Prompt: "default", Condition: m.Conditions[0], Scenario: "S01", Replicate: 1}, simulator.Config{})
			req := d.Turns[0].Request
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				per := n / par
				for range par {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range per {
							if _, err := model.Generate(context.Background(), req); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n*b.N), "µs/call")
		})
	}
}

func promptOf(b *testing.B, m *manifests.Resolved) *conditions.Prompt {
	p, err := conditions.ParsePrompt(m.Prompts[0].Name, m.Prompts[0].Path, m.Prompts[0].Text)
	if err != nil {
		b.Fatal(err)
	}
	return p
}
