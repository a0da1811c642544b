package study

import (
	"encoding/json"
	"strings"
)

// The JSON shapes of a client-normalized observation (a scenario record's
// observation field), as capture records them from live servers and the
// recovery lab returns them: a raised JSON-RPC error, or a completed tool
// result.

// ObsException is an observation of a raised JSON-RPC error:
// {"exception": {"type", "error": {"code", "message", "data"?}}}.
type ObsException struct {
	Exception struct {
		Type  string `json:"type"`
		Error struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data,omitempty"`
		} `json:"error"`
	} `json:"exception"`
}

// ObsResult is an observation of a completed tool result:
// {"result": {"content": […], "isError", "structuredContent"?}}.
type ObsResult struct {
	Result struct {
		Content           []any           `json:"content"`
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		// Meta is the result's _meta (an error shape's classification,
		// ToolFailureKey), object members sorted; absent when empty.
		Meta json.RawMessage `json:"_meta,omitempty"`
	} `json:"result"`
}

// TextBlock is a text content block of a result.
type TextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// OtherBlock is a non-text content block of a result, by its type and
// media type.
type OtherBlock struct {
	Type     string `json:"type"`
	MIMEType string `json:"mimeType,omitempty"`
}

// Marshal encodes v as compact JSON without HTML escaping (so an
// observation keeps <, > and & as the server sent them), with no final
// newline.
func Marshal(v any) (json.RawMessage, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(strings.TrimSuffix(b.String(), "\n")), nil
}

// SurfaceOf is the surface of a client-normalized observation: a raised
// JSON-RPC error (or timeout) is protocol_error, a completed result with
// isError tool_error, anything else success_shaped.
func SurfaceOf(obs json.RawMessage) Surface {
	var o struct {
		Exception *struct{} `json:"exception"`
		Result    *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	json.Unmarshal(obs, &o)
	switch {
	case o.Exception != nil:
		return ProtocolError
	case o.Result != nil && o.Result.IsError:
		return ToolError
	}
	return SuccessShaped
}
