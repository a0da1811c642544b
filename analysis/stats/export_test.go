package stats

import "math"

// The names this package's external tests use that only the package
// itself does otherwise.

var ClusterResamples = clusterResamples
var ClusterSE = clusterSE
var FisherExactLog = fisherExactLog
var PassHatK = passHatK
var PassHatKs = passHatKs

// passHatK returns pass^k = C(c, k) / C(n, k) for one k (passHat); NaN
// when the counts are out of range: n < 1, c < 0, c > n, k < 1 or k > n.
func passHatK(n, c, k int) float64 {
	if n < 1 || c < 0 || c > n || k < 1 || k > n {
		return math.NaN()
	}
	var p float64
	passHat(n, c, k, func(_ int, v float64) { p = v })
	return p
}

// passHatKs returns passHatK(n, c, k) for k = 1..n, at index k − 1 (the
// same values, computed in one pass); nil when the counts are out of
// range (n < 1, c < 0 or c > n).
func passHatKs(n, c int) []float64 {
	if n < 1 || c < 0 || c > n {
		return nil
	}
	out := make([]float64, 0, n)
	passHat(n, c, n, func(_ int, v float64) { out = append(out, v) })
	return out
}
