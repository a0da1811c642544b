package analysis

import (
	"fmt"
	"math"
	"testing"
)

// TestCorrRatesNoVariance: an arm whose rate is the same in every
// scenario has no variance, so the correlation is NaN (PilotContrasts
// then says "undefined"), even where the rate (1/10, 1/3) is not exact in
// binary and a mean of the rates rounds away from it.
func TestCorrRatesNoVariance(t *testing.T) {
	for _, tc := range []struct{ k, n float64 }{{1, 10}, {1, 3}, {2, 7}, {0, 5}, {5, 5}} {
		t.Run(fmt.Sprint(tc.k), func(t *testing.T) {
			for m := 2; m <= 40; m++ {
				a, b, n := make([]float64, m), make([]float64, m), make([]float64, m)
				for i := range m {
					a[i], b[i], n[i] = tc.k*float64(1+i%3), float64(i%4), tc.n*float64(1+i%3)
				}
				if r := corrRates(a, b, n); !math.IsNaN(r) {
					t.Fatalf("rate %v/%v in all %d scenarios: corrRates = %v, want NaN", tc.k, tc.n, m, r)
				}
				if r := corrRates(b, a, n); !math.IsNaN(r) {
					t.Fatalf("rate %v/%v in all %d scenarios (second arm): corrRates = %v, want NaN", tc.k, tc.n, m, r)
				}
			}
		})
	}
	// Rates that vary: the Pearson correlation of the rates.
	a, b, n := []float64{1, 2, 3, 4}, []float64{2, 4, 6, 9}, []float64{10, 10, 10, 10}
	if r := corrRates(a, b, n); math.Abs(r-0.994376712684369) > 1e-12 {
		t.Errorf("corrRates = %.16g, want 0.994376712684369", r)
	}
	if r := corrRates([]float64{1, 2}, []float64{2, 1}, []float64{4, 4}); math.Abs(r+1) > 1e-12 {
		t.Errorf("two scenarios, opposite: corrRates = %v, want -1", r)
	}
	if r := corrRates([]float64{1}, []float64{1}, []float64{2}); !math.IsNaN(r) {
		t.Errorf("one scenario: corrRates = %v, want NaN", r)
	}
}
