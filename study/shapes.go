package study

import (
	"cmp"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ShapeConditions lists the error-shape conditions, in the order of
// AllConditions: those whose name joins proposals (shapeProposals) with
// "+". Their renderings, contracts and contrasts are their entries in
// conditions.Table.
var ShapeConditions = slices.DeleteFunc(slices.Clone(AllConditions), func(c Condition) bool { return !c.Shape() })

// shapeParts are what an error-shape condition takes from each proposal.
type shapeParts struct {
	moves      bool // SEP-2145: a JSON-RPC error becomes an isError result
	classifies bool // ToolFailure's classification on isError results
	guidance   bool // ToolFailure's agentGuidance
	applied    bool // the counter-proposal's applied member
	rateLimits bool // SEP-3304: the server's own rate limit becomes -32023
}

// shapeProposals are the parts each proposal's name stands for in an
// arm's name: an arm is named by the proposals it takes, joined by "+"
// (toolfailure+sep2145 takes ToolFailure's classification and SEP-2145's
// move), guidance for ToolFailure's agentGuidance and applied for the
// counter-proposal. So an arm that combines proposals already here needs
// no more than its name.
var shapeProposals = map[string]shapeParts{
	"sep2145":     {moves: true},
	"toolfailure": {classifies: true},
	"ratelimited": {rateLimits: true},
	"guidance":    {guidance: true},
	"applied":     {applied: true},
}

// shapes are the parts of each error-shape condition of AllConditions,
// read from its name.
var shapes = func() map[Condition]shapeParts {
	m := map[Condition]shapeParts{}
next:
	for _, c := range AllConditions {
		var sp shapeParts
		for name := range strings.SplitSeq(string(c), "+") {
			p, ok := shapeProposals[name]
			if !ok {
				continue next
			}
			sp.moves, sp.classifies, sp.guidance = sp.moves || p.moves, sp.classifies || p.classifies, sp.guidance || p.guidance
			sp.applied, sp.rateLimits = sp.applied || p.applied, sp.rateLimits || p.rateLimits
		}
		m[c] = sp
	}
	return m
}()

// Shape reports whether c is one of ShapeConditions.
func (c Condition) Shape() bool { _, ok := shapes[c]; return ok }

// MovesToResult reports whether c shows a JSON-RPC error the server
// answered as an isError result (SEP-2145's move); under RateLimits, the
// server's own rate limit is the -32023 error instead.
func (c Condition) MovesToResult() bool { return shapes[c].moves }

// Classifies reports whether c puts the ToolFailure classification on
// isError results.
func (c Condition) Classifies() bool { return shapes[c].classifies }

// Guides reports whether c's classification carries agentGuidance, the
// preferred policy in words.
func (c Condition) Guides() bool { return shapes[c].guidance }

// MarksApplied reports whether c's classification carries the
// counter-proposal's applied member.
func (c Condition) MarksApplied() bool { return shapes[c].applied }

// RateLimits reports whether c serves the server's own rate limit as
// SEP-3304's -32023 error.
func (c Condition) RateLimits() bool { return shapes[c].rateLimits }

// ToolFailureKey is the _meta key of the ToolFailure classification (PR
// #3313).
const ToolFailureKey = "io.modelcontextprotocol/toolFailure"

// RateLimitedCode is the JSON-RPC error code of SEP-3304 (PR #3304).
const RateLimitedCode = -32023

// FailureClass is ToolFailure's closed class: what a client may do.
type FailureClass string

// The three classes of PR #3313.
const (
	// CapabilityClass: the operation cannot succeed as requested.
	CapabilityClass FailureClass = "capability"
	// ReliabilityClass: a transient condition; a retry may succeed.
	ReliabilityClass FailureClass = "reliability"
	// GovernanceClass: refused by policy; needs out-of-band action.
	GovernanceClass FailureClass = "governance"
)

// ToolFailure is the classification PR #3313 puts in a failed result's
// _meta. Retryable is set only for the reliability class (the proposal:
// absent or false otherwise); RetryNotBefore is Unix epoch milliseconds.
// AgentGuidance is set only under ToolFailureGuidance: it tells the model
// the answer, as the category contract's nextAction would. Applied is not
// the proposal's: it is this project's counter-proposal (Applied*), set
// only under ToolFailureApplied.
type ToolFailure struct {
	Class          FailureClass `json:"class"`
	Code           string       `json:"code"`
	Retryable      *bool        `json:"retryable,omitempty"`
	RetryNotBefore *int64       `json:"retryNotBefore,omitempty"`
	CorrelationID  string       `json:"correlationId"`
	AgentGuidance  string       `json:"agentGuidance,omitempty"`
	Applied        string       `json:"applied,omitempty"`
}

// The values of the counter-proposal's applied member: what the server
// knows of the failed call's effect.
const (
	// AppliedNone: nothing of the call was applied; a replay cannot
	// apply it twice.
	AppliedNone = "none"
	// AppliedPartial: part of the call was applied (some items of a
	// batch); a replay of the whole would apply that part again.
	AppliedPartial = "partial"
	// AppliedUnknown: the call may have been applied (the connection was
	// lost, or the confirmation, after the request was sent).
	AppliedUnknown = "unknown"
)

// appliedOf returns the applied member a server following the
// counter-proposal sends for a failure of cause c: unknown where the
// write may have committed (a timeout after commit, a lost confirmation),
// partial for a partial commit, none for every other cause.
func appliedOf(c Cause) string {
	switch c {
	case TimeoutCommitted, Idempotency:
		return AppliedUnknown
	case PartialCommit:
		return AppliedPartial
	}
	return AppliedNone
}

// Extend adds to tf what arm c puts beside ToolFailure's own fields, for
// a failure of cause whose preferred policy is preferred: agentGuidance
// (Guidance) under Guides when preferred is known (not ""), and applied
// (appliedOf) under MarksApplied. Other arms leave tf as it is.
func (c Condition) Extend(tf *ToolFailure, cause Cause, preferred Policy) {
	if c.Guides() && preferred != "" {
		tf.AgentGuidance = guidance(preferred)
	}
	if c.MarksApplied() {
		tf.Applied = appliedOf(cause)
	}
}

// guidance returns the agentGuidance a server under ToolFailureGuidance
// sends: the preferred policy p in words (Policy.Words), as a sentence.
func guidance(p Policy) string {
	w := p.Words()
	if w == "" {
		return ""
	}
	return strings.ToUpper(w[:1]) + w[1:] + "."
}

// toolFailures maps each cause to its ToolFailure class and code: the
// proposal's recommended baseline code where one names the cause, else ""
// (the record's own namespaced code stands in, which the proposal allows:
// codes are open). A cause missing here has no class: its failures carry
// no classification.
var toolFailures = map[Cause]struct {
	class FailureClass
	code  string
}{
	UnknownTool:      {CapabilityClass, ""},
	InvalidType:      {CapabilityClass, "invalid_input"},
	InvalidValue:     {CapabilityClass, "invalid_input"},
	AuthRequired:     {GovernanceClass, "auth_required"},
	Transient:        {ReliabilityClass, "retryable_transient_error"},
	RateLimit:        {ReliabilityClass, "retryable_transient_error"},
	TimeoutCommitted: {ReliabilityClass, ""},
	PartialCommit:    {ReliabilityClass, ""},
	Idempotency:      {ReliabilityClass, ""},
	StaleRevision:    {CapabilityClass, ""},
	UpstreamOutage:   {ReliabilityClass, ""},
	Locked:           {ReliabilityClass, ""},
	// SilentNoop: a success-shaped result is never isError, so
	// ToolFailure cannot ride on it.
}

// ToolFailureOf returns the classification of scenario s's failure, which
// the server announced at, waiting wait (0 for none announced), and whether
// the cause has a class: ClassifyFailure of its cause and code, with the
// scenario's id as the correlation id.
func ToolFailureOf(s *Scenario, at time.Time, wait time.Duration) (ToolFailure, bool) {
	return ClassifyFailure(s.Cause, s.Code, s.ID, at, wait)
}

// ClassifyFailure returns the ToolFailure classification of a failure of
// cause c whose server code is code, and whether the cause has a class:
// the class and baseline code of the cause's row (code where the row has
// none); for the reliability class, Retryable is study.Retryable's claim
// and RetryNotBefore at+wait when the failure is retryable and announces
// a wait.
func ClassifyFailure(c Cause, code, correlationID string, at time.Time, wait time.Duration) (ToolFailure, bool) {
	m, ok := toolFailures[c]
	if !ok {
		return ToolFailure{}, false
	}
	tf := ToolFailure{Class: m.class, Code: cmp.Or(m.code, code), CorrelationID: correlationID}
	if m.class == ReliabilityClass {
		r := Retryable(c)
		tf.Retryable = &r
		if wait > 0 && r {
			ms := at.Add(wait).UnixMilli()
			tf.RetryNotBefore = &ms
		}
	}
	return tf, true
}

// ShapeEpoch is the instant a stored record's failure is taken to happen
// at when a shape needs an absolute time (ToolFailure's retryNotBefore):
// a record carries none, and this is the recovery lab's clock epoch.
var ShapeEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// retryAfterText is how a failure states its wait ("retry after 30 s",
// "retry after 250 ms").
var retryAfterText = regexp.MustCompile(`(?i)\bretry after (\d{1,9}) (ms|s)\b`)

// AnnouncedWait returns the wait a failure's text announces ("retry after
// 30 s") and whether it announces one.
func AnnouncedWait(text []byte) (time.Duration, bool) {
	if !containsFold(text, "retry after") {
		return 0, false // most failures announce nothing: no regexp run
	}
	return announced(text)
}

// announced is AnnouncedWait without its prefilter: the pattern alone.
func announced(text []byte) (time.Duration, bool) {
	m := retryAfterText.FindSubmatch(text)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		return 0, false
	}
	if strings.EqualFold(string(m[2]), "ms") {
		return time.Duration(n) * time.Millisecond, true
	}
	return time.Duration(n) * time.Second, true
}

// containsFold reports whether text holds lower, an ASCII lower-case
// string, in any case (what retryAfterText's (?i) matches).
func containsFold(text []byte, lower string) bool {
	for i := 0; i+len(lower) <= len(text); i++ {
		j := 0
		for j < len(lower) && text[i+j]|0x20 == lower[j] {
			j++
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// FailureMessage returns the message of s's failure as its server wrote
// it: a JSON-RPC error's message, or the first text block of a result;
// answered is false when the client raised the failure itself (a timeout:
// no answer arrived), so no server message exists.
func (s *Scenario) FailureMessage() (msg string, answered bool) {
	var o observation
	if json.Unmarshal(s.Observation, &o) != nil {
		return "", false
	}
	if o.Exception != nil {
		if o.Exception.Type == "timeout" || o.Exception.Error.Message == nil {
			return "", false
		}
		return *o.Exception.Error.Message, true
	}
	if o.Result != nil && len(o.Result.Content) > 0 {
		return o.Result.Content[0].Text, true
	}
	return "", o.Result != nil
}
