package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Wilson returns the Wilson score interval [lo, hi] ⊆ [0, 1] for k successes
// in n trials at two-sided confidence level conf ∈ (0, 1), without
// continuity correction.
//
// With p̂ = k/n and z = Φ⁻¹((1+conf)/2) (z = 1.959963984540054 for 0.95),
//
//	lo, hi = (p̂ + z²/(2n) ∓ z·sqrt(p̂(1−p̂)/n + z²/(4n²))) / (1 + z²/n),
//
// the set of p whose score test |p̂ − p| / sqrt(p(1−p)/n) ≤ z does not
// reject (Wilson 1927; recommended over the Wald interval by Agresti & Coull
// 1998). It equals R's prop.test(k, n, correct = FALSE)$conf.int.
//
// References:
//   - E. B. Wilson (1927). Probable inference, the law of succession, and
//     statistical inference. JASA 22(158), 209–212.
//   - A. Agresti, B. A. Coull (1998). Approximate is better than "exact" for
//     interval estimation of binomial proportions. Am. Stat. 52(2), 119–126.
//
// Note: lo is exactly 0 when k = 0 and hi is exactly 1 when k = n (the
// formula's limits; computing them would leave rounding residue).
//
// Note: n = 0 returns (NaN, NaN): with no trials there is no estimate, and a
// NaN cannot be mistaken for a real interval in a table. Invalid input
// (k < 0, n < 0, k > n, conf outside (0, 1) or NaN) also returns (NaN, NaN);
// Wilson never panics.
func Wilson(k, n int, conf float64) (lo, hi float64) {
	if n <= 0 || k < 0 || k > n || !(conf > 0 && conf < 1) {
		return math.NaN(), math.NaN()
	}
	z := distuv.UnitNormal.Quantile((1 + conf) / 2)
	z2 := z * z
	fn := float64(n)
	fk := float64(k)
	// Equivalent form without p̂, avoiding cancellation in p̂(1−p̂):
	//	(2k + z² ∓ z·sqrt(z² + 4k(n−k)/n)) / (2(n + z²)).
	center := 2*fk + z2
	half := z * math.Sqrt(z2+4*fk*(fn-fk)/fn)
	den := 2 * (fn + z2)
	lo, hi = (center-half)/den, (center+half)/den
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return max(lo, 0), min(hi, 1)
}

// McNemarExact returns the exact two-sided McNemar p-value ∈ [0, 1] for the
// discordant pair counts b and c (pairs that moved one way and the other).
//
// Under H₀ the b+c discordant pairs split as X ~ Binomial(b+c, 1/2), so
//
//	p = min(1, 2·P(X ≤ min(b, c))),
//
// the exact (conditional) form of McNemar's test (McNemar 1947). It equals
// R's binom.test(min(b, c), b + c, 0.5)$p.value.
//
// The lower tail is summed downward from k = min(b, c) with the ratio
// P(X = i−1)/P(X = i) = i/(n−i+1), starting from P(X = k) computed by
// Loader's saddle-point expansion (Loader 2000, as in R's dbinom), which has
// no cancellation for large n; the sum stops once the geometric bound on
// the remaining terms is below 1e-17 of the total. The relative error is
// below 1e-13 against exact integer arithmetic (all b+c ≤ 200, and selected
// cases up to b+c = 10⁶), and the loop runs O(min(k, sqrt(n))) terms. p-values below ~1e-300 lose precision and
// eventually underflow to 0.
//
// Note: gonum's mathext.RegIncBeta (Cephes incbet), the textbook route via
// P(X ≤ k) = I_{1/2}(n−k, k+1), is off by 1.4e-9 relative at
// (b, c) = (499500, 500500), hence the direct sum.
//
// References:
//   - Q. McNemar (1947). Note on the sampling error of the difference
//     between correlated proportions or percentages. Psychometrika 12(2),
//     153–157.
//   - C. Loader (2000). Fast and accurate computation of binomial
//     probabilities. Technical report, Bell Labs.
//
// Note: b+c = 0 returns 1 (no discordant pairs, no evidence). Negative counts
// return NaN; McNemarExact never panics.
func McNemarExact(b, c int) float64 {
	if b < 0 || c < 0 {
		return math.NaN()
	}
	n := b + c
	k := min(b, c)
	if 2*k >= n { // b == c (or n == 0): the lower tail already holds ≥ 1/2.
		return 1
	}
	return min(1, 2*binomHalfCDF(k, n))
}

// binomHalfCDF returns P(X ≤ k) for X ~ Binomial(n, 1/2), 0 ≤ k < n/2.
func binomHalfCDF(k, n int) float64 {
	fn := float64(n)
	t := binomHalfPMF(k, n)
	sum, comp := t, 0.0 // Neumaier-compensated sum
	for i := k; i > 0 && t > 0; i-- {
		r := float64(i) / (fn - float64(i) + 1) // P(X=i−1)/P(X=i) < 1
		t *= r
		// Later ratios are smaller, so the rest is < t/(1−r).
		y := sum + t
		if math.Abs(sum) >= math.Abs(t) {
			comp += (sum - y) + t
		} else {
			comp += (t - y) + sum
		}
		sum = y
		if t/(1-r) < 1e-17*sum {
			break
		}
	}
	return sum + comp
}

// binomHalfPMF returns P(X = x) for X ~ Binomial(n, 1/2), 0 ≤ x ≤ n, by
// Loader's (2000) saddle-point form
//
//	P(X = x) = exp(δ(n) − δ(x) − δ(n−x) − D(x, n/2) − D(n−x, n/2)) / sqrt(2π x(n−x)/n),
//
// with δ the Stirling-series error stirlerr and D the deviance term bd0.
func binomHalfPMF(x, n int) float64 {
	if x == 0 || x == n {
		return math.Ldexp(1, -n) // 2⁻ⁿ, exact until it underflows
	}
	fx, fn := float64(x), float64(n)
	m := fn / 2
	lc := stirlerr(fn) - stirlerr(fx) - stirlerr(fn-fx) - bd0(fx, m) - bd0(fn-fx, m)
	lf := math.Log(2*math.Pi) + math.Log(fx) + math.Log1p(-fx/fn)
	return math.Exp(lc - 0.5*lf)
}

// stirlerr returns δ(n) = log(n!) − log(sqrt(2πn)·(n/e)ⁿ) for integer n ≥ 1.
func stirlerr(n float64) float64 {
	const (
		s0 = 1.0 / 12
		s1 = 1.0 / 360
		s2 = 1.0 / 1260
		s3 = 1.0 / 1680
		s4 = 1.0 / 1188
	)
	if n <= 15 {
		// Small arguments: direct; the terms are < 30, so the absolute
		// error is ~1e-14, which is what matters inside exp.
		lg, _ := math.Lgamma(n + 1)
		return lg - (n+0.5)*math.Log(n) + n - 0.5*math.Log(2*math.Pi)
	}
	nn := n * n
	switch {
	case n > 500:
		return (s0 - s1/nn) / n
	case n > 80:
		return (s0 - (s1-s2/nn)/nn) / n
	case n > 35:
		return (s0 - (s1-(s2-s3/nn)/nn)/nn) / n
	default:
		return (s0 - (s1-(s2-(s3-s4/nn)/nn)/nn)/nn) / n
	}
}

// bd0 returns the deviance term D(x, np) = x·log(x/np) + np − x ≥ 0, with a
// series for x near np to avoid cancellation (Loader 2000).
func bd0(x, np float64) float64 {
	if math.Abs(x-np) < 0.1*(x+np) {
		v := (x - np) / (x + np)
		s := (x - np) * v
		ej := 2 * x * v
		v2 := v * v
		for j := 1; j < 1000; j++ {
			ej *= v2
			s1 := s + ej/float64(2*j+1)
			if s1 == s {
				return s1
			}
			s = s1
		}
		return s
	}
	return x*math.Log(x/np) + np - x
}
