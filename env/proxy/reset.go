package proxy

// Reset makes in an injector of f on clock, as NewInjector would, its
// calls and the fault's progress forgotten: an environment that keeps a
// server (and the proxy in front of it) for the next decision arms that
// decision's fault with it. MaxMessageBytes is kept.
func (in *Injector) Reset(f *Fault, clock Clock) {
	if clock == nil {
		clock = WallClock()
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.f, in.clock = f, clock
	in.calls, in.fired, in.started, in.first, in.windowUntil, in.authed, in.advanced = nil, 0, false, 0, 0, false, 0
}
