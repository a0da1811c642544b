package stats_test

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis/stats"
)

// agreeTol is the relative tolerance against the reference values below,
// which are printed with 17 significant digits. The observed differences
// come from evaluation order, ≤ 2e-13 relative (kappa's SE on the skewed
// table: Go 0.048690997616176374, statsmodels …180766, irrCAC …186837).
const agreeTol = 1e-9

// agreeRef holds reference values for Agree, from two independent tools:
//
//   - kappa, its SE and its 95% interval: statsmodels 0.13.5 (Debian
//     package python3-statsmodels 0.13.5+dfsg-7),
//     statsmodels.stats.inter_rater.cohens_kappa(table, return_results=True)
//     → kappa, std_kappa, kappa_low, kappa_upp (the Fleiss–Cohen–Everitt
//     variance, normal interval), printed with "%.17g".
//   - AC1 and its SE, PABAK (Brennan–Prediger) and raw agreement: Gwet's own
//     irrCAC 1.0 (github.com/kgwet/irrCAC, R/agree.coeff2.r at commit
//     7fb7509, sourced into R 4.2.2 Patched (2022-11-10 r83330), Debian
//     package r-base-core): gwet.ac1.table, bp2.table and pa2.table with
//     the default identity weights and N = Inf, printed with
//     sprintf("%.17g"). irrCAC's kappa2.table gives the same kappa and SE
//     as statsmodels (within agreeTol).
//
// The first table is irrCAC's cont3x3abstractors, whose published values
// (irrCAC README, 7 significant digits) are kappa 0.7964094 SE 0.05891072,
// AC1 0.8493305 SE 0.04321747, Brennan–Prediger 0.835 and percent
// agreement 0.89; TestAgreePublished checks them at their printed
// precision.
//
// Where the interval exceeds [−1, 1] (negative, content_p) the reference
// bound is statsmodels' unclipped value and the test expects the clipped
// one.
var agreeRef = []struct {
	name                       string
	table                      [][]int
	kappa, kappaSE, klo, khi   float64
	ac1, ac1SE, pabak, po      float64
	kappaUndefined, degenerate bool
}{
	{"abstractors", [][]int{{13, 0, 0}, {0, 20, 7}, {0, 4, 56}},
		0.79640940218397194, 0.058910718326081482, 0.68094651596146849, 0.91187228840647538,
		0.84933054823134624, 0.043217467522559269, 0.83500000000000019, 0.89000000000000012, false, false},
	{"hand", [][]int{{20, 5}, {10, 15}},
		0.39999999999999991, 0.12699606293110033, 0.15109229047666101, 0.64890770952333887,
		0.40594059405940586, 0.13015171764788608, 0.39999999999999991, 0.69999999999999996, false, false},
	{"skewed", [][]int{{18, 1}, {2, 0}},
		-0.067796610169490998, 0.048690997616180766, -0.16322921186853095, 0.027635991529548945,
		0.83529411764705885, 0.10046803225386083, 0.71428571428571419, 0.8571428571428571, false, false},
	{"negative", [][]int{{2, 8}, {9, 1}},
		-0.69999999999999996, 0.15888675212238476, -1.011412311780417, -0.38858768821958278,
		-0.69576059850374061, 0.16437217641242277, -0.69999999999999996, 0.15000000000000002, false, false},
	{"unused4", [][]int{{9, 1, 0, 0}, {2, 6, 0, 0}, {0, 1, 2, 0}, {0, 0, 0, 0}},
		0.67816091954022995, 0.14492409363538158, 0.3941149155227715, 0.96220692355768844,
		0.76282352941176468, 0.10715321855600794, 0.74603174603174605, 0.80952380952380953, false, false},
	{"content_p", [][]int{{19, 0}, {1, 1}},
		0.64406779661016944, 0.3246066507745019, 0.0078504519499746905, 1.2802851412703642,
		0.94509803921568625, 0.056074681463247913, 0.90476190476190466, 0.95238095238095233, false, false},
	// Perfect agreement: both SEs are 0 (irrCAC floors the variance at
	// 1e-100 and prints SE 1e-50; statsmodels prints 0).
	{"perfect", [][]int{{18, 0}, {0, 3}},
		1, 0, 1, 1,
		1, 0, 1, 1, false, true},
	// The paper's E column: every bit 0 in both codings. statsmodels and
	// irrCAC give kappa NaN (0/0); irrCAC gives AC1 1 (SE 1e-50), BP 1.
	{"allzero", [][]int{{0, 0}, {0, 21}},
		math.NaN(), math.NaN(), math.NaN(), math.NaN(),
		1, 0, 1, 1, true, true},
}

func TestAgreeReference(t *testing.T) {
	for _, r := range agreeRef {
		a := stats.Agree(r.table, 0.95)
		check := func(what string, got, want float64) {
			t.Helper()
			if !closeRel(got, want, agreeTol) {
				t.Errorf("%s: %s = %.17g, want %.17g (rel tol %g)", r.name, what, got, want, agreeTol)
			}
		}
		check("kappa", a.Kappa, r.kappa)
		check("kappa SE", a.KappaSE, r.kappaSE)
		check("kappa lo", a.KappaLo, max(r.klo, -1))
		check("kappa hi", a.KappaHi, min(r.khi, 1))
		check("AC1", a.AC1, r.ac1)
		check("AC1 SE", a.AC1SE, r.ac1SE)
		check("PABAK", a.PABAK, r.pabak)
		check("raw agreement", a.Observed, r.po)
		n := 0
		for _, row := range r.table {
			for _, c := range row {
				n += c
			}
		}
		if a.N != n || a.Categories != len(r.table) {
			t.Errorf("%s: N, Categories = %d, %d, want %d, %d", r.name, a.N, a.Categories, n, len(r.table))
		}
		if got := hasKind(a.Warnings, stats.Undefined); got != r.kappaUndefined {
			t.Errorf("%s: undefined warning %v, want %v: %v", r.name, got, r.kappaUndefined, a.Warnings)
		}
		if got := hasKind(a.Warnings, stats.Degenerate); got != r.degenerate {
			t.Errorf("%s: degenerate warning %v, want %v: %v", r.name, got, r.degenerate, a.Warnings)
		}
	}
}

// TestAgreePublished checks the values irrCAC's README publishes for its
// cont3x3abstractors table (github.com/kgwet/irrCAC, README.md, "Computing
// agreement Coefficients from Contingency tables"), to the half unit of
// their last printed digit.
func TestAgreePublished(t *testing.T) {
	a := stats.Agree([][]int{{13, 0, 0}, {0, 20, 7}, {0, 4, 56}}, 0.95)
	for _, c := range []struct {
		what      string
		got, want float64
		tol       float64
	}{
		{"kappa", a.Kappa, 0.7964094, 5e-8},
		{"kappa SE", a.KappaSE, 0.05891072, 5e-9},
		{"AC1", a.AC1, 0.8493305, 5e-8},
		{"AC1 SE", a.AC1SE, 0.04321747, 5e-9},
		{"PABAK (Brennan-Prediger)", a.PABAK, 0.835, 5e-4},
		{"percent agreement", a.Observed, 0.89, 5e-3},
	} {
		t.Run(c.what, func(t *testing.T) {
			if math.Abs(c.got-c.want) > c.tol {
				t.Errorf("%s = %.10g, want %g ± %g", c.what, c.got, c.want, c.tol)
			}
		})
	}
}

// TestAgreeByHand checks a 2×2 table whose coefficients are simple
// fractions: po = 35/50, margins A (25, 25), B (30, 20), so
// pe(kappa) = 0.5·0.6 + 0.5·0.4 = 0.5 and kappa = 0.2/0.5 = 0.4;
// π = (0.55, 0.45), pe(AC1) = 2·0.55·0.45 = 0.495, AC1 = 0.205/0.505;
// PABAK = 2·0.7 − 1 = 0.4.
func TestAgreeByHand(t *testing.T) {
	a := stats.Agree([][]int{{20, 5}, {10, 15}}, 0.95)
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"po", a.Observed, 0.7}, {"kappa", a.Kappa, 0.4}, {"AC1", a.AC1, 0.205 / 0.505}, {"PABAK", a.PABAK, 0.4},
	} {
		t.Run(c.what, func(t *testing.T) {
			if !closeRel(c.got, c.want, 1e-14) {
				t.Errorf("%s = %.17g, want %.17g", c.what, c.got, c.want)
			}
		})
	}
}

// TestAgreeUnusedCategory checks that a category neither coder used
// changes AC1 and PABAK (the scale's size q) but not kappa.
func TestAgreeUnusedCategory(t *testing.T) {
	a2 := stats.Agree([][]int{{20, 5}, {10, 15}}, 0.95)
	a3 := stats.Agree([][]int{{20, 5, 0}, {10, 15, 0}, {0, 0, 0}}, 0.95)
	if !closeRel(a2.Kappa, a3.Kappa, 1e-14) || !closeRel(a2.KappaSE, a3.KappaSE, 1e-12) {
		t.Errorf("kappa changed with an unused category: %v ± %v vs %v ± %v", a2.Kappa, a2.KappaSE, a3.Kappa, a3.KappaSE)
	}
	// q = 3: pe(AC1) = (0.55·0.45 + 0.45·0.55 + 0)/2 = 0.2475.
	if want := (0.7 - 0.2475) / (1 - 0.2475); !closeRel(a3.AC1, want, 1e-14) {
		t.Errorf("AC1 with q = 3 = %.17g, want %.17g", a3.AC1, want)
	}
	if want := (3*0.7 - 1) / 2; !closeRel(a3.PABAK, want, 1e-14) {
		t.Errorf("PABAK with q = 3 = %.17g, want %.17g", a3.PABAK, want)
	}
}

// TestAgreeOneCoderOneCategory: when one coder puts every item in one
// category and the other does not, κ = 0 and the Fleiss–Cohen–Everitt
// variance is 0 exactly (its bracket, computed here in exact rational
// arithmetic, is pe³(1−pe)² + pe²(1−pe)³ − pe²(1−pe)² = 0), so SE(κ) is
// exactly 0 with a Degenerate warning naming the coder. Summed in
// floating point it came out as round-off: SE 4.0e-7 for [[37, 1], [0, 0]]
// and no warning.
func TestAgreeOneCoderOneCategory(t *testing.T) {
	for _, c := range []struct {
		table [][]int
		coder string
	}{
		{[][]int{{37, 1}, {0, 0}}, "coder A"},
		{[][]int{{12, 1}, {0, 0}}, "coder A"},
		{[][]int{{0, 0}, {5, 16}}, "coder A"},
		{[][]int{{3, 0}, {29, 0}}, "coder B"},
		{[][]int{{7, 2, 11}, {0, 0, 0}, {0, 0, 0}}, "coder A"},
		{[][]int{{0, 0, 0}, {4, 9, 1}, {0, 0, 0}}, "coder A"},
		{[][]int{{0, 13, 0}, {0, 0, 0}, {0, 0, 0}}, "each coder"},
	} {
		t.Run(fmt.Sprint(c.table), func(t *testing.T) {
			if num := fceBracket(c.table); num.Sign() != 0 {
				t.Fatalf("%v: exact variance bracket %v, want 0", c.table, num)
			}
			a := stats.Agree(c.table, 0.95)
			if a.Kappa != 0 || a.KappaSE != 0 || a.KappaLo != 0 || a.KappaHi != 0 {
				t.Errorf("%v: kappa %v SE %v [%v, %v], want exactly 0 [0, 0]", c.table, a.Kappa, a.KappaSE, a.KappaLo, a.KappaHi)
			}
			ok := false
			for _, w := range a.Warnings {
				ok = ok || w.Kind == stats.Degenerate && strings.HasPrefix(w.Message, "kappa is 0 with asymptotic variance 0: "+c.coder+" put all")
			}
			if !ok {
				t.Errorf("%v: warnings %v, want a degenerate one naming %s", c.table, a.Warnings, c.coder)
			}
		})
	}
	// The other coefficients are untouched: AC1 on [[37, 1], [0, 0]] is
	// defined with a positive variance.
	if a := stats.Agree([][]int{{37, 1}, {0, 0}}, 0.95); !(a.AC1SE > 0) || a.Observed != 37.0/38 {
		t.Errorf("AC1 SE %v, po %v", a.AC1SE, a.Observed)
	}
}

// fceBracket is the bracket of the Fleiss–Cohen–Everitt variance of
// kappa (Agree's doc comment) in exact rational arithmetic.
func fceBracket(table [][]int) *big.Rat {
	q := len(table)
	n := 0
	for _, r := range table {
		for _, x := range r {
			n += x
		}
	}
	rat := func(k int) *big.Rat { return big.NewRat(int64(k), int64(n)) }
	add := func(xs ...*big.Rat) *big.Rat {
		s := new(big.Rat)
		for _, x := range xs {
			s.Add(s, x)
		}
		return s
	}
	mul := func(xs ...*big.Rat) *big.Rat {
		s := big.NewRat(1, 1)
		for _, x := range xs {
			s.Mul(s, x)
		}
		return s
	}
	neg := func(x *big.Rat) *big.Rat { return new(big.Rat).Neg(x) }
	one := big.NewRat(1, 1)
	row, col := make([]*big.Rat, q), make([]*big.Rat, q)
	po, pe := new(big.Rat), new(big.Rat)
	for i := range q {
		r, c := 0, 0
		for j := range q {
			r += table[i][j]
			c += table[j][i]
		}
		row[i], col[i] = rat(r), rat(c)
		po.Add(po, rat(table[i][i]))
	}
	for i := range q {
		pe.Add(pe, mul(row[i], col[i]))
	}
	s := new(big.Rat)
	for k := range q {
		d := add(one, neg(pe), neg(mul(add(row[k], col[k]), add(one, neg(po)))))
		s.Add(s, mul(rat(table[k][k]), d, d))
	}
	for i := range q {
		for j := range q {
			if i != j {
				m := add(col[i], row[j])
				s.Add(s, mul(add(one, neg(po)), add(one, neg(po)), rat(table[i][j]), m, m))
			}
		}
	}
	c := add(mul(po, pe), mul(big.NewRat(-2, 1), pe), po)
	return s.Sub(s, mul(c, c))
}

func TestAgreeInvalid(t *testing.T) {
	for _, c := range []struct {
		name  string
		table [][]int
		conf  float64
	}{
		{"empty", nil, 0.95},
		{"one category", [][]int{{3}}, 0.95},
		{"ragged", [][]int{{1, 2}, {3}}, 0.95},
		{"negative", [][]int{{1, -2}, {3, 4}}, 0.95},
		{"no items", [][]int{{0, 0}, {0, 0}}, 0.95},
		{"conf", [][]int{{1, 2}, {3, 4}}, 1},
		{"conf NaN", [][]int{{1, 2}, {3, 4}}, math.NaN()},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := stats.Agree(c.table, c.conf)
			for _, x := range []float64{a.Observed, a.Kappa, a.KappaSE, a.KappaLo, a.KappaHi, a.AC1, a.AC1SE, a.AC1Lo, a.AC1Hi, a.PABAK} {
				if !math.IsNaN(x) {
					t.Errorf("%s: got %+v, want every value NaN", c.name, a)
					break
				}
			}
			if !hasKind(a.Warnings, stats.Undefined) || !strings.HasPrefix(a.Warnings[0].Message, "agreement undefined") {
				t.Errorf("%s: warnings %v, want an undefined one", c.name, a.Warnings)
			}
		})
	}
}

func hasKind(ws []stats.Warning, k stats.WarningKind) bool {
	for _, w := range ws {
		if w.Kind == k {
			return true
		}
	}
	return false
}
