package failclosed

import (
	"encoding/json"
	"time"

	"github.com/mcpstress/stress/study"
)

// The reasons of the error-shape adapters (DecideToolFailure,
// DecideRateLimited), in the order of their checks; their shared checks
// come from the lists above.
const (
	// MissingToolFailure: an isError result carries no _meta object, or
	// no classification under study.ToolFailureKey (a SEP-2145 result
	// alone: its text is for the model, nothing is machine-readable).
	MissingToolFailure Reason = "missing_tool_failure"
	// InvalidToolFailure: _meta or the classification is not an object.
	InvalidToolFailure Reason = "invalid_tool_failure"
	// UnknownClass: class is absent, not a string, or not capability,
	// reliability or governance.
	UnknownClass Reason = "unknown_class"
	// MissingFailureCode: code is absent, not a string, or empty.
	MissingFailureCode Reason = "missing_failure_code"
	// MissingCorrelationID: correlationId is absent, not a string, or
	// empty (the proposal requires it).
	MissingCorrelationID Reason = "missing_correlation_id"
	// InvalidAgentGuidance: agentGuidance is given but is not a string.
	InvalidAgentGuidance Reason = "invalid_agent_guidance"
	// InvalidRetryNotBefore: retryNotBefore is not a non-negative whole
	// number of epoch milliseconds (1767225630000, 1.76722563e12), or is
	// given without retryable true.
	InvalidRetryNotBefore Reason = "invalid_retry_not_before"
	// IdempotencyUnknown: a reliability failure is declared retryable, but
	// the tool is not known to be idempotent; the proposal forbids an
	// automatic retry of a non-idempotent tool (idempotentHint defaults to
	// false), and a committed write would run twice.
	IdempotencyUnknown Reason = "idempotency_unknown"
	// CapabilityFailure: the class is capability and the code is not one
	// of the proposal's that names a repair (invalid_input): the call
	// cannot succeed as requested, and the classification does not say
	// what to change.
	CapabilityFailure Reason = "capability_failure"
	// GovernanceRefusal: the class is governance and the code is not
	// auth_required: a policy refused the call; a person must act.
	GovernanceRefusal Reason = "governance_refusal"
	// NotRateLimited: a JSON-RPC error whose code is absent, not a whole
	// number, or not study.RateLimitedCode.
	NotRateLimited Reason = "not_rate_limited"
	// InvalidErrorObject: the error's message is absent or not a string,
	// or its data is absent or not an object.
	InvalidErrorObject Reason = "invalid_error_object"
	// InvalidQuota: limit or remaining is not a non-negative whole number.
	InvalidQuota Reason = "invalid_quota"
	// InvalidApplied: the counter-proposal's applied member is given but is
	// not one of none, partial and unknown.
	InvalidApplied Reason = "invalid_applied"
	// MayBeApplied: a reliability failure is declared retryable, but the
	// classification says the call was applied in part or may have been
	// (applied partial or unknown), and the tool is not known to be
	// idempotent: a replay could apply it twice.
	MayBeApplied Reason = "may_be_applied"
)

var (
	// Note: applied is this project's counter-proposal, not PR #3313's;
	// the client knows it, so it is no unknown member (DecideToolFailure).
	toolFailureMembers = set("class", "code", "retryable", "retryNotBefore", "correlationId", "agentGuidance", "applied")
	rpcErrorMembers    = set("code", "message", "data")
	rateLimitMembers   = set("retryAfterMs", "limit", "remaining")
)

// Call is what a client knows of the call that failed, besides the
// result: whether the tool declares idempotentHint true (a repeat with the
// same arguments has no further effect), the current time on the client's
// clock, against which retryNotBefore is read, and the protocol version
// the session negotiated, which decides whether a result may omit
// resultType.
type Call struct {
	Idempotent bool
	Now        time.Time
	// Protocol is the negotiated MCP version ("2025-11-25"); "" when the
	// client does not know it, read as the latest revision (2026-07-28).
	Protocol string
}

// resultTypeRevision is the first MCP revision whose results carry
// resultType: schema/2026-07-28/schema.ts (modelcontextprotocol/
// modelcontextprotocol at b0f60ba5409db7a6582440a7b473cc0398890f15),
// Result.resultType: "Servers implementing this protocol version MUST
// include this field. For backward compatibility, when a client receives a
// result from a server implementing an earlier protocol version (which
// does not include resultType), the client MUST treat the absent field as
// "complete"."
const resultTypeRevision = "2026-07-28"

// legacyResult reports whether the session's version predates
// resultTypeRevision, so that an absent resultType reads as "complete".
// Note: an unknown version ("") is read as the latest: the revision lets
// only a server of an earlier version omit the field, and a client that
// cannot tell stops (fail closed).
func (c Call) legacyResult() bool { return c.Protocol != "" && c.Protocol < resultTypeRevision }

// DecideToolFailure checks raw, the bytes of one completed tool result
// carrying the ToolFailure classification (modelcontextprotocol PR #3313)
// in _meta[study.ToolFailureKey], and returns the policy the client
// follows, or stop_or_escalate with a Reason. An isError result without
// it (SEP-2145's shape alone) stops with MissingToolFailure.
//
// The checks, in order: the completed-result shape Decide and
// DecideCategory share (resultType "complete"; absent only on a session
// of a version before 2026-07-28 (Call.Protocol), which the
// revision says to read as "complete"; absent on a 2026-07-28 result, or
// with the version unknown, stops with WrongResultType); _meta and the
// classification are objects with no member the proposal does not define; class is one of the three; code
// and correlationId are non-empty strings; agentGuidance, when given, is a
// string (never read: free text cannot smuggle an action past the
// checks); retryable, when given, is a boolean, true only for the
// reliability class (the proposal: absent or false otherwise);
// retryNotBefore, when given, is a non-negative whole number (integral
// JSON numbers, such as 1.76722563e12, are whole numbers; see integral)
// and comes with retryable true.
//
// Selection, the same in both modes (the classification declares no
// policy): capability with code invalid_input → revise_arguments;
// governance with code auth_required → authenticate; reliability,
// retryable and an idempotent tool → retry_later, waiting until
// retryNotBefore (Delay 0 without it: the caller's own backoff applies);
// every other case stops: capability (CapabilityFailure), governance
// (GovernanceRefusal), reliability not declared retryable (NotRetryable),
// retryable on a tool not known to be idempotent (IdempotencyUnknown).
//
// The counter-proposal's applied member (study.Condition.Extend; not PR #3313's),
// when given, must be none, partial or unknown (InvalidApplied); it
// changes one case: a retryable reliability failure of a tool not known
// to be idempotent is retried when applied is none (nothing was applied,
// so a replay cannot apply it twice), and stops with MayBeApplied when it
// is partial or unknown. agentGuidance is never read: free text cannot
// smuggle an action past the checks.
// Codes other than the proposal's baseline are informational, as the
// proposal requires.
func DecideToolFailure(raw []byte, mode Mode, call Call) Decision {
	d, res, done := startWith(raw, mode, func(b []byte) (map[string]any, Reason, string) {
		return completedResult(b, call.legacyResult())
	})
	if done {
		return d
	}
	stop := d.stop
	mv, ok := res["_meta"]
	if !ok {
		return stop(MissingToolFailure, "isError is true but _meta is absent")
	}
	meta, ok := mv.(map[string]any)
	if !ok {
		return stop(InvalidToolFailure, "_meta is %s, not an object", kind(mv))
	}
	tv, ok := meta[study.ToolFailureKey]
	if !ok {
		return stop(MissingToolFailure, "_meta has no %s", study.ToolFailureKey)
	}
	tf, ok := tv.(map[string]any)
	if !ok {
		return stop(InvalidToolFailure, "_meta[%q] is %s, not an object", study.ToolFailureKey, kind(tv))
	}
	if m := firstUnknown(tf, toolFailureMembers); m != "" {
		return stop(UnknownMember, "the classification has member %s, which the proposal does not define", m)
	}
	class, _ := tf["class"].(string)
	switch study.FailureClass(class) {
	case study.CapabilityClass, study.ReliabilityClass, study.GovernanceClass:
	default:
		return stop(UnknownClass, "class is %s, want capability, reliability or governance", show(tf, "class"))
	}
	code, _ := tf["code"].(string)
	if code == "" {
		return stop(MissingFailureCode, "code is %s, want a non-empty string", show(tf, "code"))
	}
	if id, _ := tf["correlationId"].(string); id == "" {
		return stop(MissingCorrelationID, "correlationId is %s, want a non-empty string", show(tf, "correlationId"))
	}
	if g, ok := tf["agentGuidance"]; ok {
		if _, ok := g.(string); !ok {
			return stop(InvalidAgentGuidance, "agentGuidance is %s, not a string", kind(g))
		}
	}
	var applied string
	if v, ok := tf["applied"]; ok {
		applied, _ = v.(string)
		switch applied {
		case study.AppliedNone, study.AppliedPartial, study.AppliedUnknown:
		default:
			return stop(InvalidApplied, "applied is %s, want %s, %s or %s", show(tf, "applied"), study.AppliedNone, study.AppliedPartial, study.AppliedUnknown)
		}
	}
	retryable := false
	if v, ok := tf["retryable"]; ok {
		if retryable, ok = v.(bool); !ok {
			return stop(InvalidRetryable, "retryable is %s, not a boolean", kind(v))
		}
	}
	if retryable && class != string(study.ReliabilityClass) {
		return stop(ContradictoryRetryable, "a %s failure is declared retryable; only reliability failures may be", class)
	}
	var notBefore int64
	rv, hasNotBefore := tf["retryNotBefore"]
	if hasNotBefore {
		ms, ok := nonNegative(rv)
		if !ok || !retryable {
			return stop(InvalidRetryNotBefore, "retryNotBefore is %s; want a non-negative whole number of epoch milliseconds, with retryable true", show(tf, "retryNotBefore"))
		}
		notBefore = ms
	}
	switch study.FailureClass(class) {
	case study.CapabilityClass:
		if code != "invalid_input" {
			return stop(CapabilityFailure, "the call cannot succeed as requested (code %s names no repair)", snippet(code))
		}
		d.Policy = study.ReviseArguments
	case study.GovernanceClass:
		if code != "auth_required" {
			return stop(GovernanceRefusal, "a policy refused the call (code %s)", snippet(code))
		}
		d.Policy = study.Authenticate
	default:
		if !retryable {
			return stop(NotRetryable, "the failure is a reliability failure but the call is not declared retryable")
		}
		switch {
		case call.Idempotent:
		case applied == study.AppliedPartial || applied == study.AppliedUnknown:
			return stop(MayBeApplied, "the call is declared retryable, but applied is %s and the tool is not known to be idempotent", applied)
		case applied != study.AppliedNone:
			return stop(IdempotencyUnknown, "the call is declared retryable but the tool is not known to be idempotent")
		}
		if hasNotBefore {
			wait := time.UnixMilli(notBefore).Sub(call.Now)
			if wait > MaxRetryDelay {
				return stop(InvalidRetryDelay, "retryNotBefore is %s after now, more than %s", wait, MaxRetryDelay)
			}
			d.Delay = max(wait, 0)
		}
		d.Policy = study.RetryLater
	}
	d.Reason, d.Message = "", ""
	return d
}

// DecideRateLimited checks raw, the bytes of one JSON-RPC error object
// ({"code", "message", "data"}), as SEP-3304 (modelcontextprotocol PR
// #3304) defines the RateLimited error, and returns retry_later with
// Delay = data.retryAfterMs, or stop_or_escalate with a Reason. The
// checks, in order: size, JSON and nesting as for a result; an object with
// no member but code, message and data; code is study.RateLimitedCode (a
// whole number: -32023.0 is the same code); message is a string; data is
// an object with no member but retryAfterMs, limit and remaining;
// retryAfterMs is a whole number in [0, MaxRetryDelay] (1000, 1000.0 and
// 1e3 alike; MissingRetryDelay when absent: the proposal requires it);
// limit and remaining, when given, are non-negative whole numbers (never
// read).
//
// Note: a delay above MaxRetryDelay stops rather than being clamped: the
// proposal lets a client clamp, but retrying before the server's window
// ends is a retry the server said will fail.
//
// Note: the proposal types retryAfterMs as a TypeScript number with a
// minimum of 0 (seps/0000-rate-limited-error.md of PR #3304, at
// 40b5c6f7b5d1e8b07887ce8a6b0c55248ba3ecc0) and does not say whether it
// may have a fraction; a fractional millisecond (1000.5, 1.5e0) stops
// (InvalidRetryDelay): it is finer than any clock a client waits on and
// most likely a unit mistake (seconds written where milliseconds belong),
// and stopping is the side that cannot retry early.
func DecideRateLimited(raw []byte, mode Mode) Decision {
	d, e, done := startWith(raw, mode, jsonObject)
	if done {
		return d
	}
	stop := d.stop
	if m := firstUnknown(e, rpcErrorMembers); m != "" {
		return stop(UnknownMember, "the error object has member %s", m)
	}
	if n, _ := e["code"].(json.Number); !sameInt(n, study.RateLimitedCode) {
		return stop(NotRateLimited, "code is %s, want %d", show(e, "code"), study.RateLimitedCode)
	}
	if _, ok := e["message"].(string); !ok {
		return stop(InvalidErrorObject, "message is %s, want a string", show(e, "message"))
	}
	data, ok := e["data"].(map[string]any)
	if !ok {
		return stop(InvalidErrorObject, "data is %s, want an object", show(e, "data"))
	}
	if m := firstUnknown(data, rateLimitMembers); m != "" {
		return stop(UnknownMember, "data has member %s, which the proposal does not define", m)
	}
	av, ok := data["retryAfterMs"]
	if !ok {
		return stop(MissingRetryDelay, "data.retryAfterMs is absent")
	}
	ms, ok := nonNegative(av)
	if !ok || ms > MaxRetryDelay.Milliseconds() {
		return stop(InvalidRetryDelay, "data.retryAfterMs is %s, want a whole number of milliseconds in [0, %d]", show(data, "retryAfterMs"), MaxRetryDelay.Milliseconds())
	}
	for _, k := range []string{"limit", "remaining"} {
		if q, ok := data[k]; ok {
			if _, ok := nonNegative(q); !ok {
				return stop(InvalidQuota, "data.%s is %s, want a non-negative whole number", k, show(data, k))
			}
		}
	}
	d.Policy, d.Delay = study.RetryLater, time.Duration(ms)*time.Millisecond
	return d
}

// nonNegative reads v as a non-negative whole number (milliseconds, a
// quota), written in any JSON form (see integral), with no upper bound but
// int64's.
func nonNegative(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, ok := integral(n)
	return i, ok && i >= 0
}

// sameInt reports whether n is the whole number want, however written.
func sameInt(n json.Number, want int64) bool {
	i, ok := integral(n)
	return ok && i == want
}
