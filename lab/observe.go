package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpstress/stress/study"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The exception types of an observation.
const (
	// ExceptionRPC is a raised JSON-RPC error (*jsonrpc.Error), named as
	// capture names the Go SDK's (capture.ExceptionRPC).
	ExceptionRPC = "jsonrpc.Error"
	// ExceptionTimeout is the error a client raises when no answer arrives
	// before its deadline (code CodeTimeout).
	ExceptionTimeout = "timeout"
)

// TimeoutError is a client's deadline passing before the answer arrived.
type TimeoutError struct {
	After time.Duration // the deadline, from the request
}

// Error says how long the client waited.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("request timed out after %s", seconds(e.After))
}

// Observe returns the client-normalized observation of a tools/call, in the
// shape of study.Scenario's observation: {"exception": {"type", "error":
// {"code", "message", "data"?}}} when err is a JSON-RPC error
// (ExceptionRPC) or a timeout (ExceptionTimeout: a *TimeoutError, or
// context.DeadlineExceeded), else {"result": {"content": [...], "isError":
// …, "structuredContent"?, "_meta"?}} with text blocks kept (of _meta,
// only the ToolFailure classification, study.ToolFailureKey) and other blocks reduced
// to their type (and media type), as capture minimizes them.
// structuredContent and error.data are re-encoded (object members sorted),
// so an observation is the same whichever transport carried it. Any other
// error is returned.
func Observe(res *mcp.CallToolResult, err error) (json.RawMessage, error) {
	if err != nil {
		var o study.ObsException
		var rpc *jsonrpc.Error
		var to *TimeoutError
		switch {
		case errors.As(err, &rpc):
			o.Exception.Type = ExceptionRPC
			o.Exception.Error.Code = rpc.Code
			o.Exception.Error.Message = rpc.Message
			if d := bytes.TrimSpace(rpc.Data); len(d) > 0 && !bytes.Equal(d, []byte("null")) {
				b, err := canonical(d)
				if err != nil {
					return nil, fmt.Errorf("error.data: %w", err)
				}
				o.Exception.Error.Data = b
			}
		case errors.As(err, &to):
			o.Exception.Type = ExceptionTimeout
			o.Exception.Error.Code = CodeTimeout
			o.Exception.Error.Message = to.Error()
		case errors.Is(err, context.DeadlineExceeded):
			o.Exception.Type = ExceptionTimeout
			o.Exception.Error.Code = CodeTimeout
			o.Exception.Error.Message = "request timed out"
		default:
			return nil, err
		}
		return study.Marshal(o)
	}
	if res == nil {
		return nil, errors.New("no result and no error")
	}
	var o study.ObsResult
	o.Result.IsError = res.IsError
	o.Result.Content = []any{}
	for _, c := range res.Content {
		switch x := c.(type) {
		case *mcp.TextContent:
			o.Result.Content = append(o.Result.Content, study.TextBlock{Type: "text", Text: x.Text})
		case *mcp.ImageContent:
			o.Result.Content = append(o.Result.Content, study.OtherBlock{Type: "image", MIMEType: x.MIMEType})
		case *mcp.AudioContent:
			o.Result.Content = append(o.Result.Content, study.OtherBlock{Type: "audio", MIMEType: x.MIMEType})
		case *mcp.ResourceLink:
			o.Result.Content = append(o.Result.Content, study.OtherBlock{Type: "resource_link", MIMEType: x.MIMEType})
		case *mcp.EmbeddedResource:
			o.Result.Content = append(o.Result.Content, study.OtherBlock{Type: "resource"})
		default:
			o.Result.Content = append(o.Result.Content, study.OtherBlock{Type: fmt.Sprintf("%T", c)})
		}
	}
	// Note: of _meta only the ToolFailure classification is kept; the
	// rest (the SDK's serverInfo under 2026-07-28) describes the server,
	// not the failure.
	if tf, ok := res.Meta[study.ToolFailureKey]; ok {
		b, err := json.Marshal(map[string]any{study.ToolFailureKey: tf})
		if err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
		if o.Result.Meta, err = canonical(b); err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("structuredContent: %w", err)
		}
		if o.Result.StructuredContent, err = canonical(b); err != nil {
			return nil, fmt.Errorf("structuredContent: %w", err)
		}
	}
	return study.Marshal(o)
}

// canonical re-encodes a JSON value with object members sorted.
func canonical(raw []byte) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return study.Marshal(v)
}

// RetryAfter returns the wait an observation announces in its text ("retry
// after 30 s"), as a client or harness reading it would, and whether it
// announces one. The lab states every retry-after this way (the
// error-category contract has no member for it, so the contract carries it
// in its explanation).
func RetryAfter(obs json.RawMessage) (time.Duration, bool) { return study.AnnouncedWait(obs) }
