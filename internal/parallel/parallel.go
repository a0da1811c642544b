// Package parallel runs the iterations of a loop on every processor.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls fn(0), …, fn(n−1), each once, on as many goroutines as there
// are processors (GOMAXPROCS), and returns when all have returned. The
// calls must be independent; fn(i) writing its own result slot is the
// usual way to keep the order.
func For(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		})
	}
	wg.Wait()
}
