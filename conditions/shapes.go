package conditions

import (
	"encoding/json"
	"fmt"

	"github.com/mcpstress/stress/study"
)

// Labels that open the annotation of an error-shape condition, each alone
// on a line before the indented JSON of what the server sends under the
// shape: a tool result, or a JSON-RPC error object. Every shape uses the
// same two labels, so the shapes differ only in the JSON.
const (
	ShapeResultLabel = "Tool result as the server sends it:"
	ShapeErrorLabel  = "JSON-RPC error as the server sends it:"
)

// shapeResult is a tool result of an error shape: the failure's message
// in one text block, and for ToolFailure the classification in _meta.
type shapeResult struct {
	ResultType string                        `json:"resultType"`
	IsError    bool                          `json:"isError"`
	Content    []textBlock                   `json:"content"`
	Meta       map[string]*study.ToolFailure `json:"_meta,omitempty"`
}

// rpcError is a JSON-RPC error object; RateLimited's data is typed.
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    *rateLimitData `json:"data,omitempty"`
}

// rateLimitData is SEP-3304's data member: retryAfterMs is required; the
// optional limit and remaining are left out (no record states them).
type rateLimitData struct {
	RetryAfterMs int64 `json:"retryAfterMs"`
}

// ShapeResult returns what the server sends for scenario s under error
// shape c, the label that introduces it, and whether the shape changes the
// failure at all (ok false: the condition shows the normalized observation
// alone). The rules, each following its proposal (docs/error-shapes.md):
//
//   - sep2145: a failure the server answered with a JSON-RPC error
//     (surface protocol_error, not a client-side timeout) becomes
//     {"resultType": "complete", "isError": true, "content": [{"type":
//     "text", "text": <the error's message>}]}.
//   - toolfailure: an isError result (surface tool_error) is shown with
//     its first text block and _meta[study.ToolFailureKey] set to
//     study.ToolFailureOf; a cause without a class changes nothing.
//   - toolfailure+sep2145: sep2145's move, then toolfailure on the result.
//   - ratelimited: a rate_limit failure on protocol_error or tool_error
//     that announces its wait becomes {"code": -32023, "message": <the
//     message>, "data": {"retryAfterMs": <the wait>}}.
//
// Success-shaped results never change: no proposal touches a result the
// server reports as a success.
func ShapeResult(s *study.Scenario, c study.Condition) (raw json.RawMessage, label string, ok bool, err error) {
	if !c.Shape() {
		return nil, "", false, fmt.Errorf("%s is not an error-shape condition", c)
	}
	msg, answered := s.FailureMessage()
	if !answered || s.Surface == study.SuccessShaped {
		return nil, "", false, nil
	}
	if c == study.RateLimited {
		if s.Cause != study.RateLimit {
			return nil, "", false, nil
		}
		wait, ok := study.AnnouncedWait([]byte(msg))
		if !ok {
			return nil, "", false, nil
		}
		raw, err = json.Marshal(rpcError{Code: study.RateLimitedCode, Message: msg, Data: &rateLimitData{RetryAfterMs: wait.Milliseconds()}})
		return raw, ShapeErrorLabel, err == nil, err
	}
	moved := s.Surface == study.ProtocolError && c.MovesToResult()
	if s.Surface != study.ToolError && !moved {
		return nil, "", false, nil
	}
	res := shapeResult{ResultType: "complete", IsError: true, Content: []textBlock{{Type: "text", Text: msg}}}
	if c.Classifies() {
		wait, _ := study.AnnouncedWait([]byte(msg))
		if tf, ok := study.ToolFailureOf(s, study.ShapeEpoch, wait); ok {
			res.Meta = map[string]*study.ToolFailure{study.ToolFailureKey: &tf}
		}
	}
	if !moved && res.Meta == nil {
		return nil, "", false, nil
	}
	raw, err = json.Marshal(res)
	return raw, ShapeResultLabel, err == nil, err
}
