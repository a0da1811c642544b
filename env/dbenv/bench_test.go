package dbenv

import (
	"context"
	"testing"
	"time"

	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// BenchmarkDecision measures one decision on the database environment,
// a kept server's database reset in place (the way a study runs it):
// start (take the server, arm the fault, read the initial state, the
// failing first call), one recovery call, the final read and diff, and
// the reset; setup-ms, final-ms and close-ms split it. Scenario D01
// (a transient fault on create_order, recovered by retry_now).
func BenchmarkDecision(b *testing.B) {
	for _, engine := range []string{SQLite, Postgres} {
		b.Run(engine, func(b *testing.B) {
			_, f := factory(b, engine, true)
			ctx := context.Background()
			var setup, final, closing time.Duration
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				e, err := f.Actor("D01")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.Start(ctx); err != nil {
					b.Fatal(err)
				}
				if _, _, err := e.Execute(ctx, 0, simulator.Answer{Status: study.Failed, Policy: study.RetryNow, Valid: true}); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if o, err := e.Final(ctx); err != nil || !o.Recovered {
					b.Fatalf("%+v %v", o, err)
				}
				t2 := time.Now()
				e.Close()
				setup += t1.Sub(t0)
				final += time.Since(t1) - time.Since(t2)
				closing += time.Since(t2)
			}
			n := float64(b.N)
			b.ReportMetric(float64(setup.Microseconds())/1000/n, "setup-ms")
			b.ReportMetric(float64(final.Microseconds())/1000/n, "final-ms")
			b.ReportMetric(float64(closing.Microseconds())/1000/n, "close-ms")
		})
	}
}
