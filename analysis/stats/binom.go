package stats

import (
	"math"

	"gonum.org/v1/gonum/mathext"
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

// McNemarExact returns the exact two-sided McNemar p-value ∈ (0, 1] for the
// discordant pair counts b and c (pairs that moved one way and the other).
//
// Under H₀ the b+c discordant pairs split as X ~ Binomial(b+c, 1/2), so
//
//	p = min(1, 2·P(X ≤ min(b, c))),
//
// the exact (conditional) form of McNemar's test (McNemar 1947). It equals
// R's binom.test(min(b, c), b + c, 0.5)$p.value. The binomial CDF is the
// regularized incomplete beta function, P(X ≤ k) = I_{1/2}(n−k, k+1)
// (gonum mathext.RegIncBeta, a Cephes port), accurate far beyond b+c = 10⁶;
// p-values below ~1e-308 underflow to 0.
//
// Reference: Q. McNemar (1947). Note on the sampling error of the difference
// between correlated proportions or percentages. Psychometrika 12(2), 153–157.
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
	cdf := mathext.RegIncBeta(float64(n-k), float64(k+1), 0.5)
	return min(1, 2*cdf)
}
