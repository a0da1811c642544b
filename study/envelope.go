package study

import (
	"encoding/json"
	"strings"
)

// EnvelopeSchema is the schema the counterfactual control envelope names
// (docs/specification.md section 6).
const EnvelopeSchema = "urn:example:mcp-error:1"

// EnvelopeSpec describes a counterfactual control envelope
// (docs/specification.md section 6) for MarshalEnvelope: what a
// well-behaved server would have sent.
type EnvelopeSpec struct {
	Code        string // the cause code
	Target      Target // the repair target
	Policy      Policy // the preferred policy
	SameRequest string // "safe" or "unsafe": may the unchanged request be repeated
	AfterMS     *int64 // the delay before a retry_later replay (retry_later only)
	SideEffects string // "none_committed", "committed" or "unknown"
	Text        string // the failure text of the content block
	// Words is the cause in words: the content block says "The call
	// failed: WORDS." instead of Text when Text is blank or longer than
	// EnvelopeTextMax.
	Words string
}

// EnvelopeTextMax is the longest failure text an envelope repeats, 4 KiB.
// Note: the envelope is shown next to the observation, which holds the
// text already; a longer text is stored once, in the observation, and the
// envelope says only what failed (as for an empty text).
const EnvelopeTextMax = 4 << 10

// MarshalEnvelope encodes e as the envelope's JSON, in the member order of
// docs/specification.md section 6.
func MarshalEnvelope(e EnvelopeSpec) (json.RawMessage, error) {
	type tgt struct {
		Kind    string `json:"kind"`
		Name    string `json:"name,omitempty"`
		Pointer string `json:"pointer,omitempty"`
	}
	var v struct {
		ResultType string `json:"resultType"`
		IsError    bool   `json:"isError"`
		Error      struct {
			Schema string `json:"schema"`
			Code   string `json:"code"`
			Target tgt    `json:"target"`
			Policy Policy `json:"policy"`
			Retry  struct {
				SameRequest string `json:"sameRequest"`
				AfterMS     *int64 `json:"afterMs,omitempty"`
			} `json:"retry"`
			SideEffects string `json:"sideEffects"`
		} `json:"error"`
		Content []TextBlock `json:"content"`
	}
	v.ResultType, v.IsError = "complete", true
	v.Error.Schema = EnvelopeSchema
	v.Error.Code, v.Error.Target, v.Error.Policy = e.Code, tgt(e.Target), e.Policy
	v.Error.Retry.SameRequest, v.Error.Retry.AfterMS = e.SameRequest, e.AfterMS
	v.Error.SideEffects = e.SideEffects
	text := e.Text
	if strings.TrimSpace(text) == "" || len(text) > EnvelopeTextMax {
		text = "The call failed: " + e.Words + "."
	}
	v.Content = []TextBlock{{Type: "text", Text: text}}
	return Marshal(v)
}
