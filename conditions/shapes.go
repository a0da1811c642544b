package conditions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/mcpstress/stress/study"
)

// Labels that open what an error-shape condition shows, each alone on a
// line before the indented JSON the server sends under the shape: a tool
// result, or a JSON-RPC error object. Every shape uses the same two
// labels, so the shapes differ only in the JSON.
const (
	ShapeResultLabel = "Tool result as the server sends it:"
	ShapeErrorLabel  = "JSON-RPC error as the server sends it:"
)

// shapeResult is a tool result as a server sends it under an error shape:
// the record's result with resultType (required from 2026-07-28), without
// the category contract, and for ToolFailure the classification in _meta.
type shapeResult struct {
	ResultType        string            `json:"resultType"`
	IsError           *bool             `json:"isError,omitempty"`
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	Meta              map[string]any    `json:"_meta,omitempty"`
}

// rpcError is a JSON-RPC error object as a server sends it.
type rpcError struct {
	Code    json.Number     `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// rateLimitData is SEP-3304's data member: retryAfterMs is required; the
// optional limit and remaining are left out (no record states them).
type rateLimitData struct {
	RetryAfterMs int64 `json:"retryAfterMs"`
}

// wireObservation is a record's observation as its server sent it: the
// result, or the JSON-RPC error, decoded keeping every member.
type wireObservation struct {
	Exception *struct {
		Type  string   `json:"type"`
		Error rpcError `json:"error"`
	} `json:"exception"`
	Result *struct {
		Content           []json.RawMessage `json:"content"`
		IsError           *bool             `json:"isError"`
		StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
		Meta              map[string]any    `json:"_meta,omitempty"`
	} `json:"result"`
}

// ShapeResult returns what the server sends for scenario s under error
// shape c, which the condition shows in place of the recorded
// observation, and the label that introduces it; ok is false where the
// client raised the failure itself (a timeout: no answer exists to
// reshape), and the condition shows the observation as recorded. What a
// server following the shape's proposals alone sends (docs/error-shapes.md):
//
//   - the record's result, or JSON-RPC error, without seed 002's category
//     contract (a text block or structuredContent holding errorCategory, a
//     JSON-RPC error's data holding it), which only the category
//     conditions carry; a result gets resultType "complete";
//   - sep2145 (MovesToResult): a JSON-RPC error becomes {"resultType":
//     "complete", "isError": true, "content": [{"type": "text", "text":
//     <the error's message>}]};
//   - toolfailure (Classifies): an isError result gets
//     _meta[study.ToolFailureKey] = study.ToolFailureOf, with agentGuidance
//     under toolfailure+guidance and applied under toolfailure+applied
//     (study.Condition.Extend); a cause without a class gets none;
//   - ratelimited (RateLimits): the server's own rate limit (a rate_limit
//     record whose target is the tool, not an upstream dependency) that
//     announces its wait becomes {"code": -32023, "message": <the message>,
//     "data": {"retryAfterMs": <the wait>}}, on either surface, before any
//     move; an upstream limit stays as sent (SEP-3304 RL-6).
//
// Success-shaped results keep their content: no proposal touches a result
// the server reports as a success.
func ShapeResult(s *study.Scenario, c study.Condition) (raw json.RawMessage, label string, ok bool, err error) {
	sh, err := shape(s, c)
	return sh.raw, sh.label, sh.ok, err
}

// shaped is what shape returns: ShapeResult's values, and which of the
// arm's parts changed the record.
type shaped struct {
	raw   json.RawMessage
	label string
	ok    bool
	// moved: a JSON-RPC error became an isError result (SEP-2145);
	// classified: the result carries the ToolFailure classification;
	// rateLimited: the failure is SEP-3304's -32023 error.
	moved, classified, rateLimited bool
}

// shape is ShapeResult, saying which of the arm's parts acted.
func shape(s *study.Scenario, c study.Condition) (sh shaped, err error) {
	if !c.Shape() {
		return sh, fmt.Errorf("%s is not an error-shape condition", c)
	}
	var w wireObservation
	dec := json.NewDecoder(bytes.NewReader(s.Observation))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return sh, fmt.Errorf("scenario %s: observation: %w", s.ID, err)
	}
	msg, answered := s.FailureMessage()
	if !answered {
		return sh, nil
	}
	if c.RateLimits() && ownRateLimit(s) && s.Surface != study.SuccessShaped {
		if wait, ok := study.AnnouncedWait([]byte(msg)); ok {
			data, _ := json.Marshal(rateLimitData{RetryAfterMs: wait.Milliseconds()})
			sh.raw, err = json.Marshal(rpcError{Code: json.Number(fmt.Sprint(study.RateLimitedCode)), Message: msg, Data: data})
			sh.label, sh.ok, sh.rateLimited = ShapeErrorLabel, err == nil, err == nil
			return sh, err
		}
	}
	var res shapeResult
	switch {
	case w.Exception != nil && c.MovesToResult():
		t := true
		text, _ := json.Marshal(textBlock{Type: "text", Text: msg})
		res = shapeResult{IsError: &t, Content: []json.RawMessage{text}}
		sh.moved = true
	case w.Exception != nil:
		e := w.Exception.Error
		if isContract(e.Data) {
			e.Data = nil
		}
		sh.raw, err = json.Marshal(e)
		sh.label, sh.ok = ShapeErrorLabel, err == nil
		return sh, err
	case w.Result != nil:
		r := w.Result
		res = shapeResult{IsError: r.IsError, Content: []json.RawMessage{}, Meta: r.Meta}
		for _, b := range r.Content {
			if !isContractBlock(b) {
				res.Content = append(res.Content, b)
			}
		}
		if !isContract(r.StructuredContent) {
			res.StructuredContent = r.StructuredContent
		}
	default:
		return sh, fmt.Errorf("scenario %s: the observation is neither a result nor an exception", s.ID)
	}
	res.ResultType = "complete"
	if c.Classifies() && res.IsError != nil && *res.IsError {
		wait, _ := study.AnnouncedWait([]byte(msg))
		if tf, ok := study.ToolFailureOf(s, study.ShapeEpoch, wait); ok {
			c.Extend(&tf, s.Cause, s.Preferred)
			meta := maps.Clone(res.Meta)
			if meta == nil {
				meta = map[string]any{}
			}
			meta[study.ToolFailureKey] = &tf
			res.Meta = meta
			sh.classified = true
		}
	}
	sh.raw, err = json.Marshal(res)
	sh.label, sh.ok = ShapeResultLabel, err == nil
	if err != nil {
		sh.moved, sh.classified = false, false
	}
	return sh, err
}

// ownRateLimit reports whether scenario s's failure is the server's own
// rate limit on the tool: a rate_limit whose repair target is the tool
// (its target kind "tool"), not an upstream dependency the tool calls
// (target kind "dependency": SEP-3304 RL-6 keeps those isError results).
func ownRateLimit(s *study.Scenario) bool {
	return s.Cause == study.RateLimit && s.Target.Kind == "tool"
}

// isContract reports whether raw is seed 002's category contract: an
// object with an errorCategory member.
func isContract(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, ok := m["errorCategory"]
	return ok
}

// isContractBlock reports whether content block b is a text block whose
// text is the category contract, serialized.
func isContractBlock(b json.RawMessage) bool {
	var t textBlock
	return json.Unmarshal(b, &t) == nil && t.Type == "text" && isContract(json.RawMessage(t.Text))
}
