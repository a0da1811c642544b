package stats_test

import (
	"testing"

	"github.com/mcpstress/stress/analysis/stats"
)

// paperCell is one cell of the paper (N = 105 = 21 scenarios × 5 replicates)
// split over the 10 servers: 3 servers with 3 scenarios, 5 with 2, 2 with 1.
var paperCell = []stats.Cluster{
	{N: 15, Sum: 6}, {N: 15, Sum: 9}, {N: 15, Sum: 5}, {N: 10, Sum: 4}, {N: 10, Sum: 2},
	{N: 10, Sum: 5}, {N: 10, Sum: 3}, {N: 10, Sum: 4}, {N: 5, Sum: 2}, {N: 5, Sum: 2},
}

// BenchmarkClusterBootstrap840: one paper cell (10 clusters, N = 105),
// B = 10000 resamples.
func BenchmarkClusterBootstrap840(b *testing.B) {
	opt := stats.Options{B: 10000, Seed: 1}
	b.ReportAllocs()
	for b.Loop() {
		stats.ClusterBootstrap(paperCell, opt)
	}
}

// BenchmarkClusterBootstrap1M: 100 clusters of 10000 units (N = 10⁶),
// B = 10000 resamples. The cost does not depend on N.
func BenchmarkClusterBootstrap1M(b *testing.B) {
	cs := make([]stats.Cluster, 100)
	for i := range cs {
		cs[i] = stats.Cluster{N: 10000, Sum: float64(3000 + 37*i)}
	}
	opt := stats.Options{B: 10000, Seed: 1}
	b.ReportAllocs()
	for b.Loop() {
		stats.ClusterBootstrap(cs, opt)
	}
}

// BenchmarkClusterBootstrapCell: the columns of one cell of a study on
// 1,000 servers (9 columns of 1,000 clusters, B = 10000), drawn together
// (each) or one column at a time (apart).
func BenchmarkClusterBootstrapCell(b *testing.B) {
	cols := make([][]stats.Cluster, 9)
	for c := range cols {
		cols[c] = make([]stats.Cluster, 1000)
		for i := range cols[c] {
			cols[c][i] = stats.Cluster{N: 5, Sum: float64((i*7 + c) % 6)}
		}
	}
	opt := stats.Options{B: 10000, Seed: 1}
	b.Run("each", func(b *testing.B) {
		for b.Loop() {
			stats.ClusterBootstrapEach(cols, opt)
		}
	})
	b.Run("apart", func(b *testing.B) {
		for b.Loop() {
			for _, c := range cols {
				stats.ClusterBootstrap(c, opt)
			}
		}
	})
}

// BenchmarkSignFlipPaper: the exact scenario-level sign-flip test of one
// paper-sized pair (21 scenarios of 5 replicates, sums −5…5).
func BenchmarkSignFlipPaper(b *testing.B) {
	d := []int{5, -1, 3, 0, 2, 4, -2, 1, 0, 5, 3, -3, 2, 1, 0, 4, 5, -1, 2, 3, 1}
	for b.Loop() {
		stats.SignFlip(d, stats.FlipOptions{})
	}
}

// BenchmarkStudentized840: the studentized bootstrap of one paper cell,
// B = 10000 (compare BenchmarkClusterBootstrap840).
func BenchmarkStudentized840(b *testing.B) {
	opt := stats.Options{B: 10000, Seed: 1, Method: stats.Studentized}
	for b.Loop() {
		stats.ClusterBootstrap(paperCell, opt)
	}
}

// BenchmarkSignFlipMonteCarlo: the Monte Carlo sign-flip test of a pair
// over 16,667 scenarios (the synthetic study of 1,000 servers), the
// default 100,000 draws.
func BenchmarkSignFlipMonteCarlo(b *testing.B) {
	d := make([]int, 16667)
	for i := range d {
		d[i] = (i*7919)%11 - 5
	}
	for b.Loop() {
		stats.SignFlip(d, stats.FlipOptions{Seed: 1})
	}
}

// BenchmarkSignFlipOneWay: the same over clusters that all differ one
// way (the observed statistic is the largest attainable), which almost
// every draw's first 64 signs settle.
func BenchmarkSignFlipOneWay(b *testing.B) {
	d := make([]int, 16667)
	for i := range d {
		d[i] = 1 + i%5
	}
	for b.Loop() {
		stats.SignFlip(d, stats.FlipOptions{Seed: 1})
	}
}
