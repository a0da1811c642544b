package simulator

import (
	"encoding/json"
	"strings"

	"github.com/mcpstress/stress/study"
)

// Answer is a parsed model answer.
type Answer struct {
	// Status is the operation_status field when it is a string in the
	// vocabulary, else "".
	Status study.Status `json:"operation_status,omitempty"`
	// Policy is the recovery_policy field when it is a label in the
	// vocabulary, else "".
	Policy study.Policy `json:"recovery_policy,omitempty"`
	// Valid is true when both fields are present and in the vocabulary.
	Valid bool `json:"valid"`
	// Reason says why an answer is invalid: one of the Reason constants.
	Reason string `json:"reason,omitempty"`
	// DelayMS is the delay before a retry_later that the answer gives in
	// an optional delay_ms member, in milliseconds (an integer from 0 to
	// 86 400 000, one day; 0, like an absent or null member, asks for the
	// environment's own wait). Only live replay reads it.
	DelayMS int64 `json:"delay_ms,omitempty"`
	// DelayInvalid says the answer has a delay_ms that is not such an
	// integer (negative, fractional, over a day, not a number). It never
	// makes the label invalid; under task act, a retry_later with it is
	// an invalid action (ReasonInvalidDelay), not sent.
	DelayInvalid bool `json:"delay_invalid,omitempty"`
	// Action is, under task: act (ParseAct), the call the answer asks
	// the harness to make; nil when the policy needs none or the call is
	// invalid (ActionReason).
	Action *ToolCall `json:"action,omitempty"`
	// ActionChannel is where Action came from: ChannelText or
	// ChannelNative; "" without one.
	ActionChannel string `json:"action_channel,omitempty"`
	// ActionReason says why the action of a valid answer whose policy
	// needs a call is invalid: one of the action reasons (ParseAct).
	ActionReason string `json:"action_reason,omitempty"`
}

// maxDelayMS is the largest delay_ms an answer may give: one day.
const maxDelayMS = 86_400_000

// MaxAnswerBytes is the longest answer text the parsers read (1 MiB): a
// longer one is invalid (ReasonTooLarge), whatever it holds, and its call
// line keeps only its first MaxAnswerBytes bytes, with its size and
// sha256 (results.Call).
const MaxAnswerBytes = 1 << 20

// Reasons an answer is invalid.
const (
	ReasonEmpty         = "empty"                    // nothing but whitespace
	ReasonFence         = "malformed_fence"          // a code fence that is not exactly one well-formed fence
	ReasonNotJSON       = "not_json"                 // not a JSON value
	ReasonNotObject     = "not_object"               // JSON, but not an object
	ReasonTrailing      = "trailing_text"            // text after the JSON object
	ReasonMissingStatus = "missing_operation_status" // no operation_status field
	ReasonMissingPolicy = "missing_recovery_policy"  // no recovery_policy field
	ReasonInvalidStatus = "invalid_operation_status" // operation_status not "failed" or "succeeded"
	ReasonInvalidPolicy = "invalid_recovery_policy"  // recovery_policy outside the six labels
	ReasonTooLarge      = "too_large"                // longer than MaxAnswerBytes
)

// ParseAnswer reads a model's raw answer text. It accepts one JSON object
// holding operation_status and recovery_policy, optionally surrounded by
// whitespace or inside one Markdown code fence (``` or ```json); anything
// else is invalid, with a reason. Other members of the object are ignored,
// but for an optional delay_ms (see Answer.DelayMS).
func ParseAnswer(text string) Answer {
	a, _ := parse(text)
	return a
}

// parse is ParseAnswer, also returning the answer's JSON object (nil when
// there is none).
func parse(text string) (Answer, map[string]any) {
	if len(text) > MaxAnswerBytes {
		return Answer{Reason: ReasonTooLarge}, nil
	}
	body := strings.TrimSpace(text)
	if body == "" {
		return Answer{Reason: ReasonEmpty}, nil
	}
	if strings.HasPrefix(body, "```") {
		inner, ok := unfence(body)
		if !ok {
			return Answer{Reason: ReasonFence}, nil
		}
		body = inner
	}
	dec := json.NewDecoder(strings.NewReader(body))
	var v any
	if err := dec.Decode(&v); err != nil {
		return Answer{Reason: ReasonNotJSON}, nil
	}
	if rest := body[dec.InputOffset():]; strings.TrimSpace(rest) != "" {
		return Answer{Reason: ReasonTrailing}, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return Answer{Reason: ReasonNotObject}, nil
	}
	a := fields(obj, func(s string) string { return s })
	if d, present := obj["delay_ms"]; present && d != nil {
		n, ok := d.(float64)
		switch {
		case ok && n >= 0 && n <= maxDelayMS && n == float64(int64(n)):
			a.DelayMS = int64(n)
		default:
			a.DelayInvalid = true
		}
	}
	return a, obj
}

// unfence returns the content of one Markdown code fence that spans the
// whole of s: an opening ``` with an optional language word, a newline, the
// content, and a closing ``` at the end.
func unfence(s string) (string, bool) {
	nl := strings.IndexByte(s, '\n')
	if nl < 0 || !strings.HasSuffix(s, "```") || len(s) < nl+4 {
		return "", false
	}
	lang := strings.TrimSpace(s[3:nl])
	for _, r := range lang {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return "", false
		}
	}
	inner := s[nl+1 : len(s)-3]
	if strings.Contains(inner, "```") {
		return "", false
	}
	return strings.TrimSpace(inner), true
}

// fields reads the answer of obj's two fields, each value as norm gives
// it, and judges its validity, or the reason it is invalid, from whether
// obj has the two fields and whether their values are in the vocabulary:
// the rule both parsers share.
func fields(obj map[string]any, norm func(string) string) Answer {
	var a Answer
	rawStatus, hasStatus := obj["operation_status"]
	rawPolicy, hasPolicy := obj["recovery_policy"]
	if s, ok := rawStatus.(string); ok && study.Status(norm(s)).Valid() {
		a.Status = study.Status(norm(s))
	}
	if p, ok := rawPolicy.(string); ok && study.Policy(norm(p)).Valid() {
		a.Policy = study.Policy(norm(p))
	}
	switch {
	case !hasStatus:
		a.Reason = ReasonMissingStatus
	case !hasPolicy:
		a.Reason = ReasonMissingPolicy
	case a.Status == "":
		a.Reason = ReasonInvalidStatus
	case a.Policy == "":
		a.Reason = ReasonInvalidPolicy
	default:
		a.Valid = true
	}
	return a
}
