package analysis

import (
	"fmt"
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
		t.Run(fmt.Sprint(tc.kmax), func(t *testing.T) {
			if got := passKShown(tc.kmax); !slices.Equal(got, tc.want) {
				t.Errorf("passKShown(%d) = %v, want %v", tc.kmax, got, tc.want)
			}
		})
	}
}

// TestPassKBootKs: every k up to 50 gets an interval, beyond only the
// shown ones.
func TestPassKBootKs(t *testing.T) {
	if got := passKBootKs(5); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Errorf("passKBootKs(5) = %v", got)
	}
	got := passKBootKs(500)
	if len(got) != 53 || got[49] != 50 || !slices.Equal(got[50:], []int{100, 200, 500}) {
		t.Errorf("passKBootKs(500) = %v", got)
	}
	if got := passKBootKs(0); len(got) != 0 {
		t.Errorf("passKBootKs(0) = %v", got)
	}
}
