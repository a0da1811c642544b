package conditions

import "testing"

// TestRecent: the cache keeps at most maxRendered entries, among them
// the last half of maxRendered keys put, and a key found in the older
// generation stays as the generations turn over.
func TestRecent(t *testing.T) {
	var r recent[int, int]
	if _, ok := r.get(0); ok {
		t.Fatal("an empty cache has a value")
	}
	hot := -1
	r.put(hot, 42)
	for k := range 10 * maxRendered {
		r.put(k, k*2)
		if k%(maxRendered/4) == 0 {
			if v, ok := r.get(hot); !ok || v != 42 {
				t.Fatalf("after %d puts the key used every %d puts is gone", k+1, maxRendered/4)
			}
		}
		if n := len(r.cur) + len(r.old); n > maxRendered {
			t.Fatalf("%d entries, more than %d", n, maxRendered)
		}
	}
	last := 10*maxRendered - 1
	for k := last - maxRendered/2 + 1; k <= last; k++ {
		if v, ok := r.get(k); !ok || v != k*2 {
			t.Fatalf("key %d, among the last %d put: %d, %v", k, maxRendered/2, v, ok)
		}
	}
	if _, ok := r.get(0); ok {
		t.Error("the first key put is still there")
	}
}
