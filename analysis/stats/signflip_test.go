package stats_test

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mcpstress/stress/analysis/stats"
)

// bruteFlip enumerates all 2ᵏ sign vectors: the independent reference for
// SignFlip's exact distribution (exact enumeration, no convolution).
func bruteFlip(d []int) float64 {
	obs := 0
	for _, x := range d {
		obs += x
	}
	obs = max(obs, -obs)
	hits := 0
	for mask := 0; mask < 1<<len(d); mask++ {
		t := 0
		for i, x := range d {
			if mask&(1<<i) != 0 {
				t += x
			} else {
				t -= x
			}
		}
		if max(t, -t) >= obs {
			hits++
		}
	}
	return float64(hits) / float64(int(1)<<len(d))
}

// TestSignFlipEnumeration checks the exact sign-flip p-value against full
// enumeration of the 2ᵏ sign vectors (k ≤ 14) on random cluster sums,
// including zeros and the paper's cluster count; tolerance 1e-12.
func TestSignFlipEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := [][]int{{3}, {0, 0}, {1, -1}, {5, 5, 5}, {2, -1, 0, 4, -3, 1, 1, 0, 2, 5}}
	for range 40 {
		k := 1 + rng.IntN(14)
		d := make([]int, k)
		for i := range d {
			d[i] = rng.IntN(11) - 5
		}
		cases = append(cases, d)
	}
	for _, d := range cases {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			f := stats.SignFlip(d, stats.FlipOptions{})
			want := bruteFlip(d)
			if !f.Exact || math.Abs(f.P-want) > 1e-12 {
				t.Errorf("SignFlip(%v) = %.15g (exact %v), enumeration %.15g", d, f.P, f.Exact, want)
			}
		})
	}
}

// TestSignFlipIsMcNemar checks that with one pair per cluster (dᵢ ∈
// {−1, 0, 1}) the sign-flip test is McNemar's exact test, itself checked
// against R's binom.test (TestMcNemar…).
func TestSignFlipIsMcNemar(t *testing.T) {
	for _, bc := range [][2]int{{0, 0}, {1, 0}, {3, 1}, {2, 8}, {24, 6}, {50, 71}, {0, 12}} {
		t.Run(fmt.Sprint(bc), func(t *testing.T) {
			var d []int
			for range bc[0] {
				d = append(d, 1)
			}
			for range bc[1] {
				d = append(d, -1)
			}
			d = append(d, 0, 0, 0)
			got := stats.SignFlip(d, stats.FlipOptions{}).P
			want := stats.McNemarExact(bc[0], bc[1])
			if !closeRel(got, want, 1e-12) {
				t.Errorf("b, c = %v: sign-flip p = %.17g, McNemar %.17g", bc, got, want)
			}
		})
	}
}

// TestSignFlipMonteCarlo forces the Monte Carlo path (cluster sums too
// large for the exact distribution) on a case with a known answer: 60
// clusters of equal |d|, 38 positive, so T/|d| = 2X − 60 with X ~
// Binomial(60, 1/2) and p = McNemarExact(22, 38). The estimate must be
// within 4 Monte Carlo standard errors and reproducible from its seed.
func TestSignFlipMonteCarlo(t *testing.T) {
	d := make([]int, 60)
	for i := range d {
		d[i] = 1_000_000
		if i >= 38 {
			d[i] = -1_000_000
		}
	}
	opt := stats.FlipOptions{Draws: 20000, Seed: 9}
	f := stats.SignFlip(d, opt)
	want := stats.McNemarExact(22, 38)
	se := math.Sqrt(want * (1 - want) / float64(opt.Draws))
	if f.Exact || f.Draws != opt.Draws || math.Abs(f.P-want) > 4*se {
		t.Errorf("Monte Carlo sign-flip p = %v (exact %v, draws %d), want %v ± %v", f.P, f.Exact, f.Draws, want, 4*se)
	}
	if g := stats.SignFlip(d, opt); g.P != f.P {
		t.Errorf("same seed, different p: %v, %v", f.P, g.P)
	}
}

// TestSignFlipFewClusters checks the few-clusters caveat: with m
// informative clusters the smallest attainable p is 2^(1−m), and a
// Coarse warning is attached exactly when it exceeds 5%.
func TestSignFlipFewClusters(t *testing.T) {
	for _, c := range []struct {
		d    []int
		minP float64
		warn bool
	}{
		{[]int{3, 2, 4, 5, 0}, 1.0 / 8, true},
		{[]int{3, 2, 4, 5, 1}, 1.0 / 16, true},
		{[]int{3, 2, 4, 5, 1, 1}, 1.0 / 32, false},
		{[]int{0, 0}, 1, true},
	} {
		t.Run(fmt.Sprint(c.d), func(t *testing.T) {
			f := stats.SignFlip(c.d, stats.FlipOptions{})
			if f.MinP != c.minP || hasKind(f.Warnings, stats.Coarse) != c.warn {
				t.Errorf("%v: MinP %v, warning %v; want %v, %v (%v)", c.d, f.MinP, hasKind(f.Warnings, stats.Coarse), c.minP, c.warn, f.Warnings)
			}
			if f.P < f.MinP {
				t.Errorf("%v: p %v below the smallest attainable %v", c.d, f.P, f.MinP)
			}
		})
	}
	for _, bad := range []struct {
		d   []int
		opt stats.FlipOptions
	}{{nil, stats.FlipOptions{}}, {[]int{1}, stats.FlipOptions{Draws: -1}}, {[]int{1}, stats.FlipOptions{Level: 2}}} {
		t.Run(fmt.Sprint(bad.d), func(t *testing.T) {
			if f := stats.SignFlip(bad.d, bad.opt); !math.IsNaN(f.P) || !hasKind(f.Warnings, stats.Undefined) {
				t.Errorf("SignFlip(%v, %+v) = %v, want NaN with an undefined warning", bad.d, bad.opt, f)
			}
		})
	}
}

// TestAdjust checks Holm and Benjamini–Hochberg against hand-computed
// values (R's p.adjust gives the same: holm 0.05 0.08 0.09 0.09 0.09 and
// BH 0.05 ×5 for 0.01…0.05) and against the definitions evaluated
// directly, max/min over j, on random families with ties and NaNs.
func TestAdjust(t *testing.T) {
	p := []float64{0.03, 0.01, 0.05, 0.02, 0.04}
	hw := []float64{0.09, 0.05, 0.09, 0.08, 0.09}
	bw := []float64{0.05, 0.05, 0.05, 0.05, 0.05}
	h, b := stats.Holm(p), stats.BH(p)
	for i := range p {
		if !closeRel(h[i], hw[i], 1e-14) || !closeRel(b[i], bw[i], 1e-14) {
			t.Errorf("p %v: holm %v want %v; BH %v want %v", p, h, hw, b, bw)
			break
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		m := 1 + rng.IntN(12)
		p := make([]float64, m)
		for i := range p {
			switch rng.IntN(6) {
			case 0:
				p[i] = math.NaN()
			case 1:
				p[i] = 0.02 // ties
			default:
				p[i] = rng.Float64() * rng.Float64()
			}
		}
		h, b := stats.Holm(p), stats.BH(p)
		var def []float64
		for _, x := range p {
			if !math.IsNaN(x) {
				def = append(def, x)
			}
		}
		mm := float64(len(def))
		for i, pi := range p {
			if math.IsNaN(pi) {
				if !math.IsNaN(h[i]) || !math.IsNaN(b[i]) {
					t.Fatalf("NaN p adjusted to %v, %v", h[i], b[i])
				}
				continue
			}
			// Holm: max over p_j ≤ p_i of (m − rank_j + 1)·p_j, ranks by value.
			holm, bh := 0.0, math.Inf(1)
			for _, pj := range def {
				if pj <= pi {
					r := 0.0 // rank of pj: defined p-values strictly below it, plus 1
					for _, x := range def {
						if x < pj {
							r++
						}
					}
					// Among ties the largest multiplier belongs to the first.
					holm = max(holm, (mm-r)*pj)
				}
				if pj >= pi {
					r := 0.0 // rank of pj counting ties: values ≤ it
					for _, x := range def {
						if x <= pj {
							r++
						}
					}
					bh = min(bh, mm*pj/r)
				}
			}
			if !closeRel(h[i], min(1, holm), 1e-12) || !closeRel(b[i], min(1, bh), 1e-12) {
				t.Fatalf("p %v: at %d holm %v (def %v), BH %v (def %v)", p, i, h[i], holm, b[i], bh)
			}
		}
	}
}

// TestClopperPearson checks the Clopper–Pearson interval against
//   - R's documented example, binom.test(c(682, 243), p = 3/4) (?binom.test
//     in R's stats package), printed "0.7076683 0.7654066": tolerance
//     half a unit of the 7th digit;
//   - the closed forms for k = 0 (hi = 1 − (α/2)^(1/n)) and k = n
//     (lo = (α/2)^(1/n)), tolerance 1e-12 relative;
//   - an independent inversion of the binomial tails by bisection
//     (P(X ≥ k; lo) = α/2 and P(X ≤ k; hi) = α/2, tails summed from
//     log-pmfs), tolerance 1e-8 absolute, for every k of n = 1, 7, 21,
//     105.
func TestClopperPearson(t *testing.T) {
	lo, hi := stats.ClopperPearson(682, 925, 0.95)
	if math.Abs(lo-0.7076683) > 5e-8 || math.Abs(hi-0.7654066) > 5e-8 {
		t.Errorf("ClopperPearson(682, 925) = %.9f, %.9f, want 0.7076683, 0.7654066", lo, hi)
	}
	for _, n := range []int{1, 7, 21, 105} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			for _, conf := range []float64{0.95, 0.9} {
				a := (1 - conf) / 2
				lo, hi := stats.ClopperPearson(0, n, conf)
				if lo != 0 || !closeRel(hi, 1-math.Pow(a, 1/float64(n)), 1e-12) {
					t.Errorf("k = 0, n = %d: [%v, %v]", n, lo, hi)
				}
				lo, hi = stats.ClopperPearson(n, n, conf)
				if hi != 1 || !closeRel(lo, math.Pow(a, 1/float64(n)), 1e-12) {
					t.Errorf("k = n = %d: [%v, %v]", n, lo, hi)
				}
				for k := 1; k < n; k++ {
					lo, hi := stats.ClopperPearson(k, n, conf)
					wlo := bisect(func(p float64) float64 { return binomTail(k, n, p, true) - a })
					whi := bisect(func(p float64) float64 { return a - binomTail(k, n, p, false) })
					if math.Abs(lo-wlo) > 1e-8 || math.Abs(hi-whi) > 1e-8 {
						t.Errorf("ClopperPearson(%d, %d, %v) = [%.12f, %.12f], bisection [%.12f, %.12f]", k, n, conf, lo, hi, wlo, whi)
					}
				}
			}
		})
	}
	for _, bad := range [][2]int{{-1, 5}, {6, 5}, {0, 0}} {
		t.Run(fmt.Sprint(bad), func(t *testing.T) {
			if lo, hi := stats.ClopperPearson(bad[0], bad[1], 0.95); !math.IsNaN(lo) || !math.IsNaN(hi) {
				t.Errorf("ClopperPearson(%v) = %v, %v, want NaN", bad, lo, hi)
			}
		})
	}
}

// binomTail returns P(X ≥ k) (upper) or P(X ≤ k) for X ~ Binomial(n, p).
func binomTail(k, n int, p float64, upper bool) float64 {
	s := 0.0
	for x := 0; x <= n; x++ {
		if upper && x < k || !upper && x > k {
			continue
		}
		lg := func(v int) float64 { l, _ := math.Lgamma(float64(v) + 1); return l }
		s += math.Exp(lg(n) - lg(x) - lg(n-x) + float64(x)*math.Log(p) + float64(n-x)*math.Log1p(-p))
	}
	return s
}

// bisect finds the root in (0, 1) of an increasing f.
func bisect(f func(float64) float64) float64 {
	lo, hi := 0.0, 1.0
	for range 200 {
		m := (lo + hi) / 2
		if f(m) < 0 {
			lo = m
		} else {
			hi = m
		}
	}
	return (lo + hi) / 2
}

// TestFisherExact checks Fisher's exact test against
//   - Fisher's tea-tasting table [[3, 1], [1, 3]], p = 34/70 exactly (R:
//     fisher.test(matrix(c(3, 1, 1, 3), 2))$p.value 0.4857143);
//   - exact rational arithmetic (math/big hypergeometric probabilities,
//     the same two-sided rule), relative tolerance 1e-10, on the paper's
//     cells against plausible reruns and random tables.
func TestFisherExact(t *testing.T) {
	if p := stats.FisherExact(3, 1, 1, 3); !closeRel(p, 34.0/70, 1e-13) {
		t.Errorf("tea tasting: p = %.17g, want 34/70", p)
	}
	cases := [][4]int{{1, 9, 11, 3}, {42, 63, 30, 75}, {105, 0, 100, 5}, {0, 105, 0, 105}, {6, 99, 20, 85}, {24, 81, 24, 81}}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 30 {
		cases = append(cases, [4]int{rng.IntN(40), rng.IntN(40), rng.IntN(40), rng.IntN(40)})
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			got := stats.FisherExact(c[0], c[1], c[2], c[3])
			want := fisherRational(c[0], c[1], c[2], c[3])
			if !closeRel(got, want, 1e-10) {
				t.Errorf("FisherExact%v = %.17g, rational %.17g", c, got, want)
			}
		})
	}
	if p := stats.FisherExact(-1, 0, 0, 0); !math.IsNaN(p) {
		t.Errorf("negative count: p = %v, want NaN", p)
	}
	if lp := stats.FisherExactLog(0, -1, 0, 0); !math.IsNaN(lp) {
		t.Errorf("negative count: log p = %v, want NaN", lp)
	}
}

// TestFisherExactTiny checks p-values below the smallest float64: their
// logarithm against exact rational arithmetic (relative tolerance 1e-12),
// and FisherExact at its floor PFloor, never 0. (1000, 0, 0, 1000) has
// two tables as likely as the observed one, so p = 2/C(2000, 1000),
// ln p = −1381.58…; FisherExact returned 0 before it summed in log space.
func TestFisherExactTiny(t *testing.T) {
	for _, c := range [][4]int{{1000, 0, 0, 1000}, {400, 0, 0, 400}, {700, 3, 1, 650}, {0, 900, 1000, 0}, {300, 0, 0, 3000}, {105, 0, 0, 105}} {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			p, lp := stats.FisherExact(c[0], c[1], c[2], c[3]), stats.FisherExactLog(c[0], c[1], c[2], c[3])
			want := fisherRationalLog(c[0], c[1], c[2], c[3])
			if !closeRel(lp, want, 1e-12) {
				t.Errorf("FisherExactLog%v = %.17g, rational %.17g", c, lp, want)
			}
			switch {
			case want < math.Log(stats.PFloor) && p != stats.PFloor:
				t.Errorf("FisherExact%v = %v, want the floor %v (ln p = %.6g)", c, p, stats.PFloor, want)
			case want >= math.Log(stats.PFloor) && !closeRel(p, math.Exp(want), 1e-10):
				t.Errorf("FisherExact%v = %v, want %v", c, p, math.Exp(want))
			}
		})
	}
	c2000 := new(big.Int).Binomial(2000, 1000)
	want := math.Log(2) - bigLog(c2000)
	if lp := stats.FisherExactLog(1000, 0, 0, 1000); !closeRel(lp, want, 1e-12) {
		t.Errorf("FisherExactLog(1000, 0, 0, 1000) = %.17g, want ln(2/C(2000, 1000)) = %.17g", lp, want)
	}
	if lp := stats.FisherExactLog(3, 1, 1, 3); !closeRel(lp, math.Log(34.0/70), 1e-13) {
		t.Errorf("tea tasting: log p = %.17g, want ln(34/70)", lp)
	}
}

// fisherRationalLog is the natural logarithm of fisherRational's p-value,
// from the exact rational (no float64 underflow).
func fisherRationalLog(a, b, c, d int) float64 {
	r1, c1, n := a+b, a+c, a+b+c+d
	lo, hi := max(0, c1-(n-r1)), min(r1, c1)
	count := func(x int) *big.Int {
		return new(big.Int).Mul(new(big.Int).Binomial(int64(r1), int64(x)), new(big.Int).Binomial(int64(n-r1), int64(c1-x)))
	}
	obs := new(big.Rat).SetInt(count(a))
	tol := new(big.Rat).Mul(obs, big.NewRat(10000001, 10000000))
	sum := new(big.Int)
	for x := lo; x <= hi; x++ {
		if q := count(x); new(big.Rat).SetInt(q).Cmp(tol) <= 0 {
			sum.Add(sum, q)
		}
	}
	return min(0, bigLog(sum)-bigLog(new(big.Int).Binomial(int64(n), int64(c1))))
}

// bigLog returns ln x for x > 0: x = m·2^e with m ∈ [0.5, 1).
func bigLog(x *big.Int) float64 {
	m := new(big.Float).SetInt(x)
	e := m.MantExp(m)
	f, _ := m.Float64()
	return math.Log(f) + float64(e)*math.Ln2
}

// fisherRational is Fisher's two-sided p-value in exact arithmetic.
func fisherRational(a, b, c, d int) float64 {
	r1, c1, n := a+b, a+c, a+b+c+d
	lo, hi := max(0, c1-(n-r1)), min(r1, c1)
	prob := func(x int) *big.Rat {
		num := new(big.Int).Mul(new(big.Int).Binomial(int64(r1), int64(x)), new(big.Int).Binomial(int64(n-r1), int64(c1-x)))
		return new(big.Rat).SetFrac(num, new(big.Int).Binomial(int64(n), int64(c1)))
	}
	obs := prob(a)
	tol := new(big.Rat).Mul(obs, big.NewRat(10000001, 10000000))
	sum := new(big.Rat)
	for x := lo; x <= hi; x++ {
		if q := prob(x); q.Cmp(tol) <= 0 {
			sum.Add(sum, q)
		}
	}
	f, _ := sum.Float64()
	return min(f, 1)
}

// TestClusterSE checks the cluster-robust standard error on a hand
// example: clusters (N, Sum) = (2, 2), (2, 0), (4, 2): θ = 4/8, residuals
// 1, −1, 0, so SE² = 3/2 · 2 / 64 and SE = sqrt(3/64).
func TestClusterSE(t *testing.T) {
	cs := []stats.Cluster{{N: 2, Sum: 2}, {N: 2, Sum: 0}, {N: 4, Sum: 2}}
	if got, want := stats.ClusterSE(cs), math.Sqrt(3.0/64); !closeRel(got, want, 1e-14) {
		t.Errorf("ClusterSE = %v, want %v", got, want)
	}
	if got := stats.ClusterSE(cs[:1]); !math.IsNaN(got) {
		t.Errorf("one cluster: SE = %v, want NaN", got)
	}
}

// TestStudentized checks the studentized interval's edges: it holds the
// estimate, it is reproducible, it is wider than the percentile interval
// on the paper's cell (the few-cluster correction TestCoverage measures),
// equal clusters give a degenerate interval, and an unknown method is
// refused with a warning.
func TestStudentized(t *testing.T) {
	o := stats.Options{B: 4000, Seed: 2, Method: stats.Studentized}
	iv := stats.ClusterBootstrap(paperCell, o)
	pct := stats.ClusterBootstrap(paperCell, stats.Options{B: 4000, Seed: 2})
	if !(iv.Lo < iv.Estimate && iv.Estimate < iv.Hi) || iv.Hi-iv.Lo <= pct.Hi-pct.Lo {
		t.Errorf("studentized [%v, %v] around %v, percentile [%v, %v]", iv.Lo, iv.Hi, iv.Estimate, pct.Lo, pct.Hi)
	}
	if again := stats.ClusterBootstrap(paperCell, o); again.Lo != iv.Lo || again.Hi != iv.Hi {
		t.Errorf("not reproducible: %v, %v", iv, again)
	}
	eq := stats.ClusterBootstrap([]stats.Cluster{{N: 5, Sum: 2}, {N: 10, Sum: 4}, {N: 5, Sum: 2}}, o)
	if eq.Lo != 0.4 || eq.Hi != 0.4 || !hasKind(eq.Warnings, stats.Degenerate) {
		t.Errorf("equal clusters: %+v", eq)
	}
	bad := stats.ClusterBootstrap(paperCell, stats.Options{Method: "bca"})
	if !math.IsNaN(bad.Lo) || !hasKind(bad.Warnings, stats.Undefined) {
		t.Errorf("unknown method: %+v", bad)
	}
}

// TestSignFlipLarge checks that a cluster sum too large for the exact
// table goes to Monte Carlo instead of allocating it, and stays valid.
func TestSignFlipLarge(t *testing.T) {
	f := stats.SignFlip([]int{1 << 30, 1 << 30, -(1 << 30)}, stats.FlipOptions{Draws: 2000, Seed: 1})
	// T = 2^30; |T*| ≥ 2^30 for every sign vector: p = 1.
	if f.Exact || f.P != 1 {
		t.Errorf("huge sums: %+v", f)
	}
}

// TestSignFlipMonteCarloPinned: the Monte Carlo p-value of a pair over
// 16,667 clusters (not a multiple of 4 or 64 signs) is the one the
// implementation before the four-sign tables gave, which drew the same
// signs one at a time: the same statistic for every draw.
func TestSignFlipMonteCarloPinned(t *testing.T) {
	d := make([]int, 16667)
	for i := range d {
		d[i] = (i*7919)%11 - 5
	}
	d[0] += 40
	f := stats.SignFlip(d, stats.FlipOptions{Seed: 7, Draws: 20000})
	if f.Exact || f.Draws != 20000 || f.P != 0.9258537073146342 {
		t.Errorf("P = %v (exact %v, %d draws), want 0.9258537073146342 by Monte Carlo", f.P, f.Exact, f.Draws)
	}
}

// refFlipMC is the Monte Carlo p-value summed one sign at a time, every
// sign of every draw: the reference for SignFlip's draws, which stop
// summing once the draw's first words settle it (bit j of word w of a
// draw is the sign of the (64w+j)-th nonzero dᵢ, set: +).
func refFlipMC(d []int, seed uint64, draws int) float64 {
	var nz []int64
	var obs int64
	for _, x := range d {
		obs += int64(x)
		if x != 0 {
			nz = append(nz, int64(max(x, -x)))
		}
	}
	obs = max(obs, -obs)
	src := rand.NewPCG(seed, 0x6d63707374726573)
	hits := 0
	for range draws {
		var t int64
		var word uint64
		for i, a := range nz {
			if i%64 == 0 {
				word = src.Uint64()
			}
			if word>>(i%64)&1 != 0 {
				t += a
			} else {
				t -= a
			}
		}
		if max(t, -t) >= obs {
			hits++
		}
	}
	return float64(1+hits) / float64(1+draws)
}

// TestSignFlipMonteCarloSettled: a draw settled by its first words (the
// rest cannot bring |T*| to |T_obs|, or cannot take it below) counts as
// when every sign is summed, and the next draw starts at the same place
// of the stream: the same p-value as the reference for statistics at
// their largest (every cluster one way), next to it, in the middle of
// the distribution and at p near 0.05.
func TestSignFlipMonteCarloSettled(t *testing.T) {
	base := make([]int, 5001)
	for i := range base {
		base[i] = (i*7919)%11 - 5
	}
	for _, tc := range []struct {
		name string
		d    func([]int)
	}{
		{"all one way", func(d []int) {
			for i := range d {
				d[i] = max(d[i], -d[i])
			}
		}},
		{"all one way but one", func(d []int) {
			for i := range d {
				d[i] = max(d[i], -d[i])
			}
			d[4000] = -5
		}},
		{"middle", func([]int) {}},
		{"near 0.05", func(d []int) {
			for i, n := 0, 0; n < 43; i++ { // T_obs from 10 to 440, Σdᵢ² as it was
				if d[i] == -5 {
					d[i], n = 5, n+1
				}
			}
		}},
		{"a large last cluster", func(d []int) { d[len(d)-1] = 20000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := slices.Clone(base)
			tc.d(d)
			f := stats.SignFlip(d, stats.FlipOptions{Seed: 3, Draws: 3000})
			if want := refFlipMC(d, 3, 3000); f.Exact || f.P != want {
				t.Errorf("%s: P = %v (exact %v), want %v", tc.name, f.P, f.Exact, want)
			}
		})
	}
}
