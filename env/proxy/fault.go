// Package proxy is a fault-injecting MCP proxy: it sits between an MCP
// client and any MCP server (a command over stdio, or a streamable HTTP
// endpoint), applies one declared Fault to the calls of one tool, and
// passes everything else through unchanged. It relays JSON-RPC messages
// (the Go SDK's mcp.Connection) and never builds a session of its own, so
// initialize, notifications, pings, server-to-client requests and every
// method it does not know reach the other side as they were sent.
//
// Wrap and Command give a client-side mcp.Transport (in process), Serve
// relays between two transports (stress proxy over stdio), and Handler is
// a streamable-HTTP reverse proxy. An Injector applies the Fault and
// records every tools/call it saw (Calls).
package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/study"
)

// Fault is one scenario's fault, declared as data (JSON, decoded with
// unknown fields refused: ParseFault). Which fields a class takes is
// fixed (classes); Check refuses any other.
type Fault struct {
	// Tool is the tool whose calls the fault affects; calls of other
	// tools pass through.
	Tool string `json:"tool"`
	// Class is the failure class: transient, rate_limit, authentication,
	// unknown_tool, invalid_type, invalid_value, upstream_outage,
	// timeout_committed, partial_commit or silent_noop.
	Class study.Cause `json:"class"`
	// Surface is how an injected failure is rendered: protocol_error (the
	// default: a JSON-RPC error with the class's study RPCCode) or
	// tool_error (a result with isError true).
	Surface study.Surface `json:"surface,omitempty"`
	// Message is the failure's text; the default is built from the
	// class's Words. A rate limit's text always ends with "retry after N
	// s" (study.AnnouncedWait reads it), appended to Message.
	Message string `json:"message,omitempty"`
	// K is how many matching calls are affected, the first k (default 1):
	// transient, timeout_committed, partial_commit, silent_noop and, when
	// set, invalid_type and invalid_value.
	K *int `json:"k,omitempty"`
	// ForMS is transient's alternative to K: calls fail until the clock
	// passes for_ms after the first call.
	ForMS *int64 `json:"for_ms,omitempty"`
	// WindowMS is rate_limit's window: calls fail until window_ms after
	// the first; a call inside the window restarts it (the lab's "extend"
	// penalty); the text announces the remaining wait.
	WindowMS *int64 `json:"window_ms,omitempty"`
	// AuthTool is authentication's tool: the proxy adds it (no arguments)
	// to tools/list and answers it itself; calls of Tool fail until it
	// has been called once.
	AuthTool string `json:"auth_tool,omitempty"`
	// Pointer is a JSON pointer into the call's arguments: for
	// invalid_type and invalid_value the argument at fault, for
	// partial_commit the array that is cut, or the string that is a
	// batch of SQL statements (execute_sql's sql), cut at its semicolons.
	Pointer string `json:"pointer,omitempty"`
	// Value is, for invalid_type and invalid_value, the refused value:
	// calls whose argument at Pointer equals it (as JSON values) are
	// refused, every time unless K is set.
	Value json.RawMessage `json:"value,omitempty"`
	// At is partial_commit's cut: the first at items of the array at
	// Pointer are forwarded, then the client gets a failure saying only
	// at of n items were applied.
	At *int `json:"at,omitempty"`
	// DeadlineMS is timeout_committed's deadline: the call is forwarded
	// and the server's answer discarded; the client gets the JSON-RPC
	// error -32001 "Request timed out after N s" and the injector's clock
	// is advanced by deadline_ms.
	DeadlineMS *int64 `json:"deadline_ms,omitempty"`
	// Answer is silent_noop's answer: the CallToolResult (not isError)
	// the proxy answers with, without forwarding.
	Answer json.RawMessage `json:"answer,omitempty"`
}

// MaxDurationMS is the longest duration a fault may give, in
// milliseconds (one day, as the lab's).
const MaxDurationMS = 24 * 60 * 60 * 1000

// class is what one fault class takes and needs.
type class struct {
	takes, needs []string
}

// common are the fields every class but silent_noop takes.
var common = []string{"surface", "message"}

// classes are the classes the proxy injects, with their fields beyond
// tool and class.
var classes = map[study.Cause]class{
	study.Transient:        {takes: []string{"k", "for_ms"}},
	study.RateLimit:        {takes: []string{"window_ms"}, needs: []string{"window_ms"}},
	study.AuthRequired:     {takes: []string{"auth_tool"}, needs: []string{"auth_tool"}},
	study.UnknownTool:      {},
	study.InvalidType:      {takes: []string{"pointer", "value", "k"}, needs: []string{"pointer", "value"}},
	study.InvalidValue:     {takes: []string{"pointer", "value", "k"}, needs: []string{"pointer", "value"}},
	study.UpstreamOutage:   {},
	study.TimeoutCommitted: {takes: []string{"deadline_ms", "k"}, needs: []string{"deadline_ms"}},
	study.PartialCommit:    {takes: []string{"pointer", "at", "k"}, needs: []string{"pointer", "at"}},
	study.SilentNoop:       {takes: []string{"answer", "k"}, needs: []string{"answer"}},
}

// Classes lists the classes the proxy injects, in study.Causes order.
var Classes = func() []study.Cause {
	var out []study.Cause
	for _, c := range study.Causes {
		if _, ok := classes[c]; ok {
			out = append(out, c)
		}
	}
	return out
}()

// ParseFault decodes and checks a fault file; errors name file and the
// field ("fault.json: field window_ms: rate_limit needs window_ms").
func ParseFault(file string, data []byte) (*Fault, error) {
	data, err := input.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := input.CheckJSON(data); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	f := &Fault{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return nil, fmt.Errorf("%s: %w", file, decodeProblem(err))
	}
	if at := dec.InputOffset(); input.Trailing(dec) {
		return nil, fmt.Errorf("%s: data after the JSON object at byte %d", file, at)
	}
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return f, nil
}

// decodeProblem names the field of a decoding error where it can.
func decodeProblem(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("field %s: %s is not a %s", te.Field, te.Value, te.Type)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("field %s: no such field of a fault", strings.Trim(name, `"`))
	}
	return err
}

// FieldError is a problem of one field of a fault.
type FieldError struct {
	Field string // the field's JSON name
	Msg   string
}

func (e *FieldError) Error() string { return "field " + e.Field + ": " + e.Msg }

// given returns the names of the optional fields f sets.
func (f *Fault) given() []string {
	var out []string
	add := func(set bool, name string) {
		if set {
			out = append(out, name)
		}
	}
	add(f.Surface != "", "surface")
	add(f.Message != "", "message")
	add(f.K != nil, "k")
	add(f.ForMS != nil, "for_ms")
	add(f.WindowMS != nil, "window_ms")
	add(f.AuthTool != "", "auth_tool")
	add(f.Pointer != "", "pointer")
	add(len(f.Value) > 0, "value")
	add(f.At != nil, "at")
	add(f.DeadlineMS != nil, "deadline_ms")
	add(len(f.Answer) > 0, "answer")
	return out
}

// Check checks f: the class is one the proxy injects, it sets the
// fields its class needs and no field its class does not take, and
// every value is possible. The error is a *FieldError ("field at:
// ..."), for a fault decoded elsewhere (a scenario file that embeds one).
func (f *Fault) Check() error {
	bad := func(field, format string, a ...any) error {
		return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	if f == nil {
		return bad("class", "no fault")
	}
	if strings.TrimSpace(f.Tool) == "" {
		return bad("tool", "name the tool whose calls the fault affects")
	}
	c, ok := classes[f.Class]
	if !ok {
		if f.Class == "" {
			return bad("class", "missing; want one of %v", Classes)
		}
		return bad("class", "%q is not a class the proxy injects (want one of %v)", f.Class, Classes)
	}
	takes := c.takes
	if f.Class != study.SilentNoop {
		takes = append(slices.Clone(common), takes...)
	}
	given := f.given()
	for _, name := range given {
		if !slices.Contains(takes, name) {
			return bad(name, "%s takes no %s", f.Class, name)
		}
	}
	for _, name := range c.needs {
		if !slices.Contains(given, name) {
			return bad(name, "%s needs %s", f.Class, name)
		}
	}
	switch f.Surface {
	case "", study.ProtocolError, study.ToolError:
	default:
		return bad("surface", "%q is not protocol_error or tool_error", f.Surface)
	}
	if f.K != nil && *f.K < 1 {
		return bad("k", "k is %d, a fault acts on 1 or more calls", *f.K)
	}
	if f.K != nil && f.ForMS != nil {
		return bad("for_ms", "transient takes k or for_ms, not both")
	}
	for _, d := range []struct {
		name string
		v    *int64
	}{{"for_ms", f.ForMS}, {"window_ms", f.WindowMS}, {"deadline_ms", f.DeadlineMS}} {
		if d.v != nil && (*d.v <= 0 || *d.v > MaxDurationMS) {
			return bad(d.name, "%s is %d, want 1 to %d", d.name, *d.v, MaxDurationMS)
		}
	}
	if f.At != nil && *f.At < 1 {
		return bad("at", "at is %d, a partial commit applies 1 or more items", *f.At)
	}
	if f.Class == study.AuthRequired && f.AuthTool == f.Tool {
		return bad("auth_tool", "the credential tool must not be the tool the fault affects (%s)", f.Tool)
	}
	if f.Pointer != "" {
		if _, err := splitPointer(f.Pointer); err != nil {
			return bad("pointer", "%v", err)
		}
	}
	if len(f.Value) > 0 && !json.Valid(f.Value) {
		return bad("value", "not JSON")
	}
	if len(f.Answer) > 0 {
		var r mcp.CallToolResult
		if err := json.Unmarshal(f.Answer, &r); err != nil {
			return bad("answer", "not a CallToolResult: %v", err)
		}
		if r.IsError {
			return bad("answer", "a silent no-op answers success-shaped: isError must be false or absent")
		}
		if len(r.Content) == 0 && r.StructuredContent == nil {
			return bad("answer", "no content: a silent no-op answers with a result the client can read")
		}
	}
	return nil
}

// splitPointer splits a JSON pointer (RFC 6901) into its unescaped
// tokens; the root ("") is refused: a fault names an argument.
func splitPointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer to an argument (want /NAME…)", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(s, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("%q has a bad escape in %q", p, s)
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}
