package lab

import (
	"fmt"
	"time"

	"github.com/mcpstress/stress/study"
)

// Class is a fault class: the kind of failure a scenario arms.
type Class string

// The fault classes (STUDY.md section 7): the failures where recovery
// policy matters, then the paper's three deterministic classes.
const (
	Transient        Class = "transient"         // fails k times (or for a while), then succeeds
	RateLimit        Class = "rate_limit"        // refused with a retry-after while a window is open
	TimeoutCommitted Class = "timeout_committed" // the write is applied, but no answer arrives before the client's deadline
	PartialCommit    Class = "partial_commit"    // a batch applies a prefix, then fails
	Idempotency      Class = "idempotency"       // the write is applied, then the call fails; a replay is safe only with the same idempotency key
	StaleRevision    Class = "stale_revision"    // optimistic concurrency: the write must be redone after a fresh read
	Permission       Class = "permission"        // the tool needs a token the session can obtain from authenticate
	SilentNoop       Class = "silent_noop"       // a success-shaped result with no effect
	UpstreamOutage   Class = "upstream_outage"   // fails for the rest of the session
	UnknownTool      Class = "unknown_tool"      // the call names a tool the server lacks
	InvalidType      Class = "invalid_type"      // an argument has the wrong JSON type
	InvalidValue     Class = "invalid_value"     // an argument's value is outside its domain
)

// Classes lists every fault class in canonical order.
var Classes = []Class{Transient, RateLimit, TimeoutCommitted, PartialCommit, Idempotency, StaleRevision,
	Permission, SilentNoop, UpstreamOutage, UnknownTool, InvalidType, InvalidValue}

// classBusiness is the class of a business-rule failure of the domain
// (out of stock, a cancelled order): no scenario arms it, but a call can
// meet it.
const classBusiness Class = "business"

// Cause returns the study cause of fault class c: the cause of the same
// name, authentication for permission ("" for no fault class).
func (c Class) Cause() study.Cause {
	if c == Permission {
		return study.AuthRequired
	}
	if !c.Valid() {
		return ""
	}
	return study.Cause(c)
}

// Valid reports whether c is one of Classes.
func (c Class) Valid() bool {
	for _, x := range Classes {
		if x == c {
			return true
		}
	}
	return false
}

// Surfaces are the surfaces a class can be served on, and whether the
// error-category contract can ride with it. A timeout's protocol_error is
// the client's deadline (no answer arrives, so nothing can carry the
// contract); a success-shaped result never carries it (seed 002 puts the
// contract in an isError result); an unknown tool has no category
// (study.CategoryOf).
var classSurfaces = map[Class][]study.Surface{
	Transient:        {study.ProtocolError, study.ToolError, study.SuccessShaped},
	RateLimit:        {study.ProtocolError, study.ToolError, study.SuccessShaped},
	TimeoutCommitted: {study.ProtocolError, study.ToolError},
	PartialCommit:    {study.ProtocolError, study.ToolError, study.SuccessShaped},
	Idempotency:      {study.ProtocolError, study.ToolError},
	StaleRevision:    {study.ProtocolError, study.ToolError, study.SuccessShaped},
	Permission:       {study.ProtocolError, study.ToolError, study.SuccessShaped},
	SilentNoop:       {study.SuccessShaped},
	UpstreamOutage:   {study.ProtocolError, study.ToolError, study.SuccessShaped},
	UnknownTool:      {study.ProtocolError, study.ToolError},
	InvalidType:      {study.ProtocolError, study.ToolError, study.SuccessShaped},
	InvalidValue:     {study.ProtocolError, study.ToolError, study.SuccessShaped},
}

// Fault holds a scenario's fault parameters; which ones a class takes is
// checked at load time (faultParams).
type Fault struct {
	K          *int      `json:"k,omitempty"`           // transient: failures before success; timeout_committed, idempotency, partial_commit: calls that fail after committing (default 1); silent_noop: calls with no effect (default 1)
	ForMS      *int64    `json:"for_ms,omitempty"`      // transient: fails until this much lab time has passed since the first call
	WindowMS   *int64    `json:"window_ms,omitempty"`   // rate_limit: the window open when the scenario starts, and each extension
	Penalty    string    `json:"penalty,omitempty"`     // rate_limit: extend (a call inside the window restarts it) or budget (calls inside windows count; over budget, the tool is locked)
	Budget     *int      `json:"budget,omitempty"`      // rate_limit with penalty budget: calls inside windows allowed before the lock
	DeadlineMS *int64    `json:"deadline_ms,omitempty"` // timeout_committed: the client's deadline (protocol_error) or the upstream's (tool_error)
	At         *int      `json:"at,omitempty"`          // partial_commit: items applied before the failing one (1 or more, fewer than the batch)
	DeferredMS *int64    `json:"deferred_ms,omitempty"` // silent_noop: the dropped write lands after all, this long after the call
	Concurrent *CallSpec `json:"concurrent,omitempty"`  // stale_revision: the write another client makes before the first call
}

// faultParams lists, per class, the parameters it takes and those it
// requires.
var faultParams = map[Class]struct{ takes, needs []string }{
	Transient:        {[]string{"k", "for_ms"}, nil},
	RateLimit:        {[]string{"window_ms", "penalty", "budget"}, []string{"window_ms", "penalty"}},
	TimeoutCommitted: {[]string{"deadline_ms", "k"}, []string{"deadline_ms"}},
	PartialCommit:    {[]string{"at", "k"}, []string{"at"}},
	Idempotency:      {[]string{"k"}, nil},
	StaleRevision:    {[]string{"concurrent"}, []string{"concurrent"}},
	Permission:       {nil, nil},
	SilentNoop:       {[]string{"k", "deferred_ms"}, nil},
	UpstreamOutage:   {nil, nil},
	UnknownTool:      {nil, nil},
	InvalidType:      {nil, nil},
	InvalidValue:     {nil, nil},
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
func (f *Fault) check(c Class) (string, string) {
	spec := faultParams[c]
	for _, name := range f.given() {
		if !contains(spec.takes, name) {
			return name, fmt.Sprintf("%s takes no parameter %s", c, name)
		}
	}
	for _, name := range spec.needs {
		if !contains(f.given(), name) {
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
	switch c {
	case Transient:
		if (f.K == nil) == (f.ForMS == nil) {
			return "k", "transient needs exactly one of k and for_ms"
		}
	case SilentNoop:
		if f.K != nil && f.DeferredMS != nil {
			return "k", "silent_noop takes k or deferred_ms, not both"
		}
	case RateLimit:
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
	case PartialCommit:
		if *f.At < 1 {
			return "at", fmt.Sprintf("impossible schedule: at is %d, a partial commit applies 1 or more items", *f.At)
		}
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
