package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/combin"
	"gonum.org/v1/gonum/stat/distuv"
)

// ClopperPearson returns the Clopper–Pearson (1934) "exact" interval
// [lo, hi] ⊆ [0, 1] for k successes in n trials at two-sided confidence
// level conf ∈ (0, 1): the p whose equal-tailed binomial tests do not
// reject, from Beta quantiles,
//
//	lo = B⁻¹(α/2; k, n − k + 1),  hi = B⁻¹(1 − α/2; k + 1, n − k),
//
// α = 1 − conf, with lo = 0 when k = 0 and hi = 1 when k = n. It equals
// R's binom.test(k, n, conf.level = conf)$conf.int. The Beta quantiles are
// gonum's (distuv.Beta.Quantile).
//
// Note: the interval guarantees at least conf coverage for every p, so it
// is wider than Wilson's, whose coverage is conf on average (Agresti &
// Coull 1998); it is offered for readers who want the guarantee.
//
// Reference: C. J. Clopper, E. S. Pearson (1934). The use of confidence or
// fiducial limits illustrated in the case of the binomial. Biometrika
// 26(4), 404–413.
//
// Invalid input (n ≤ 0, k outside [0, n], conf outside (0, 1)) returns
// (NaN, NaN); ClopperPearson never panics.
func ClopperPearson(k, n int, conf float64) (lo, hi float64) {
	if n <= 0 || k < 0 || k > n || !(conf > 0 && conf < 1) {
		return math.NaN(), math.NaN()
	}
	a := (1 - conf) / 2
	fk, fn := float64(k), float64(n)
	lo, hi = 0, 1
	if k > 0 {
		lo = distuv.Beta{Alpha: fk, Beta: fn - fk + 1}.Quantile(a)
	}
	if k < n {
		hi = distuv.Beta{Alpha: fk + 1, Beta: fn - fk}.Quantile(1 - a)
	}
	return lo, hi
}

// PFloor is the smallest p-value FisherExact returns, 1e-300: a smaller
// one is returned as PFloor, to be read as p ≤ 1e-300 (fisherExactLog
// gives its logarithm).
const PFloor = 1e-300

// FisherExact returns the two-sided p-value ∈ [PFloor, 1] of Fisher's
// exact test of the 2×2 table [[a, b], [c, d]] (rows: the two samples;
// columns: with and without the outcome), conditional on the margins: the
// sum of the hypergeometric probabilities of the tables no more likely
// than the observed one, as R's fisher.test(matrix(c(a, c, b, d),
// 2))$p.value, including R's relative tolerance 1 + 10⁻⁷ for ties.
//
// It is exp(fisherExactLog(a, b, c, d)), floored at PFloor: a table far
// from independence has a p-value below the smallest float64
// (FisherExact(1000, 0, 0, 1000) is 2/C(2000, 1000) ≈ 1e-600), which
// would otherwise be 0, outside every p-value's range (0, 1].
//
// References:
//   - R. A. Fisher (1935). The logic of inductive inference. J. R. Stat.
//     Soc. 98(1), 39–82.
//   - A. Agresti (2002). Categorical Data Analysis, 2nd ed., §3.5.
//
// Negative counts return NaN; FisherExact never panics.
func FisherExact(a, b, c, d int) float64 {
	lp := fisherExactLog(a, b, c, d)
	if math.IsNaN(lp) {
		return lp
	}
	return max(math.Exp(lp), PFloor)
}

// fisherExactLog returns the natural logarithm of FisherExact's two-sided
// p-value, ≤ 0 and finite for every table with non-negative counts, even
// where the p-value itself is below the smallest float64.
//
// The hypergeometric probabilities are log-binomials (math.Lgamma); the
// p-value's two sums (the tail, over the support) are each taken
// relative to their largest term (log-sum-exp), so neither underflows.
// The p-value's relative error is about 1e-13 for tables of a few
// thousand (TestFisherExact checks it against exact rational arithmetic,
// its logarithm down to p ≈ 1e-600).
//
// Negative counts return NaN; fisherExactLog never panics.
func fisherExactLog(a, b, c, d int) float64 {
	if a < 0 || b < 0 || c < 0 || d < 0 {
		return math.NaN()
	}
	r1, c1, n := a+b, a+c, a+b+c+d
	lo, hi := max(0, c1-(n-r1)), min(r1, c1)
	if lo == hi {
		return 0
	}
	logp := func(x int) float64 { // log C(r1, x) + log C(n-r1, c1-x); lo ≤ x ≤ hi keeps both defined
		return combin.LogGeneralizedBinomial(float64(r1), float64(x)) + combin.LogGeneralizedBinomial(float64(n-r1), float64(c1-x))
	}
	obs := logp(a)
	cut := obs + math.Log1p(1e-7)
	lmax, tmax := math.Inf(-1), math.Inf(-1)
	for x := lo; x <= hi; x++ {
		lp := logp(x)
		lmax = max(lmax, lp)
		if lp <= cut {
			tmax = max(tmax, lp)
		}
	}
	var all, tail float64
	for x := lo; x <= hi; x++ {
		lp := logp(x)
		all += math.Exp(lp - lmax)
		if lp <= cut {
			tail += math.Exp(lp - tmax)
		}
	}
	return min(0, (tmax-lmax)+(math.Log(tail)-math.Log(all)))
}
