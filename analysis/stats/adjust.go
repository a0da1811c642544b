package stats

import (
	"cmp"
	"math"
	"slices"
)

// Holm returns Holm's (1979) step-down adjusted p-values of the family p,
// in the order of p: with the m defined p-values sorted p₍₁₎ ≤ … ≤ p₍ₘ₎,
//
//	p̃₍ᵢ₎ = min(1, max_{j ≤ i} (m − j + 1)·p₍ⱼ₎),
//
// which controls the family-wise error rate under any dependence. It
// equals R's p.adjust(p, "holm").
//
// Note: a NaN p-value (an undefined test) is not a member of the family:
// it stays NaN and does not count in m (R's p.adjust with its default
// n = length(p[!is.na(p)])).
func Holm(p []float64) []float64 {
	out, idx := adjustSetup(p)
	m := float64(len(idx))
	run := 0.0
	for i, j := range idx {
		run = max(run, (m-float64(i))*p[j])
		out[j] = min(1, run)
	}
	return out
}

// BH returns the Benjamini–Hochberg (1995) step-up adjusted p-values
// (q-values) of the family p, in the order of p: with the m defined
// p-values sorted p₍₁₎ ≤ … ≤ p₍ₘ₎,
//
//	p̃₍ᵢ₎ = min(1, min_{j ≥ i} m·p₍ⱼ₎ / j),
//
// which controls the false discovery rate for independent or positively
// dependent (PRDS) tests. It equals R's p.adjust(p, "BH"). NaN p-values
// are left out as in Holm.
func BH(p []float64) []float64 {
	out, idx := adjustSetup(p)
	m := float64(len(idx))
	run := math.Inf(1)
	for i := len(idx) - 1; i >= 0; i-- {
		j := idx[i]
		run = min(run, m*p[j]/float64(i+1))
		out[j] = min(1, run)
	}
	return out
}

// adjustSetup returns a NaN-filled output and the indices of the defined
// p-values sorted by p (stable, so ties keep their order).
func adjustSetup(p []float64) ([]float64, []int) {
	out := make([]float64, len(p))
	var idx []int
	for i, x := range p {
		out[i] = math.NaN()
		if !math.IsNaN(x) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(p[a], p[b]) })
	return out, idx
}
