package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/coding/rules"
	"github.com/mcpstress/stress/study"
)

// textCode matches a JSON-RPC code quoted at the start of a failure text,
// as TypeScript SDK servers write argument-validation failures.
var textCode = regexp.MustCompile(`^\s*MCP error (-?\d+):`)

// saysFailure reports whether a result text says something failed (the
// rule of coding/rules).
func saysFailure(text string) bool { return rules.SaysFailure(text) }

// quotedCode returns the JSON-RPC code a failure text starts with.
func quotedCode(text string) (int, bool) {
	m := textCode.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// resultShape is the part of a completed result classification reads.
type resultShape struct {
	isError    bool
	texts      []string // text of each text block
	nonText    int      // blocks of other types
	structured json.RawMessage
}

func (r resultShape) text() string { return strings.Join(r.texts, "\n") }

// surfaceOf classifies a completed result: tool_error, silent,
// success_shaped, or "" when it is an ordinary success.
func (r resultShape) surface() study.Surface {
	if r.isError {
		return study.ToolError
	}
	empty := r.nonText == 0 && study.EmptyJSON(r.structured)
	for _, t := range r.texts {
		empty = empty && study.EmptyText(t)
	}
	switch {
	case empty:
		return study.Silent
	case saysFailure(r.text()):
		return study.SuccessShaped
	}
	return ""
}

// shapeOfResult reads the SDK's decoded result.
func shapeOfResult(res *mcp.CallToolResult) (resultShape, error) {
	s := resultShape{isError: res.IsError}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			s.texts = append(s.texts, t.Text)
		} else {
			s.nonText++
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return s, fmt.Errorf("structuredContent: %w", err)
		}
		s.structured = b
	}
	return s, nil
}

// WireSurface classifies a raw response frame as it crossed the wire, or
// returns "" when it carries an ordinary success. Its texts are read as the
// corpus keeps them (DefaultMaxTextBytes; see textBudget).
func WireSurface(f *Frame) (study.Surface, error) { return wireSurface(f, DefaultMaxTextBytes) }

// wireResponse is what the surface rules read of a raw response frame.
type wireResponse struct {
	Error  json.RawMessage `json:"error"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	} `json:"result"`
}

func wireSurface(f *Frame, maxText int) (study.Surface, error) {
	if f == nil {
		return "", errors.New("no response frame")
	}
	var m wireResponse
	if err := json.Unmarshal(f.Bytes(), &m); err != nil {
		if f.Truncated || f.Unfinished {
			return "", fmt.Errorf("response frame %d was recorded cut short (%d bytes cut; see -max-frame-bytes), so its surface is unknown", f.Seq, f.Cut)
		}
		return "", fmt.Errorf("response frame %d: %w", f.Seq, err)
	}
	if len(m.Error) > 0 && string(m.Error) != "null" {
		return study.ProtocolError, nil
	}
	if m.Result == nil {
		return "", fmt.Errorf("response frame %d has neither result nor error", f.Seq)
	}
	s := resultShape{isError: m.Result.IsError, structured: m.Result.StructuredContent}
	if string(s.structured) == "null" {
		s.structured = nil
	}
	b := &textBudget{left: maxText}
	f.code.known = true // Note: wireTextCode reads it, sparing a second decoding of a large frame.
	for _, c := range m.Result.Content {
		if c.Type == "text" {
			if len(s.texts) == 0 {
				f.code.n, f.code.ok = quotedCode(c.Text)
			}
			t, _ := b.cut(c.Text)
			s.texts = append(s.texts, t)
		} else {
			s.nonText++
		}
	}
	return s.surface(), nil
}

// The exception types of an observation.
const (
	// ExceptionRPC is the Go SDK's raised JSON-RPC error (*jsonrpc.Error).
	ExceptionRPC = "jsonrpc.Error"
	// exceptionOutputSchema is the error a validating client raises for a
	// result that breaks the tool's outputSchema.
	exceptionOutputSchema = "OutputSchemaError"
)

// observeError builds the minimized observation of a raised JSON-RPC error.
func observeError(e *jsonrpc.Error, sc *scrubber) (json.RawMessage, error) {
	var o study.ObsException
	o.Exception.Type = ExceptionRPC
	o.Exception.Error.Code = e.Code
	o.Exception.Error.Message = sc.text(e.Message)
	if len(e.Data) > 0 && string(e.Data) != "null" {
		var v any
		if err := json.Unmarshal(e.Data, &v); err != nil {
			sc.dropped = append(sc.dropped, "/error/data")
		} else if b, err := json.Marshal(sc.value(v)); err == nil {
			o.Exception.Error.Data = b
		}
	}
	return study.Marshal(o)
}

// observeRejection builds the observation of a validating client's
// rejection from the check (whose reason, quoting the tool's name and the
// server's data, the caller has scrubbed as failure text).
func observeRejection(c *study.OutputCheck) (json.RawMessage, error) {
	var o study.ObsException
	o.Exception.Type = exceptionOutputSchema
	o.Exception.Error.Code = int64(c.Code)
	o.Exception.Error.Message = c.Reason
	return study.Marshal(o)
}

// observeResult builds the minimized observation of a completed result:
// text blocks kept (scrubbed as failure text), other blocks reduced to
// their type and media type (scrubbed), _meta dropped, structuredContent
// scrubbed.
func observeResult(res *mcp.CallToolResult, sc *scrubber) (json.RawMessage, error) {
	var o study.ObsResult
	o.Result.IsError = res.IsError
	o.Result.Content = []any{}
	for i, c := range res.Content {
		var typ, mime, dropped string // an other block's type and media type, and what of it is dropped
		switch x := c.(type) {
		case *mcp.TextContent:
			o.Result.Content = append(o.Result.Content, study.TextBlock{Type: "text", Text: sc.text(x.Text)})
			if x.Meta != nil || x.Annotations != nil {
				sc.dropped = append(sc.dropped, fmt.Sprintf("/result/content/%d (meta, annotations)", i))
			}
			continue
		case *mcp.ImageContent:
			typ, mime, dropped = "image", x.MIMEType, "/data"
		case *mcp.AudioContent:
			typ, mime, dropped = "audio", x.MIMEType, "/data"
		case *mcp.ResourceLink:
			typ, mime, dropped = "resource_link", x.MIMEType, " (uri, name)"
		case *mcp.EmbeddedResource:
			typ, dropped = "resource", "/resource"
		default:
			typ = fmt.Sprintf("%T", c)
		}
		o.Result.Content = append(o.Result.Content, study.OtherBlock{Type: typ, MIMEType: sc.other(mime)})
		sc.dropped = append(sc.dropped, fmt.Sprintf("/result/content/%d%s", i, dropped))
	}
	if res.Meta != nil {
		sc.dropped = append(sc.dropped, "/result/_meta")
	}
	if res.StructuredContent != nil {
		v, err := recode[any](res.StructuredContent)
		if err != nil {
			return nil, err
		}
		if o.Result.StructuredContent, err = json.Marshal(sc.value(v)); err != nil {
			return nil, err
		}
	}
	return study.Marshal(o)
}

// CheckOutput is the optional client-side outputSchema check. It follows
// the rules the TypeScript SDK v1.32.2 client applies after listing tools
// (seed 003): with no known outputSchema it accepts (no_schema); a
// non-error result without structuredContent is rejected with -32600; any
// present structuredContent, on an error result too, must validate or is
// rejected with -32602.
func CheckOutput(tool *Tool, res *mcp.CallToolResult) study.OutputCheck {
	if tool == nil || tool.OutputSchema == nil {
		return study.OutputCheck{Verdict: study.OutputNoSchema}
	}
	present := truthy(res.StructuredContent)
	if !res.IsError && !present {
		return study.OutputCheck{Verdict: study.OutputRejected, Code: jsonrpc.CodeInvalidRequest,
			Reason: fmt.Sprintf("Tool %s has an output schema but did not return structured content", tool.Name)}
	}
	if !present {
		return study.OutputCheck{Verdict: study.OutputAccepted}
	}
	rs, err := resolveSchema(tool.OutputSchema)
	if err != nil {
		return study.OutputCheck{Verdict: study.OutputRejected, Code: jsonrpc.CodeInvalidParams,
			Reason: fmt.Sprintf("Tool %s has an output schema this client cannot use: %v", tool.Name, err)}
	}
	inst, err := recode[any](res.StructuredContent)
	if err == nil {
		err = rs.Validate(inst)
	}
	if err != nil {
		return study.OutputCheck{Verdict: study.OutputRejected, Code: jsonrpc.CodeInvalidParams,
			Reason: fmt.Sprintf("Structured content does not match the tool's output schema: %v", err)}
	}
	return study.OutputCheck{Verdict: study.OutputAccepted}
}

// truthy is JavaScript truthiness for a decoded JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case float64:
		return x != 0
	case int:
		return x != 0
	case json.RawMessage:
		var d any
		if json.Unmarshal(x, &d) != nil {
			return len(x) > 0
		}
		return truthy(d)
	}
	return true
}

// resolveSchema compiles a JSON Schema given as decoded JSON. Remote
// references are refused (no loader).
func resolveSchema(schema any) (*jsonschema.Resolved, error) {
	s, err := recode[jsonschema.Schema](schema)
	if err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// recode converts v to a T through its JSON encoding.
func recode[T any](v any) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	return out, err
}
