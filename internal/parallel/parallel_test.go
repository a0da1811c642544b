package parallel

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// TestFor: every index is called exactly once, for any n (none for 0).
func TestFor(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 1000} {
		t.Run(fmt.Sprint(n, " iterations"), func(t *testing.T) {
			calls := make([]atomic.Int32, n)
			For(n, func(i int) { calls[i].Add(1) })
			for i := range calls {
				if c := calls[i].Load(); c != 1 {
					t.Errorf("n=%d: index %d called %d times", n, i, c)
				}
			}
		})
	}
}
