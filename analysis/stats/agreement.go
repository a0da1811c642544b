package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Agreement is the agreement of two coders who each put the same n items
// into one of q categories: the raw agreement and three chance-corrected
// coefficients, with the asymptotic standard errors and intervals of two.
// An undefined value is NaN and comes with a warning saying why.
type Agreement struct {
	N          int     // items both coders coded
	Categories int     // q, the categories of the scale (≥ 2)
	Observed   float64 // raw agreement po = Σₖ pₖₖ, in [0, 1]

	Kappa   float64 // Cohen's kappa, in [−1, 1]
	KappaSE float64 // its asymptotic standard error (Fleiss, Cohen & Everitt 1969)
	KappaLo float64 // lower bound of kappa's interval, clipped to [−1, 1]
	KappaHi float64 // upper bound, clipped to [−1, 1]

	AC1   float64 // Gwet's AC1, in [−1, 1]
	AC1SE float64 // its asymptotic standard error (Gwet 2008)
	AC1Lo float64 // lower bound of AC1's interval, clipped to [−1, 1]
	AC1Hi float64 // upper bound, clipped to [−1, 1]

	PABAK float64 // prevalence- and bias-adjusted kappa (q·po − 1)/(q − 1), in [−1, 1]

	Warnings []Warning // caveats: undefined kappa, zero-width intervals, invalid input
}

// Agree computes the agreement of two coders from their q×q contingency
// table: table[i][j] counts the items coder A put in category i and coder B
// in category j. q is the number of categories of the scale, including
// those neither coder used (they change AC1 and PABAK, not kappa). conf ∈
// (0, 1) is the two-sided level of the intervals (0.95 for 95%).
//
// With n = Σ table, pᵢⱼ = table[i][j]/n, row and column margins pᵢ₊ and
// p₊ⱼ, z = Φ⁻¹((1+conf)/2):
//
// Raw agreement po = Σₖ pₖₖ.
//
// Cohen's kappa (Cohen 1960): pe = Σₖ pₖ₊p₊ₖ, κ = (po − pe)/(1 − pe), with
// the large-sample variance of Fleiss, Cohen & Everitt (1969, eq. 13)
//
//	Var(κ) = [ Σₖ pₖₖ((1−pe) − (pₖ₊+p₊ₖ)(1−po))²
//	         + (1−po)² Σ_{i≠j} pᵢⱼ(p₊ᵢ+pⱼ₊)²
//	         − (po·pe − 2pe + po)² ] / (n(1−pe)⁴),
//
// and the interval κ ± z·SE(κ) (as statsmodels' cohens_kappa). κ is
// undefined when pe = 1, which happens exactly when both coders put every
// item in one and the same category (a category used by nobody else, as
// the paper's E and R columns: every bit 0 in both codings): then κ, its
// SE and interval are NaN with an Undefined warning.
//
// Gwet's AC1 (Gwet 2008): with πₖ = (pₖ₊ + p₊ₖ)/2,
// pe = Σₖ πₖ(1−πₖ)/(q−1), AC1 = (po − pe)/(1 − pe), with the variance
// (Gwet 2008, eq. 28; irrCAC's gwet.ac1.table with N = ∞)
//
//	Var(AC1) = [ Σᵢⱼ pᵢⱼ(δᵢⱼ − 2(1−AC1)(1 − (πᵢ+πⱼ)/2)/(q−1))²
//	           − (po − 2(1−AC1)pe)² ] / (n(1−pe)²),
//
// δ the identity, and the interval AC1 ± z·SE(AC1). Since
// Σₖ πₖ(1−πₖ) ≤ 1 − 1/q, AC1's pe ≤ 1/q < 1, so AC1 stays defined whenever
// n ≥ 1 and q ≥ 2: with every item in one cell it is 1.
//
// PABAK (Byrt, Bishop & Carlin 1993), for q categories the
// Brennan–Prediger coefficient: (q·po − 1)/(q − 1); 2po − 1 for q = 2.
//
// Both variances are exactly 0 under perfect agreement (po = 1; computed
// as such, not left to round-off). So are κ and its variance when one
// coder puts every item in one category k and the other does not: then
// pₖ₊ = 1 (or p₊ₖ = 1), po = pe = p₊ₖ, and the bracket of Var(κ) is
// pe³(1−pe)² + pe²(1−pe)³ − pe²(1−pe)² = 0 exactly, which the sum in
// floating point leaves as round-off of up to a few 1e-7 in SE(κ). A variance of zero
// gives an interval of no width, flagged with a Degenerate warning: the
// asymptotic interval says nothing there. Negative round-off in a variance
// is set to 0.
//
// References:
//   - J. Cohen (1960). A coefficient of agreement for nominal scales.
//     Educ. Psychol. Meas. 20(1), 37–46.
//   - J. L. Fleiss, J. Cohen, B. S. Everitt (1969). Large sample standard
//     errors of kappa and weighted kappa. Psychol. Bull. 72(5), 323–327.
//   - K. L. Gwet (2008). Computing inter-rater reliability and its variance
//     in the presence of high agreement. Br. J. Math. Stat. Psychol. 61(1),
//     29–48.
//   - T. Byrt, J. Bishop, J. B. Carlin (1993). Bias, prevalence and kappa.
//     J. Clin. Epidemiol. 46(5), 423–429.
//   - R. L. Brennan, D. J. Prediger (1981). Coefficient kappa: some uses,
//     misuses, and alternatives. Educ. Psychol. Meas. 41(3), 687–699.
//
// Note: invalid input (a table that is not square, q < 2, a negative
// count, n = 0, conf outside (0, 1)) returns every value NaN with an
// Undefined warning; Agree never panics.
func Agree(table [][]int, conf float64) Agreement {
	q := len(table)
	a := Agreement{Categories: q}
	nan := math.NaN()
	a.Observed, a.Kappa, a.KappaSE, a.KappaLo, a.KappaHi = nan, nan, nan, nan, nan
	a.AC1, a.AC1SE, a.AC1Lo, a.AC1Hi, a.PABAK = nan, nan, nan, nan, nan
	undefined := func(format string, args ...any) Agreement {
		a.Warnings = append(a.Warnings, Warning{Undefined, fmt.Sprintf(format, args...)})
		return a
	}
	if q < 2 {
		return undefined("agreement undefined: the scale has %d categories, want at least 2", q)
	}
	n := 0
	for i, row := range table {
		if len(row) != q {
			return undefined("agreement undefined: row %d of the table has %d cells, want %d", i, len(row), q)
		}
		for _, c := range row {
			if c < 0 {
				return undefined("agreement undefined: negative count %d", c)
			}
			n += c
		}
	}
	a.N = n
	if n == 0 {
		return undefined("agreement undefined: no item coded by both coders")
	}
	if !(conf > 0 && conf < 1) {
		return undefined("agreement undefined: confidence level %v outside (0, 1)", conf)
	}
	z := distuv.UnitNormal.Quantile((1 + conf) / 2)
	fn, fq := float64(n), float64(q)
	p := func(i, j int) float64 { return float64(table[i][j]) / fn } // pᵢⱼ
	row, col := make([]float64, q), make([]float64, q)
	rowN, colN := make([]int, q), make([]int, q)
	diag := 0
	for i := range q {
		diag += table[i][i]
		for j := range q {
			rowN[i] += table[i][j]
			colN[j] += table[i][j]
		}
	}
	var oneCategory, singleA, singleB bool
	for k := range q {
		row[k], col[k] = float64(rowN[k])/fn, float64(colN[k])/fn
		oneCategory = oneCategory || rowN[k] == n && colN[k] == n
		singleA = singleA || rowN[k] == n
		singleB = singleB || colN[k] == n
	}
	po := float64(diag) / fn // exact: 1 under perfect agreement, not Σ's round-off
	a.Observed = po
	a.PABAK = (fq*po - 1) / (fq - 1)

	// Cohen's kappa.
	if oneCategory {
		a.Warnings = append(a.Warnings, Warning{Undefined, fmt.Sprintf(
			"kappa undefined: both coders put all %d items in one category (expected agreement 1); AC1 and PABAK stay defined", n)})
	} else {
		pe := 0.0
		for k := range q {
			pe += row[k] * col[k]
		}
		a.Kappa = (po - pe) / (1 - pe)
		s := 0.0
		for k := range q {
			d := (1 - pe) - (row[k]+col[k])*(1-po)
			s += p(k, k) * d * d
		}
		off := 0.0
		for i := range q {
			for j := range q {
				if i != j {
					m := col[i] + row[j]
					off += p(i, j) * m * m
				}
			}
		}
		s += (1 - po) * (1 - po) * off
		c := po*pe - 2*pe + po
		s -= c * c
		v := max(s, 0) / (fn * math.Pow(1-pe, 4))
		single := ""
		switch {
		case singleA && singleB:
			single = "each coder"
		case singleA:
			single = "coder A"
		case singleB:
			single = "coder B"
		}
		if diag == n || single != "" {
			v = 0 // perfect agreement or one coder's single category: exactly 0, not round-off
		}
		if single != "" {
			a.Kappa = 0 // po = pe: exactly 0, whatever the other coder did
		}
		a.KappaSE = math.Sqrt(v)
		a.KappaLo, a.KappaHi = clip(a.Kappa-z*a.KappaSE), clip(a.Kappa+z*a.KappaSE)
		switch {
		case single != "":
			a.Warnings = append(a.Warnings, Warning{Degenerate, fmt.Sprintf(
				"kappa is 0 with asymptotic variance 0: %s put all %d items in one category, so its interval has no width", single, n)})
		case v == 0:
			a.Warnings = append(a.Warnings, Warning{Degenerate, "kappa's asymptotic variance is 0: its interval has no width"})
		}
	}

	// Gwet's AC1.
	pi := make([]float64, q)
	pe := 0.0
	for k := range q {
		pi[k] = (row[k] + col[k]) / 2
		pe += pi[k] * (1 - pi[k])
	}
	pe /= fq - 1
	a.AC1 = (po - pe) / (1 - pe)
	s := 0.0
	for i := range q {
		for j := range q {
			if p(i, j) == 0 {
				continue
			}
			d := 0.0
			if i == j {
				d = 1
			}
			d -= 2 * (1 - a.AC1) * (1 - (pi[i]+pi[j])/2) / (fq - 1)
			s += p(i, j) * d * d
		}
	}
	c := po - 2*(1-a.AC1)*pe
	s -= c * c
	v := max(s, 0) / (fn * (1 - pe) * (1 - pe))
	if diag == n {
		v = 0 // perfect agreement: exactly 0, not round-off
	}
	a.AC1SE = math.Sqrt(v)
	a.AC1Lo, a.AC1Hi = clip(a.AC1-z*a.AC1SE), clip(a.AC1+z*a.AC1SE)
	if v == 0 {
		a.Warnings = append(a.Warnings, Warning{Degenerate, "AC1's asymptotic variance is 0: its interval has no width"})
	}
	return a
}

// clip limits a bound of a coefficient's interval to [−1, 1].
func clip(x float64) float64 { return min(max(x, -1), 1) }
