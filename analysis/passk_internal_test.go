package analysis

import (
	"slices"
	"testing"
)

// TestPassKShown: every k up to 10; beyond, a selection ending at the
// largest.
func TestPassKShown(t *testing.T) {
	for _, tc := range []struct {
		kmax int
		want []int
	}{
		{0, nil},
		{1, []int{1}},
		{5, []int{1, 2, 3, 4, 5}},
		{10, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{11, []int{1, 2, 3, 5, 10, 11}},
		{250, []int{1, 2, 3, 5, 10, 20, 50, 100, 200, 250}},
		{500, []int{1, 2, 3, 5, 10, 20, 50, 100, 200, 500}},
	} {
		if got := passKShown(tc.kmax); !slices.Equal(got, tc.want) {
			t.Errorf("passKShown(%d) = %v, want %v", tc.kmax, got, tc.want)
		}
	}
}
