package stats_test

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/mcpstress/stress/analysis/stats"
)

// choose is C(n, k) for the small n of the enumerations.
func choose(n, k int) uint64 {
	r := uint64(1)
	for i := 1; i <= k; i++ {
		r = r * uint64(n-k+i) / uint64(i)
	}
	return r
}

// TestPassHatKEnumeration: for every pattern of successes of n ≤ 10
// trials, pass^k equals the share of the k-subsets of the trials (all
// 2ⁿ subsets enumerated) in which every trial succeeded, exactly
// (tolerance 0: both sides are the correctly rounded quotient of the same
// two integers).
func TestPassHatKEnumeration(t *testing.T) {
	for n := 1; n <= 10; n++ {
		for pattern := uint(0); pattern < 1<<n; pattern++ {
			c := bits.OnesCount(pattern)
			all := make([]uint64, n+1) // by k: the k-subsets that all succeeded
			for sub := uint(1); sub < 1<<n; sub++ {
				if sub&^pattern == 0 {
					all[bits.OnesCount(sub)]++
				}
			}
			ks := stats.PassHatKs(n, c)
			for k := 1; k <= n; k++ {
				want := float64(all[k]) / float64(choose(n, k))
				if got := stats.PassHatK(n, c, k); got != want || ks[k-1] != want {
					t.Fatalf("n %d, pattern %0*b, k %d: PassHatK %v, PassHatKs %v, enumeration %d/%d = %v", n, n, pattern, k, got, ks[k-1], all[k], choose(n, k), want)
				}
			}
		}
	}
}

// TestPassHatKExpectation: over the 2ⁿ patterns of n ≤ 10 independent
// Bernoulli(p) trials, each weighted by its probability p^c (1 − p)^(n−c),
// the expectation of pass^k is p^k (unbiasedness), within 1e-13
// (absolute: at most 2¹⁰ rounded terms, each below 1).
func TestPassHatKExpectation(t *testing.T) {
	for _, p := range []float64{0, 0.1, 0.37, 0.5, 0.9, 1} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			for n := 1; n <= 10; n++ {
				for k := 1; k <= n; k++ {
					e := 0.0
					for pattern := uint(0); pattern < 1<<n; pattern++ {
						c := bits.OnesCount(pattern)
						e += math.Pow(p, float64(c)) * math.Pow(1-p, float64(n-c)) * stats.PassHatK(n, c, k)
					}
					if want := math.Pow(p, float64(k)); math.Abs(e-want) > 1e-13 {
						t.Errorf("p %v, n %d, k %d: E[pass^k] = %.17g, want p^k = %.17g", p, n, k, e, want)
					}
				}
			}
		})
	}
}

// TestPassHatKReference checks reference values computed with Python
// 3's exact rationals (float of a Fraction is correctly rounded):
//
//	from fractions import Fraction; from math import comb
//	'%.17g' % float(Fraction(comb(c, k), comb(n, k)))
//
// Exactly (tolerance 0) where C(n, k) < 2⁵³; beyond, relative 1e-13.
func TestPassHatKReference(t *testing.T) {
	for _, tc := range []struct {
		n, c, k int
		want    float64
		tol     float64
	}{
		{5, 3, 2, 0.29999999999999999, 0},
		{5, 4, 3, 0.40000000000000002, 0},
		{5, 5, 5, 1, 0},
		{7, 3, 4, 0, 0},
		{10, 7, 3, 0.29166666666666669, 0},
		{60, 41, 17, 0.00039146692655699436, 0},
		{100, 50, 25, 5.2123943216356916e-10, 1e-13},
		{200, 150, 100, 2.2229697512078617e-19, 1e-13},
		{500, 400, 250, 2.9696045989948158e-36, 1e-13},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			got := stats.PassHatK(tc.n, tc.c, tc.k)
			if tc.tol == 0 && got != tc.want || !closeRel(got, tc.want, tc.tol) {
				t.Errorf("PassHatK(%d, %d, %d) = %.17g, want %.17g (tolerance %g)", tc.n, tc.c, tc.k, got, tc.want, tc.tol)
			}
		})
	}
}

// TestPassHatKBig compares PassHatK with the exact rational C(c, k)/C(n,
// k) (math/big) on random counts up to n = 600: the relative error stays
// below k·2⁻⁵², the bound its doc comment states.
func TestPassHatKBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 400 {
		n := 1 + rng.IntN(600)
		c := rng.IntN(n + 1)
		k := 1 + rng.IntN(n)
		want := 0.0
		if c >= k {
			r := new(big.Rat).SetFrac(new(big.Int).Binomial(int64(c), int64(k)), new(big.Int).Binomial(int64(n), int64(k)))
			want, _ = r.Float64()
		}
		got := stats.PassHatK(n, c, k)
		if !closeRel(got, want, float64(k)*0x1p-52) {
			t.Errorf("PassHatK(%d, %d, %d) = %.17g, exact %.17g", n, c, k, got, want)
		}
	}
}

// TestPassHatKInvalid: counts out of range give NaN (and nil for
// PassHatKs), never a panic.
func TestPassHatKInvalid(t *testing.T) {
	for _, tc := range [][3]int{{0, 0, 1}, {-1, 0, 1}, {5, -1, 1}, {5, 6, 1}, {5, 3, 0}, {5, 3, 6}, {5, 3, -2}} {
		t.Run(fmt.Sprint(tc), func(t *testing.T) {
			if got := stats.PassHatK(tc[0], tc[1], tc[2]); !math.IsNaN(got) {
				t.Errorf("PassHatK%v = %v, want NaN", tc, got)
			}
		})
	}
	if stats.PassHatKs(0, 0) != nil || stats.PassHatKs(3, 4) != nil || stats.PassHatKs(3, -1) != nil {
		t.Error("PassHatKs of invalid counts is not nil")
	}
	if got := stats.PassHatKs(1, 1); len(got) != 1 || got[0] != 1 {
		t.Errorf("PassHatKs(1, 1) = %v", got)
	}
}

// TestPassKClusters: per cluster the tasks with at least k trials and
// the sum of their pass^k; the others are counted as dropped at k.
func TestPassKClusters(t *testing.T) {
	clusters := [][]stats.Trials{
		{{5, 5}, {5, 3}},
		{{4, 2}},         // a task with fewer trials: dropped at k = 5
		{},               // a cluster without tasks
		{{5, 1}, {6, 7}}, // C > N: dropped everywhere
	}
	perK, dropped := stats.PassKClusters(clusters, []int{1, 2, 3, 4, 5})
	if len(perK) != 5 || len(dropped) != 5 {
		t.Fatalf("%d ks, %d dropped", len(perK), len(dropped))
	}
	for k := 1; k <= 5; k++ {
		want := []stats.Cluster{
			{N: 2, Sum: stats.PassHatK(5, 5, k) + stats.PassHatK(5, 3, k)},
			{N: 1, Sum: stats.PassHatK(4, 2, k)},
			{},
			{N: 1, Sum: stats.PassHatK(5, 1, k)},
		}
		wantDropped := 1
		if k == 5 {
			want[1] = stats.Cluster{}
			wantDropped = 2
		}
		for j := range want {
			if perK[k-1][j] != want[j] {
				t.Errorf("k %d, cluster %d: %+v, want %+v", k, j, perK[k-1][j], want[j])
			}
		}
		if dropped[k-1] != wantDropped {
			t.Errorf("k %d: %d dropped, want %d", k, dropped[k-1], wantDropped)
		}
	}
	// Some ks, in any order, repeated, or out of range.
	some, someDropped := stats.PassKClusters(clusters, []int{5, 2, 0, 2, 9})
	for i, k := range []int{5, 2, 0, 2, 9} {
		for j := range clusters {
			want, wantDropped := stats.Cluster{}, 5 // every task
			if k >= 1 && k <= 5 {
				want, wantDropped = perK[k-1][j], dropped[k-1]
			}
			if some[i][j] != want || someDropped[i] != wantDropped {
				t.Errorf("ks[%d] = %d, cluster %d: %+v (%d dropped), want %+v (%d)", i, k, j, some[i][j], someDropped[i], want, wantDropped)
			}
		}
	}
	// Equal trials everywhere: pass^1 is the pooled rate.
	perK, _ = stats.PassKClusters([][]stats.Trials{{{5, 2}, {5, 4}}, {{5, 0}}}, []int{1})
	iv := stats.ClusterBootstrap(perK[0], stats.Options{B: 100})
	if !closeRel(iv.Estimate, 6.0/15, 1e-15) {
		t.Errorf("pass^1 %v, want the pooled rate 6/15", iv.Estimate)
	}
	if p, d := stats.PassKClusters(clusters, nil); len(p) != 0 || len(d) != 0 {
		t.Error("no ks gives clusters")
	}
}
