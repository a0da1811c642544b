// Package failclosed is the deterministic fail-closed client of
// docs/specification.md section 6: it reads the raw bytes of a completed
// tool result carrying the experimental control envelope (schema
// urn:example:mcp-error:1), checks it in a fixed order, and either selects
// a recovery policy or stops (stop_or_escalate) with an exact,
// machine-readable Reason.
//
// The envelope it accepts:
//
//	{"resultType": "complete", "isError": true,
//	 "error": {"schema": "urn:example:mcp-error:1",
//	           "code": "example.mcp.arguments.invalid_type",
//	           "target": {"kind": "parameter", "pointer": "/walletAddress"},
//	           "policy": "revise_arguments",
//	           "retry": {"sameRequest": "unsafe"},
//	           "sideEffects": "none_committed"},
//	 "content": [{"type": "text", "text": "walletAddress must be a string."}]}
//
// Targets by kind (the kind must equal the code's target kind in the study
// registry): "tool" needs a non-empty string "name"; "parameter" needs a JSON
// pointer (RFC 6901) "pointer" that starts with "/"; "credential" and
// "dependency" take an optional non-empty string "name". A target member not
// listed for its kind is rejected.
//
// Retry members: "sameRequest" is "safe" or "unsafe" and always required;
// "afterMs" is the delay before a retry_later replay, an integer number of
// milliseconds in [0, MaxRetryDelay], required with retry_later and rejected
// with any other policy.
//
// DecideCategory checks the second, application-defined contract of seed
// 002 (errorCategory, isRetryable, explanation, nextAction in
// structuredContent, with a serialized text copy); see its doc. The caller
// names the contract it expects by the entry point it calls: neither
// function guesses from the input, and each ignores the other's members.
//
// Decide and DecideCategory are pure, never panic, and allocate at most in
// proportion to the input, which is capped at MaxSize bytes and MaxDepth
// levels of nesting (measured: under 50 MB and 0.3 s for the worst 1 MiB
// inputs tried).
//
// BuiltinSuite loads the conformance suite's cases, embedded from
// suite/*.json; Controls builds the 21 control cases from a corpus.
package failclosed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpstress/stress/study"
)

// Limits applied before any field is read.
const (
	MaxSize       = 1 << 20        // largest accepted input, in bytes (1 MiB)
	MaxDepth      = 64             // deepest accepted nesting of arrays and objects; the top-level object is depth 1
	MaxRetryDelay = 24 * time.Hour // largest accepted retry.afterMs
)

// envelopeSchema is the only envelope schema this client understands.
const envelopeSchema = "urn:example:mcp-error:1"

// Mode selects who picks the policy once every check has passed.
type Mode string

// The two client modes.
const (
	Registry       Mode = "registry"        // the local registry picks the policy from the code
	ExplicitAction Mode = "explicit_action" // the server's declared policy is followed
)

// allModes lists both modes in canonical order.
var allModes = []Mode{Registry, ExplicitAction}

// Valid reports whether m is Registry or ExplicitAction.
func (m Mode) Valid() bool { return m == Registry || m == ExplicitAction }

// Reason is a stable machine-readable code saying why the client stopped;
// it is empty when the client chose an actionable policy.
type Reason string

// The reasons, in the order of the checks that produce them. Each check
// stops at its first failure, so an input yields exactly one reason.
const (
	// TooLarge: the input exceeds MaxSize bytes.
	TooLarge Reason = "too_large"
	// InvalidJSON: empty input, invalid UTF-8, a syntax error, or data after
	// the top-level value.
	InvalidJSON Reason = "invalid_json"
	// TooDeep: arrays and objects nest deeper than MaxDepth.
	TooDeep Reason = "too_deep"
	// DuplicateMember: some object repeats a member name.
	DuplicateMember Reason = "duplicate_member"
	// NotObject: the top-level value is not a JSON object.
	NotObject Reason = "not_object"
	// WrongResultType: resultType is absent or not the string "complete".
	WrongResultType Reason = "wrong_result_type"
	// MissingContent: content is absent or an empty array.
	MissingContent Reason = "missing_content"
	// InvalidContent: content is not an array, or a block is not an object
	// with a non-empty string type, or a text block lacks a string text.
	InvalidContent Reason = "invalid_content"
	// NotErrorResult: isError is absent, false, or not a boolean.
	NotErrorResult Reason = "not_error_result"
	// MissingEnvelope: isError is true but the error member is absent.
	MissingEnvelope Reason = "missing_envelope"
	// InvalidEnvelope: the error member is not an object.
	InvalidEnvelope Reason = "invalid_envelope"
	// WrongSchema: error.schema is absent or not urn:example:mcp-error:1.
	WrongSchema Reason = "wrong_schema"
	// UnknownMember: error, error.target or error.retry has a member the
	// schema does not define; for the category contract, structuredContent
	// has a member other than errorCategory, isRetryable, retriable,
	// explanation and nextAction.
	UnknownMember Reason = "unknown_member"
	// UnknownCode: error.code is absent, not a string, or not in the registry.
	UnknownCode Reason = "unknown_code"
	// InvalidTarget: error.target is absent or not an object, its kind is not
	// a string, or the members its kind requires are absent or malformed.
	InvalidTarget Reason = "invalid_target"
	// TargetMismatch: error.target.kind differs from the code's target kind.
	TargetMismatch Reason = "target_mismatch"
	// UnknownPolicy: error.policy is absent, not a string, or not one of the
	// six labels.
	UnknownPolicy Reason = "unknown_policy"
	// IncompatiblePolicy: error.policy is neither a preferred policy of the
	// code's cause nor stop_or_escalate.
	IncompatiblePolicy Reason = "incompatible_policy"
	// InvalidSameRequest: error.retry is absent or not an object, or
	// retry.sameRequest is not "safe" or "unsafe".
	InvalidSameRequest Reason = "invalid_same_request"
	// InvalidRetryDelay: retry.afterMs is not an integer in [0, MaxRetryDelay].
	InvalidRetryDelay Reason = "invalid_retry_delay"
	// MissingRetryDelay: the policy is retry_later but retry.afterMs is absent.
	MissingRetryDelay Reason = "missing_retry_delay"
	// UnexpectedRetryDelay: retry.afterMs is given with a policy other than
	// retry_later.
	UnexpectedRetryDelay Reason = "unexpected_retry_delay"
	// InvalidSideEffects: error.sideEffects is absent or not "none_committed",
	// "committed" or "unknown".
	InvalidSideEffects Reason = "invalid_side_effects"
	// UnsafeReplay: the selected policy replays the unchanged request
	// (retry_now or retry_later) but the envelope does not declare
	// sameRequest "safe" and sideEffects "none_committed".
	UnsafeReplay Reason = "unsafe_replay"
	// DeclaredStop: in explicit-action mode, the server's policy is
	// stop_or_escalate.
	DeclaredStop Reason = "declared_stop"

	// The reasons of the error-category contract (DecideCategory), in the
	// order of its checks; its shared checks (TooLarge … NotErrorResult,
	// UnknownMember) come from the list above.

	// MissingStructuredContent: isError is true but structuredContent is
	// absent.
	MissingStructuredContent Reason = "missing_structured_content"
	// InvalidStructuredContent: structuredContent is not an object.
	InvalidStructuredContent Reason = "invalid_structured_content"
	// UnknownCategory: errorCategory is absent, not a string, or not one of
	// transient, validation, permission, business (case-sensitive).
	UnknownCategory Reason = "unknown_category"
	// InvalidRetryable: neither isRetryable nor its alias retriable is
	// given, or one of them is not a boolean.
	InvalidRetryable Reason = "invalid_retryable"
	// RetryableConflict: isRetryable and retriable are both given and
	// differ.
	RetryableConflict Reason = "retryable_conflict"
	// MissingExplanation: explanation is absent, not a string, or blank.
	MissingExplanation Reason = "missing_explanation"
	// InvalidNextAction: nextAction is given but is not a non-blank string.
	InvalidNextAction Reason = "invalid_next_action"
	// ContradictoryRetryable: the unchanged call is declared retryable but
	// the category is validation, permission or business, whose unchanged
	// call cannot succeed.
	ContradictoryRetryable Reason = "contradictory_retryable"
	// MissingTextCopy: no text block of content holds the serialized
	// contract (a JSON object).
	MissingTextCopy Reason = "missing_text_copy"
	// TextCopyMismatch: a text block that holds a JSON value (its text
	// starts with "{" after white space) is not valid JSON, not a valid
	// contract, or says something other than structuredContent.
	TextCopyMismatch Reason = "text_copy_mismatch"
	// NotRetryable: the category is transient but the unchanged call is
	// declared not retryable (e.g. the server's retry budget is spent).
	NotRetryable Reason = "not_retryable"
	// BusinessRule: the category is business: a rule forbids the
	// operation, which no change of request or retry repairs.
	BusinessRule Reason = "business_rule"
	// UnknownMode: Decide was called with a Mode that is not valid.
	UnknownMode Reason = "unknown_mode"
)

// allReasons lists every non-empty reason: those of Decide in check order,
// then those only DecideCategory gives, then those only the error-shape
// adapters give (shapes.go), then UnknownMode.
var allReasons = []Reason{
	TooLarge, InvalidJSON, TooDeep, DuplicateMember, NotObject,
	WrongResultType, MissingContent, InvalidContent, NotErrorResult,
	MissingEnvelope, InvalidEnvelope, WrongSchema, UnknownMember, UnknownCode,
	InvalidTarget, TargetMismatch, UnknownPolicy, IncompatiblePolicy,
	InvalidSameRequest, InvalidRetryDelay, MissingRetryDelay,
	UnexpectedRetryDelay, InvalidSideEffects, UnsafeReplay, DeclaredStop,
	MissingStructuredContent, InvalidStructuredContent, UnknownCategory,
	InvalidRetryable, RetryableConflict, MissingExplanation,
	InvalidNextAction, ContradictoryRetryable, MissingTextCopy,
	TextCopyMismatch, NotRetryable, BusinessRule,
	MissingToolFailure, InvalidToolFailure, UnknownClass, MissingFailureCode,
	MissingCorrelationID, InvalidAgentGuidance, InvalidRetryNotBefore,
	IdempotencyUnknown, CapabilityFailure, GovernanceRefusal,
	NotRateLimited, InvalidErrorObject, InvalidQuota,
	InvalidApplied, MayBeApplied,
	UnknownMode,
}

// Valid reports whether r is one of the Reason constants (the empty
// reason is not).
func (r Reason) Valid() bool { return slices.Contains(allReasons, r) }

// Decision is the outcome of Decide.
type Decision struct {
	Policy  study.Policy  // chosen policy; stop_or_escalate whenever Reason is non-empty
	Mode    Mode          // the mode Decide ran in
	Reason  Reason        // empty for an actionable policy, else why the client stopped
	Message string        // human-readable detail; not stable, do not parse
	Cause   study.Cause   // cause of error.code once the code is known, else "" (Decide only)
	Delay   time.Duration // wait before replaying; non-zero only for retry_later
	// Category is the contract's errorCategory once it is known, else ""
	// (DecideCategory only).
	Category study.ErrorCategory
}

// Members of the schema-1 envelope and its sub-objects.
var (
	envelopeMembers = set("schema", "code", "target", "policy", "retry", "sideEffects")
	targetMembers   = set("kind", "pointer", "name")
	retryMembers    = set("sameRequest", "afterMs")
	// targetKinds lists, per kind, the members it allows and whether the
	// second one is required.
	targetKinds = map[string]struct {
		member   string
		required bool
	}{
		"tool":       {"name", true},
		"parameter":  {"pointer", true},
		"credential": {"name", false},
		"dependency": {"name", false},
	}
	sideEffects = set("none_committed", "committed", "unknown")
)

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// start begins a decision in mode with the checks the result contracts
// share: the mode, then the completed-result shape (size, JSON,
// resultType, content, isError: true). When done is true, d is the final
// decision, a stop; otherwise res is the result and d stops until a
// policy is chosen.
func start(raw []byte, mode Mode) (d Decision, res map[string]any, done bool) {
	return startWith(raw, mode, completedError)
}

// startWith is start with read checking the input after the mode: the
// completed result (completedError) or, for a JSON-RPC error object,
// only the size, JSON and object checks (jsonObject).
func startWith(raw []byte, mode Mode, read func([]byte) (map[string]any, Reason, string)) (d Decision, res map[string]any, done bool) {
	d = Decision{Policy: study.StopOrEscalate, Mode: mode}
	if !mode.Valid() {
		return d.stop(UnknownMode, "mode %s is neither registry nor explicit_action", snippet(string(mode))), nil, true
	}
	res, r, msg := read(raw)
	if r != "" {
		return d.stop(r, "%s", msg), nil, true
	}
	return d, res, false
}

// stop makes d a stop with reason r and a message, and returns it.
func (d *Decision) stop(r Reason, format string, args ...any) Decision {
	d.Policy, d.Reason, d.Delay = study.StopOrEscalate, r, 0
	d.Message = fmt.Sprintf(format, args...)
	return *d
}

// Decide checks raw, the bytes of one completed tool result, and returns the
// policy the client follows in mode, or stop_or_escalate with a Reason.
func Decide(raw []byte, mode Mode) Decision {
	d, res, done := start(raw, mode)
	if done {
		return d
	}
	stop := d.stop

	// The envelope. Note: only the members of the outer result that the
	// checks above name are read; others (structuredContent, _meta, …)
	// belong to MCP, which evolves on its own, and are ignored.
	ev, ok := res["error"]
	if !ok {
		return stop(MissingEnvelope, "isError is true but error is absent")
	}
	env, ok := ev.(map[string]any)
	if !ok {
		return stop(InvalidEnvelope, "error is %s, not an object", kind(ev))
	}
	if s, ok := env["schema"].(string); !ok || s != envelopeSchema {
		return stop(WrongSchema, "error.schema is %s, want %q", show(env, "schema"), envelopeSchema)
	}
	// Note: unknown members of the envelope fail closed rather than being
	// ignored. The envelope is versioned by its schema URN, so a compatible
	// addition comes with a new URN; an unversioned extra member may carry
	// semantics that qualify the action (a condition, a scope, a second
	// policy) that this client would otherwise silently drop.
	if m := unknownMembers(env); m != "" {
		return stop(UnknownMember, "%s", m)
	}
	code, _ := env["code"].(string)
	cause, ok := study.CauseOfCode(code)
	if !ok {
		return stop(UnknownCode, "error.code %s is not a known code", show(env, "code"))
	}
	d.Cause = cause
	info, _ := cause.Info()

	// Code-target pairing.
	tv, ok := env["target"].(map[string]any)
	if !ok {
		return stop(InvalidTarget, "error.target is %s, not an object", show(env, "target"))
	}
	tk, ok := tv["kind"].(string)
	if !ok {
		return stop(InvalidTarget, "error.target.kind is %s, not a string", show(tv, "kind"))
	}
	if tk != info.TargetKind {
		return stop(TargetMismatch, "error.target.kind is %s; code %s needs %q", snippet(tk), info.Code, info.TargetKind)
	}
	if m := targetMembersOK(tk, tv); m != "" {
		return stop(InvalidTarget, "error.target %s", m)
	}

	// The policy.
	ps, _ := env["policy"].(string)
	declared := study.Policy(ps)
	if !declared.Valid() {
		return stop(UnknownPolicy, "error.policy %s is not a policy label", show(env, "policy"))
	}
	if declared != study.StopOrEscalate && !slices.Contains(info.Preferred, declared) {
		return stop(IncompatiblePolicy, "error.policy %s does not fit code %s", declared, info.Code)
	}

	// Retry timing and the unchanged-request rule.
	rv, ok := env["retry"].(map[string]any)
	if !ok {
		return stop(InvalidSameRequest, "error.retry is %s, not an object", show(env, "retry"))
	}
	same, _ := rv["sameRequest"].(string)
	if same != "safe" && same != "unsafe" {
		return stop(InvalidSameRequest, "error.retry.sameRequest is %s, want \"safe\" or \"unsafe\"", show(rv, "sameRequest"))
	}
	delay, hasDelay := time.Duration(0), false
	if av, ok := rv["afterMs"]; ok {
		ms, ok := millis(av)
		if !ok {
			return stop(InvalidRetryDelay, "error.retry.afterMs is %s, want an integer in [0, %d]", show(rv, "afterMs"), MaxRetryDelay.Milliseconds())
		}
		delay, hasDelay = time.Duration(ms)*time.Millisecond, true
	}
	if declared == study.RetryLater && !hasDelay {
		return stop(MissingRetryDelay, "error.policy is retry_later but error.retry.afterMs is absent")
	}
	// Note: a delay with any policy but retry_later is rejected, not
	// ignored: it means the server and this client disagree about what the
	// action is (retry_now with a delay is a contradiction; a delay on a
	// change of request has no meaning).
	if declared != study.RetryLater && hasDelay {
		return stop(UnexpectedRetryDelay, "error.retry.afterMs is given with policy %s", declared)
	}

	// The side-effect claim.
	se, _ := env["sideEffects"].(string)
	if !sideEffects[se] {
		return stop(InvalidSideEffects, "error.sideEffects is %s, want none_committed, committed or unknown", show(env, "sideEffects"))
	}

	// Selection.
	var p study.Policy
	switch mode {
	case Registry:
		// Note: the registry picks from the code alone and so ignores a
		// declared stop_or_escalate (the code is the server assertion it
		// trusts). For transient, a declared delay means retry_later and its
		// absence retry_now; the replay rule below still applies.
		p = info.Preferred[0]
		if cause == study.Transient {
			p = study.RetryNow
			if hasDelay {
				p = study.RetryLater
			}
		}
	case ExplicitAction:
		if declared == study.StopOrEscalate {
			return stop(DeclaredStop, "the server declared stop_or_escalate")
		}
		p = declared
	}

	// The replay rule: the unchanged request is replayed only when it is
	// declared safe to repeat and nothing was committed.
	if (p == study.RetryNow || p == study.RetryLater) && (same != "safe" || se != "none_committed") {
		return stop(UnsafeReplay, "policy %s replays the request but sameRequest is %q and sideEffects is %q", p, same, se)
	}
	d.Policy, d.Reason, d.Message = p, "", ""
	if p == study.RetryLater {
		d.Delay = delay
	}
	return d
}

// jsonObject checks the bytes and the syntax of raw (size, JSON, depth,
// duplicate members) and that its top-level value is an object.
func jsonObject(raw []byte) (map[string]any, Reason, string) {
	if len(raw) > MaxSize {
		return nil, TooLarge, fmt.Sprintf("input is %d bytes; the limit is %d", len(raw), MaxSize)
	}
	v, r, msg := parse(raw)
	if r != "" {
		return nil, r, msg
	}
	res, ok := v.(map[string]any)
	if !ok {
		return nil, NotObject, fmt.Sprintf("top-level value is %s, not an object", kind(v))
	}
	return res, "", ""
}

// completedError runs the checks both contracts share, in order: bytes
// and syntax, the ordinary completed-result shape (resultType, a non-empty
// content array of well-formed blocks) and isError: true. It returns the
// parsed result, or a Reason and a message.
func completedError(raw []byte) (map[string]any, Reason, string) {
	return completedResult(raw, false)
}

// completedResult is completedError for a result of a session whose
// version predates resultType when legacy is true: an absent resultType
// then reads as "complete", as the 2026-07-28 revision asks of clients
// (resultTypeRevision); a resultType that is present must still be
// "complete".
func completedResult(raw []byte, legacy bool) (map[string]any, Reason, string) {
	res, r, msg := jsonObject(raw)
	if r != "" {
		return nil, r, msg
	}

	// The ordinary completed-result shape.
	if rv, present := res["resultType"]; present || !legacy {
		if rt, ok := rv.(string); !ok || rt != "complete" {
			return nil, WrongResultType, fmt.Sprintf("resultType is %s, want \"complete\"", show(res, "resultType"))
		}
	}
	cv, ok := res["content"]
	if !ok {
		return nil, MissingContent, "content is absent"
	}
	blocks, ok := cv.([]any)
	if !ok {
		return nil, InvalidContent, fmt.Sprintf("content is %s, not an array", kind(cv))
	}
	// Note: an empty content array counts as missing base content: the
	// two-plane design keeps the explanation for models and people in
	// content, so a result whose only information is the control envelope
	// is not a well-formed result of this design.
	if len(blocks) == 0 {
		return nil, MissingContent, "content is an empty array"
	}
	for i, b := range blocks {
		if m := contentBlock(b); m != "" {
			return nil, InvalidContent, fmt.Sprintf("content[%d] %s", i, m)
		}
	}

	// A declared failure.
	if e, ok := res["isError"].(bool); !ok || !e {
		return nil, NotErrorResult, fmt.Sprintf("isError is %s, want true", show(res, "isError"))
	}
	return res, "", ""
}

// parse decodes raw into plain values (map[string]any, []any, string,
// json.Number, bool, nil) with one json.Decoder token scan that enforces
// MaxDepth and rejects duplicate member names before any value is built past
// the limit.
func parse(raw []byte) (any, Reason, string) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, InvalidJSON, "input is empty"
	}
	// Note: encoding/json silently replaces invalid UTF-8 with U+FFFD, so
	// two different inputs would read the same; reject them instead.
	if !utf8.Valid(raw) {
		return nil, InvalidJSON, "input is not valid UTF-8"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	p := parser{dec: dec}
	v, r := p.value(0)
	if r != "" {
		return nil, r, p.msg
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, InvalidJSON, "data after the top-level value"
	}
	return v, "", ""
}

type parser struct {
	dec *json.Decoder
	msg string
}

func (p *parser) fail(r Reason, format string, args ...any) (any, Reason) {
	p.msg = fmt.Sprintf(format, args...)
	return nil, r
}

// syntax fails with InvalidJSON for a decoding error.
func (p *parser) syntax(err error) (any, Reason) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return p.fail(InvalidJSON, "unexpected end of input")
	}
	return p.fail(InvalidJSON, "%s", err.Error())
}

// value reads one value whose container is at depth; recursion is bounded
// by MaxDepth.
func (p *parser) value(depth int) (any, Reason) {
	tok, err := p.dec.Token()
	if err != nil {
		return p.syntax(err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, ""
	}
	if delim != '{' && delim != '[' {
		return p.fail(InvalidJSON, "unexpected %q", rune(delim))
	}
	if depth+1 > MaxDepth {
		return p.fail(TooDeep, "nesting exceeds %d levels at offset %d", MaxDepth, p.dec.InputOffset())
	}
	a := []any{}
	var m map[string]any
	if delim == '{' {
		m = map[string]any{}
	}
	for p.dec.More() {
		var k string
		if m != nil {
			kt, err := p.dec.Token()
			if err != nil {
				return p.syntax(err)
			}
			if k, ok = kt.(string); !ok {
				return p.fail(InvalidJSON, "object key is not a string")
			}
			if _, dup := m[k]; dup {
				return p.fail(DuplicateMember, "member %s appears twice in one object", snippet(k))
			}
		}
		v, r := p.value(depth + 1)
		if r != "" {
			return nil, r
		}
		if m != nil {
			m[k] = v
		} else {
			a = append(a, v)
		}
	}
	if _, err := p.dec.Token(); err != nil {
		return p.syntax(err)
	}
	if m != nil {
		return m, ""
	}
	return a, ""
}

// contentBlock returns why b is not a well-formed content block, or "".
// Note: only the block type is checked for non-text blocks; the control
// plane never reads them, and their shapes belong to MCP.
func contentBlock(b any) string {
	m, ok := b.(map[string]any)
	if !ok {
		return "is " + kind(b) + ", not an object"
	}
	t, ok := m["type"].(string)
	if !ok || t == "" {
		return "type is " + show(m, "type") + ", not a non-empty string"
	}
	if t == "text" {
		if _, ok := m["text"].(string); !ok {
			return "is a text block whose text is " + show(m, "text") + ", not a string"
		}
	}
	return ""
}

// unknownMembers names the first member of env, env.target or env.retry the
// schema does not define, or returns "".
func unknownMembers(env map[string]any) string {
	for _, o := range []struct {
		at    string
		v     any
		known map[string]bool
	}{{"error", env, envelopeMembers}, {"error.target", env["target"], targetMembers}, {"error.retry", env["retry"], retryMembers}} {
		if m, ok := o.v.(map[string]any); ok {
			if k := firstUnknown(m, o.known); k != "" {
				return o.at + "." + k + " is not a member of " + envelopeSchema
			}
		}
	}
	return ""
}

// firstUnknown returns the smallest member name of m not in known, so the
// message does not depend on map order.
func firstUnknown(m map[string]any, known map[string]bool) string {
	first := ""
	for k := range m {
		if !known[k] && (first == "" || k < first) {
			first = k
		}
	}
	if first != "" {
		return snippet(first)
	}
	return ""
}

// targetMembersOK returns why target t of kind k lacks or misuses a member,
// or "". The kind is known to be one of targetKinds.
func targetMembersOK(k string, t map[string]any) string {
	spec := targetKinds[k]
	for _, other := range []string{"pointer", "name"} {
		if other != spec.member {
			if _, ok := t[other]; ok {
				return fmt.Sprintf("of kind %s must not have %s", k, other)
			}
		}
	}
	v, present := t[spec.member]
	if !present {
		if spec.required {
			return fmt.Sprintf("of kind %s needs %s", k, spec.member)
		}
		return ""
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return fmt.Sprintf("%s is %s, not a non-empty string", spec.member, show(t, spec.member))
	}
	if spec.member == "pointer" && !jsonPointer(s) {
		return fmt.Sprintf("pointer %s is not a JSON pointer to a parameter", snippet(s))
	}
	return ""
}

// jsonPointer reports whether s is a non-root RFC 6901 JSON pointer: it
// starts with "/" and every "~" is followed by "0" or "1".
func jsonPointer(s string) bool {
	if !strings.HasPrefix(s, "/") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '~' && (i+1 == len(s) || (s[i+1] != '0' && s[i+1] != '1')) {
			return false
		}
	}
	return true
}

// millis returns v as whole milliseconds if it is a JSON integer in
// [0, MaxRetryDelay].
func millis(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	ms, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || ms < 0 || ms > MaxRetryDelay.Milliseconds() {
		return 0, false
	}
	return ms, true
}

// show describes member k of m for a message: "absent", or its JSON kind
// and, for scalars, a short quoted value.
func show(m map[string]any, k string) string {
	v, ok := m[k]
	if !ok {
		return "absent"
	}
	switch x := v.(type) {
	case string:
		return snippet(x)
	case json.Number:
		return snippet(string(x))
	case bool:
		return strconv.FormatBool(x)
	}
	return kind(v)
}

// kind names the JSON kind of a parsed value.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "an unknown value"
}

// snippet quotes s, shortened to at most 40 runes so a hostile input cannot
// inflate a message.
func snippet(s string) string {
	const limit = 40
	n := 0
	for i := range s {
		if n == limit {
			return strconv.Quote(s[:i]) + "…"
		}
		n++
	}
	return strconv.Quote(s)
}
