package lab

import (
	"context"
	"sync"
	"time"

	"github.com/mcpstress/stress/study"
)

// Epoch is the instant a virtual clock starts at: every virtual lab begins
// at the same time, so state dumps and texts are reproducible. It is the
// instant the stored error-shape renderings take a failure to happen at
// (study.ShapeEpoch), so a live lab's first retryNotBefore equals theirs.
var Epoch = study.ShapeEpoch

// Clock is the time the lab runs on: its rate-limit windows, transient
// outages, token expiries, deferred writes and the client deadline of a
// timeout all read it.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Advance lets d pass: a virtual clock jumps ahead at once, the wall
	// clock sleeps. A negative d is treated as 0.
	Advance(d time.Duration)
	// Sleep waits until d has passed on the clock or ctx is done (then it
	// returns ctx.Err()). On a virtual clock it returns only when other
	// goroutines Advance the clock far enough.
	Sleep(ctx context.Context, d time.Duration) error
	// Virtual reports whether the clock moves only by Advance.
	Virtual() bool
}

// VirtualClock is a clock that moves only when Advance is called, so a
// study with minute-long windows runs in microseconds and is exactly
// reproducible. It is safe for concurrent use.
type VirtualClock struct {
	mu       sync.Mutex
	now      time.Time
	tick     chan struct{} // closed and replaced on every Advance
	sleepers int           // Sleep calls waiting
	released bool          // Release was called: Sleep returns at once
}

// NewVirtualClock returns a virtual clock at Epoch.
func NewVirtualClock() *VirtualClock {
	return &VirtualClock{now: Epoch, tick: make(chan struct{})}
}

// Now returns the clock's time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d ahead and wakes every Sleep.
func (c *VirtualClock) Advance(d time.Duration) {
	if d < 0 {
		d = 0
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	close(c.tick)
	c.tick = make(chan struct{})
	c.mu.Unlock()
}

// Sleep waits until the clock has advanced d past the time of the call.
func (c *VirtualClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	until := c.now.Add(d)
	c.sleepers++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.sleepers--
		c.mu.Unlock()
	}()
	for {
		c.mu.Lock()
		if c.released && c.now.Before(until) {
			c.now = until
		}
		if !c.now.Before(until) {
			c.mu.Unlock()
			return nil
		}
		tick := c.tick
		c.mu.Unlock()
		select {
		case <-tick:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release lets the clock run by itself from now on: every Sleep, waiting
// or to come, returns at once, moving the clock to its end (never back).
// It is for a lab whose client has left, so that the answers it holds are
// sent instead of held forever.
func (c *VirtualClock) Release() {
	c.mu.Lock()
	c.released = true
	close(c.tick)
	c.tick = make(chan struct{})
	c.mu.Unlock()
}

// Virtual reports true.
func (c *VirtualClock) Virtual() bool { return true }

// Sleepers returns how many Sleep calls are waiting, so a harness can
// tell that a held answer is waiting for the clock.
func (c *VirtualClock) Sleepers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sleepers
}

// WallClock is the real time, for `stress lab serve -realtime` and clients
// that cannot drive a virtual clock.
type WallClock struct{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }

// Advance sleeps d.
func (WallClock) Advance(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}

// Sleep waits d or until ctx is done.
func (WallClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Virtual reports false.
func (WallClock) Virtual() bool { return false }
