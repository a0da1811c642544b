package lab

import (
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/scenario"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// A fault class is a study.Cause: its vocabulary row (study.CauseInfo:
// code, error category, retryability, the surfaces it can be served on,
// its JSON-RPC code, its words and the coding rules' evidence) is the
// study's; what the lab does to induce it is its behaviour here
// (behaviours). A new class is its row, its behaviour and its scenarios.

// Classes lists the fault classes the lab can arm, in study.Causes
// order.
var Classes = func() []study.Cause {
	var out []study.Cause
	for _, c := range study.Causes {
		if _, ok := behaviours[c]; ok {
			out = append(out, c)
		}
	}
	return out
}()

// isClass reports whether c is a fault class the lab can arm.
func isClass(c study.Cause) bool { _, ok := behaviours[c]; return ok }

// behaviour is how the lab induces one fault class.
type behaviour struct {
	takes, needs []string // the fault parameters the class takes, and those it requires
	// write, batch and keyed say what the armed tool must be: a tool that
	// writes, a batch tool, a tool that takes an idempotency_key.
	write, batch, keyed bool
	// checkFault checks the class's own rules of its parameters (after
	// takes and needs), returning the field and the problem.
	checkFault func(f *Fault) (string, string)
	// checkTool checks the scenario against the class's needs beyond
	// write, batch and keyed.
	checkTool func(sc *Scenario, t *tool, served map[string]*tool) (string, string)
	// held says the answer of the protocol_error surface never arrives:
	// the client's deadline passes (so nothing can carry the contract).
	held bool
	// absentTool says the first call names a tool the server lacks.
	absentTool bool
	// arm sets the fault up before the first call.
	arm func(l *Lab) *failure
	// before acts on a call of the armed tool before it runs; done says
	// r is the answer.
	before func(l *Lab, t *tool, a args) (r Response, done bool)
	// commit, when set, makes a call of the armed tool apply its write
	// (the first fault.at items of a batch, with partial) and then fail
	// with the response it returns, for the first k calls.
	commit  func(l *Lab, t *tool, a args, res any) Response
	partial bool
}

// behaviours are the fault classes the lab induces, by cause.
var behaviours = map[study.Cause]behaviour{
	study.Transient: {takes: []string{"k", "for_ms"}, checkFault: func(f *Fault) (string, string) {
		if (f.K == nil) == (f.ForMS == nil) {
			return "k", "transient needs exactly one of k and for_ms"
		}
		return "", ""
	}, before: (*Lab).transient},
	study.RateLimit: {takes: []string{"window_ms", "penalty", "budget"}, needs: []string{"window_ms", "penalty"}, checkFault: func(f *Fault) (string, string) {
		switch f.Penalty {
		case "extend":
			if f.Budget != nil {
				return "budget", "penalty extend takes no budget"
			}
		case "budget":
			if f.Budget == nil {
				return "budget", "penalty budget needs budget"
			}
			if *f.Budget < 0 {
				return "budget", fmt.Sprintf("impossible schedule: budget is %d", *f.Budget)
			}
		default:
			return "penalty", fmt.Sprintf("penalty is %q, want extend or budget", f.Penalty)
		}
		return "", ""
	}, arm: func(l *Lab) *failure {
		l.st.Limits[l.sc.Tool] = &Limit{Tool: l.sc.Tool, WindowUntilMS: *l.sc.Fault.WindowMS}
		return nil
	}, before: (*Lab).rateLimit},
	study.TimeoutCommitted: {takes: []string{"deadline_ms", "k"}, needs: []string{"deadline_ms"}, write: true, held: true, commit: (*Lab).timeoutCommitted},
	study.PartialCommit: {takes: []string{"at", "k"}, needs: []string{"at"}, write: true, batch: true, checkFault: func(f *Fault) (string, string) {
		if *f.At < 1 {
			return "at", fmt.Sprintf("impossible schedule: at is %d, a partial commit applies 1 or more items", *f.At)
		}
		return "", ""
	}, checkTool: func(sc *Scenario, t *tool, _ map[string]*tool) (string, string) {
		a, _ := decodeArgs(sc.Args, t.params)
		if n := len(a.list(t.batch)); *sc.Fault.At >= n {
			return "fault.at", fmt.Sprintf("impossible schedule: at is %d but the first call's %s holds %d items", *sc.Fault.At, t.batch, n)
		}
		return "", ""
	}, commit: (*Lab).partialCommit, partial: true},
	study.Idempotency: {takes: []string{"k"}, write: true, keyed: true, commit: (*Lab).lostConfirmation},
	study.StaleRevision: {takes: []string{"concurrent"}, needs: []string{"concurrent"}, checkTool: func(sc *Scenario, _ *tool, served map[string]*tool) (string, string) {
		c := sc.Fault.Concurrent
		ct, ok := served[c.Tool]
		if !ok || ct.readOnly || c.Same || c.Set != nil || c.Drop != nil || !statediff.IsObject(c.Args) {
			return "fault.concurrent", fmt.Sprintf("the concurrent writer needs a write tool of %s and its arguments (an object)", sc.Server)
		}
		return "", ""
	}, arm: (*Lab).concurrentWrite},
	study.AuthRequired: {before: (*Lab).authorize},
	study.SilentNoop: {takes: []string{"k", "deferred_ms"}, write: true, checkFault: func(f *Fault) (string, string) {
		if f.K != nil && f.DeferredMS != nil {
			return "k", "silent_noop takes k or deferred_ms, not both"
		}
		return "", ""
	}, before: (*Lab).silentNoop},
	study.UpstreamOutage: {before: (*Lab).outage},
	study.Locked:         {takes: []string{"window_ms"}, needs: []string{"window_ms"}, write: true, before: (*Lab).locked},
	// The paper's deterministic classes: the first call itself is wrong
	// (a tool the server lacks, an argument of the wrong type or value);
	// the lab adds nothing.
	study.UnknownTool:  {absentTool: true},
	study.InvalidType:  {},
	study.InvalidValue: {},
}

// Fault holds a scenario's fault parameters; which ones a class takes is
// its behaviour's (takes and needs), checked at load time.
type Fault struct {
	K          *int      `json:"k,omitempty"`           // transient: failures before success; timeout_committed, idempotency, partial_commit: calls that fail after committing (default 1); silent_noop: calls with no effect (default 1)
	ForMS      *int64    `json:"for_ms,omitempty"`      // transient: fails until this much lab time has passed since the first call
	WindowMS   *int64    `json:"window_ms,omitempty"`   // rate_limit: the window open when the scenario starts, and each extension; locked: how long the lock lasts from the start
	Penalty    string    `json:"penalty,omitempty"`     // rate_limit: extend (a call inside the window restarts it) or budget (calls inside windows count; over budget, the tool is locked)
	Budget     *int      `json:"budget,omitempty"`      // rate_limit with penalty budget: calls inside windows allowed before the lock
	DeadlineMS *int64    `json:"deadline_ms,omitempty"` // timeout_committed: the client's deadline (protocol_error) or the upstream's (tool_error)
	At         *int      `json:"at,omitempty"`          // partial_commit: items applied before the failing one (1 or more, fewer than the batch)
	DeferredMS *int64    `json:"deferred_ms,omitempty"` // silent_noop: the dropped write lands after all, this long after the call
	Concurrent *CallSpec `json:"concurrent,omitempty"`  // stale_revision: the write another client makes before the first call
}

// given returns the names of the parameters f sets.
func (f *Fault) given() []string {
	var out []string
	add := func(set bool, name string) {
		if set {
			out = append(out, name)
		}
	}
	add(f.K != nil, "k")
	add(f.ForMS != nil, "for_ms")
	add(f.WindowMS != nil, "window_ms")
	add(f.Penalty != "", "penalty")
	add(f.Budget != nil, "budget")
	add(f.DeadlineMS != nil, "deadline_ms")
	add(f.At != nil, "at")
	add(f.DeferredMS != nil, "deferred_ms")
	add(f.Concurrent != nil, "concurrent")
	return out
}

// check checks f's parameters for class c and returns the first problem
// as (field, message), field relative to "fault".
func (f *Fault) check(c study.Cause) (string, string) {
	b := behaviours[c]
	for _, name := range f.given() {
		if !slices.Contains(b.takes, name) {
			return name, fmt.Sprintf("%s takes no parameter %s", c, name)
		}
	}
	for _, name := range b.needs {
		if !slices.Contains(f.given(), name) {
			return name, fmt.Sprintf("%s needs %s", c, name)
		}
	}
	if f.K != nil && *f.K < 1 {
		return "k", fmt.Sprintf("impossible schedule: k is %d, a fault acts on 1 or more calls", *f.K)
	}
	for _, d := range []struct {
		name string
		v    *int64
	}{{"for_ms", f.ForMS}, {"window_ms", f.WindowMS}, {"deadline_ms", f.DeadlineMS}, {"deferred_ms", f.DeferredMS}} {
		if d.v != nil && (*d.v <= 0 || *d.v > MaxDurationMS) {
			return d.name, fmt.Sprintf("impossible schedule: %s is %d, want 1 to %d", d.name, *d.v, MaxDurationMS)
		}
	}
	if b.checkFault != nil {
		return b.checkFault(f)
	}
	return "", ""
}

// MaxDurationMS is the longest fault duration a scenario may give, in
// lab-clock milliseconds (one day).
const MaxDurationMS = 24 * 60 * 60 * 1000

// k returns the k parameter, or 1.
func (f *Fault) k() int {
	if f.K == nil {
		return 1
	}
	return *f.K
}

func durMS(p *int64) time.Duration {
	if p == nil {
		return 0
	}
	return time.Duration(*p) * time.Millisecond
}

// The behaviours of the classes. The lab's lock is held.

// transient fails the armed tool k times, or until for_ms of lab time
// has passed since its first call, changing nothing; an outage of known
// length says how long it lasts, so a delayed replay relies on nothing
// the failure does not show.
func (l *Lab) transient(t *tool, a args) (Response, bool) {
	sc, up := l.sc, upstream(t)
	if sc.Fault.K != nil {
		if l.fired >= *sc.Fault.K {
			return Response{}, false
		}
		l.fired++
		return l.fail(&failure{class: study.Transient, retryable: true,
			text: fmt.Sprintf("%s is temporarily unavailable (503); nothing was changed", up)}), true
	}
	if !l.started {
		l.t0, l.started = l.clock.Now(), true
	}
	until := l.t0.Add(durMS(sc.Fault.ForMS))
	if !l.clock.Now().Before(until) {
		return Response{}, false
	}
	l.fired++
	wait := until.Sub(l.clock.Now())
	return l.fail(&failure{class: study.Transient, retryable: true, retryAfter: wait,
		text: fmt.Sprintf("%s is temporarily unavailable (503); nothing was changed; retry after %s", up, seconds(wait))}), true
}

// rateLimit refuses the armed tool while its window is open, with a
// retry-after; each later call inside a window is a violation, which
// restarts the window (penalty extend) or spends the budget, over which
// the tool is locked for the session (penalty budget).
func (l *Lab) rateLimit(t *tool, a args) (Response, bool) {
	sc := l.sc
	lim := l.st.Limits[t.name]
	now := l.nowMS()
	if !lim.Locked && now >= lim.WindowUntilMS {
		return Response{}, false
	}
	if !lim.Locked && l.fired > 0 {
		lim.Violations++
		if sc.Fault.Penalty == "extend" {
			lim.WindowUntilMS = now + *sc.Fault.WindowMS
		} else if lim.Violations > int64(*sc.Fault.Budget) {
			lim.Locked = true
		}
	}
	l.fired++
	if lim.Locked {
		return l.fail(&failure{class: study.RateLimit,
			text: fmt.Sprintf("rate limit budget exhausted for %s: calls made inside the announced window locked it for the rest of this session", t.name)}), true
	}
	wait := time.Duration(lim.WindowUntilMS-now) * time.Millisecond
	text := fmt.Sprintf("rate limit exceeded for %s: retry after %s", t.name, seconds(wait))
	if sc.Limit == scenario.LimitServer {
		text = fmt.Sprintf("this server's rate limit for %s was exceeded: retry after %s", t.name, seconds(wait))
	}
	return l.fail(&failure{class: study.RateLimit, retryable: true, retryAfter: wait, text: text}), true
}

// outage fails the armed tool for the rest of the session.
func (l *Lab) outage(t *tool, a args) (Response, bool) {
	l.fired++
	return l.fail(&failure{class: study.UpstreamOutage,
		text: fmt.Sprintf("%s is down for maintenance and will not be back in this session; nothing was changed", upstream(t))}), true
}

// locked refuses the armed tool's writes, changing nothing, while
// another client's lock on the record lasts (window_ms of lab time from
// the start), saying how long is left.
func (l *Lab) locked(t *tool, a args) (Response, bool) {
	wait := durMS(l.sc.Fault.WindowMS) - l.clock.Now().Sub(l.start)
	if wait <= 0 {
		return Response{}, false
	}
	l.fired++
	return l.fail(&failure{class: study.Locked, retryable: true, retryAfter: wait,
		text: fmt.Sprintf("%s was refused: the record is locked by another client's change; nothing was changed; retry after %s", t.name, seconds(wait))}), true
}

// silentNoop answers the armed tool's first k calls success-shaped with
// no effect; with deferred_ms, the write lands that much later after all.
func (l *Lab) silentNoop(t *tool, a args) (Response, bool) {
	if l.fired >= l.sc.Fault.k() {
		return Response{}, false
	}
	l.fired++
	if l.sc.Fault.DeferredMS != nil {
		l.pending = append(l.pending, pending{due: l.clock.Now().Add(durMS(l.sc.Fault.DeferredMS)), tool: t, args: a})
	}
	// Note: success-shaped on purpose, with no structuredContent (a
	// validating client would reject it, as it would any success-shaped
	// failure).
	return Response{Result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Accepted; 0 records were written."}}},
		Failed: true, Class: study.SilentNoop}, true
}

// authorize requires a valid token for the armed tool's scope.
func (l *Lab) authorize(t *tool, a args) (Response, bool) {
	tok := a.str("auth_token")
	fail := func(format string, x ...any) (Response, bool) {
		return l.fail(&failure{class: study.AuthRequired, text: fmt.Sprintf(format, x...) + fmt.Sprintf("; %s needs a valid token for scope %s", t.name, t.scope)}), true
	}
	if tok == "" {
		return fail("authentication required")
	}
	k, ok := l.st.Tokens[tok]
	switch {
	case !ok:
		return fail("the auth_token is not a token this server issued")
	case k.ExpiresAtMS <= l.nowMS():
		return fail("the auth_token has expired")
	case k.Scope != t.scope:
		return fail("the auth_token grants scope %s", k.Scope)
	}
	return Response{}, false
}

// concurrentWrite makes another client's write before the first call.
func (l *Lab) concurrentWrite() *failure {
	c := l.sc.Fault.Concurrent
	t := l.tools[c.Tool]
	a, f := decodeArgs(c.Args, t.params)
	if f != nil {
		return f
	}
	n := len(l.st.Effects)
	if _, f := t.run(l, a, -1); f != nil {
		return f
	}
	for _, e := range l.st.Effects[n:] {
		e.Actor = "other"
	}
	return nil
}

// timeoutCommitted answers a committed write only after the client's
// deadline (protocol_error), or reports that its upstream timed out after
// the request was sent (tool_error).
func (l *Lab) timeoutCommitted(t *tool, a args, res any) Response {
	d := durMS(l.sc.Fault.DeadlineMS)
	if l.surface == study.ProtocolError {
		r := l.ok(res)
		r.Timeout, r.Failed, r.Class = d, true, study.TimeoutCommitted
		return r
	}
	return l.fail(&failure{class: study.TimeoutCommitted, text: fmt.Sprintf("%s did not confirm within %s; the request was sent and may have been applied", upstream(t), seconds(d))})
}

// lostConfirmation fails a committed write as a reset connection; a
// request that carried a key may be replayed safely.
func (l *Lab) lostConfirmation(t *tool, a args, res any) Response {
	return l.fail(&failure{class: study.Idempotency, retryable: a.str("idempotency_key") != "",
		text: fmt.Sprintf("the connection to %s was reset after the request was sent; it may have been applied", upstream(t))})
}

// partialCommit fails a batch after its first fault.at items, naming
// the applied prefix.
func (l *Lab) partialCommit(t *tool, a args, res any) Response {
	n := len(a.list(t.batch))
	at := *l.sc.Fault.At
	applied := fmt.Sprintf("items 1 to %d were applied", at)
	if at == 1 {
		applied = "item 1 was applied"
	}
	return l.fail(&failure{class: study.PartialCommit,
		text: fmt.Sprintf("%s failed at item %d of %d: %s is unavailable; %s, the rest were not", t.name, at+1, n, upstream(t), applied)})
}
