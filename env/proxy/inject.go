package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/study"
)

// Clock returns the time since the start on the scenario's clock: an
// environment advances it by the waits the model asks for; stress proxy
// uses wall time.
type Clock func() time.Duration

// WallClock returns a Clock of wall time since now.
func WallClock() Clock {
	t0 := time.Now()
	return func() time.Duration { return time.Since(t0) }
}

// CodeTimeout is the JSON-RPC code of timeout_committed's failure on the
// protocol_error surface (the TypeScript SDK's RequestTimeout).
const CodeTimeout = -32001

// What an Injector did with a call (Call.Injected).
const (
	Passed  = ""        // passed through
	Failed  = "failed"  // answered with a failure, not forwarded
	Lost    = "lost"    // forwarded, the server's answer replaced by a timeout
	Partial = "partial" // forwarded with the array cut, answered with a partial failure
	Noop    = "noop"    // answered success-shaped, not forwarded
	Auth    = "auth"    // the credential tool, answered by the proxy
)

// Call is one tools/call the proxy saw.
type Call struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Forwarded are the arguments the server received (cut by
	// partial_commit), or nil when the call was not forwarded.
	Forwarded json.RawMessage `json:"forwarded,omitempty"`
	// Injected is what the proxy did: "" (passed through), "failed",
	// "lost", "partial", "noop" or "auth".
	Injected string `json:"injected,omitempty"`
}

// Injector applies one Fault to the calls it is shown; it is safe for
// concurrent use.
type Injector struct {
	// MaxMessageBytes bounds each JSON-RPC message the proxy relays, in
	// bytes of JSON; 0 means mcp.DefaultMaxLineLength (the Go SDK's
	// bound of a stdio frame). A request over it is refused, an answer
	// over it replaced by a JSON-RPC error, a notification over it
	// dropped. Set it before the injector is used.
	MaxMessageBytes int
	// Reshape, when set, rewrites the answer of every tools/call before
	// the client gets it, the proxy's own and the server's, given the
	// call as Calls records it (Injected says whether the proxy made the
	// failure): an error shape proposed for MCP is served with it
	// (ShapeAnswers). Set it before the injector is used.
	Reshape func(c Call, r *jsonrpc.Response) *jsonrpc.Response

	f     *Fault
	clock Clock

	mu          sync.Mutex
	calls       []Call
	fired       int           // calls the fault affected
	started     bool          // a call of the tool was seen
	first       time.Duration // when (transient for_ms)
	windowUntil time.Duration // rate_limit: the window's end
	authed      bool          // authentication: the credential tool was called
	advanced    time.Duration // timeout_committed: the deadlines that passed
}

// NewInjector returns an injector of f (checked with Check first) on
// clock (nil: wall time).
func NewInjector(f *Fault, clock Clock) *Injector {
	if clock == nil {
		clock = WallClock()
	}
	return &Injector{f: f, clock: clock}
}

// Fault returns the injector's fault.
func (in *Injector) Fault() *Fault { return in.f }

// Calls lists every tools/call the proxy saw, in order.
func (in *Injector) Calls() []Call {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]Call, len(in.calls))
	for i, c := range in.calls {
		c.Arguments = bytes.Clone(c.Arguments)
		c.Forwarded = bytes.Clone(c.Forwarded)
		out[i] = c
	}
	return out
}

// Advanced returns how far timeout_committed moved the injector's clock
// past the scenario's: the deadlines of the calls it lost. An
// environment adds it to its own clock.
func (in *Injector) Advanced() time.Duration {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.advanced
}

// Now returns the injector's time: the clock plus Advanced.
func (in *Injector) Now() time.Duration {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.now()
}

func (in *Injector) now() time.Duration { return in.clock() + in.advanced }

func (in *Injector) limit() int {
	if in.MaxMessageBytes > 0 {
		return in.MaxMessageBytes
	}
	return mcp.DefaultMaxLineLength
}

// An answer is the proxy's answer to a request: a result or an error.
type answer struct {
	result json.RawMessage
	err    *jsonrpc.Error
}

func (a *answer) response(id jsonrpc.ID) *jsonrpc.Response {
	if a.err != nil {
		return &jsonrpc.Response{ID: id, Error: a.err}
	}
	return &jsonrpc.Response{ID: id, Result: a.result}
}

// A rewrite changes the server's answer to a forwarded request.
type rewrite func(*jsonrpc.Response) *jsonrpc.Response

// request decides what becomes of a request from the client: the
// proxy's own answer (reply, not forwarded), or the request to forward
// (the same or changed) and the rewrite of its answer (nil: none).
func (in *Injector) request(req *jsonrpc.Request) (fwd *jsonrpc.Request, reply *jsonrpc.Response, rw rewrite) {
	switch req.Method {
	case "tools/list":
		return req, nil, in.listRewrite(req)
	case "tools/call":
	default:
		return req, nil, nil
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(req.Params, &params); err != nil {
		return req, nil, nil // the server answers a malformed call
	}
	var name string
	if err := json.Unmarshal(params["name"], &name); err != nil {
		return req, nil, nil
	}
	args := params["arguments"]
	d := in.decide(name, args)
	if in.Reshape != nil {
		return in.reshaped(req, d)
	}
	if d.reply != nil {
		return nil, d.reply.response(req.ID), nil
	}
	return forward(req, params, d)
}

// forward is the request a decision forwards, with its cut arguments,
// and the rewrite of its answer.
func forward(req *jsonrpc.Request, params map[string]json.RawMessage, d decision) (*jsonrpc.Request, *jsonrpc.Response, rewrite) {
	if d.args != nil {
		params["arguments"] = d.args
		p, err := json.Marshal(params)
		if err != nil {
			return nil, errorResponse(req.ID, jsonrpc.CodeInternalError, "stress proxy: "+err.Error()), nil
		}
		req = &jsonrpc.Request{ID: req.ID, Method: req.Method, Params: p}
	}
	return req, nil, d.after
}

// A decision is what becomes of one call.
type decision struct {
	reply *answer         // answered by the proxy, not forwarded
	args  json.RawMessage // forwarded with these arguments instead
	after rewrite         // the server's answer replaced
}

// decide applies the fault to a call of tool name with args and records
// the call.
func (in *Injector) decide(name string, args json.RawMessage) decision {
	in.mu.Lock()
	defer in.mu.Unlock()
	c := Call{Tool: name, Arguments: bytes.Clone(args)}
	d := in.decideLocked(name, args, &c)
	if d.reply == nil {
		c.Forwarded = c.Arguments
		if d.args != nil {
			c.Forwarded = bytes.Clone(d.args)
		}
	}
	in.calls = append(in.calls, c)
	return d
}

func (in *Injector) decideLocked(name string, args json.RawMessage, c *Call) decision {
	f := in.f
	fail := func(text string) decision {
		c.Injected = Failed
		in.fired++
		return decision{reply: in.failure(text)}
	}
	if f.Class == study.AuthRequired && name == f.AuthTool {
		in.authed = true
		c.Injected = Auth
		return decision{reply: &answer{result: textResult(fmt.Sprintf("A fresh credential for the server was issued; calls of %s are authorized again.", f.Tool), false)}}
	}
	if name != f.Tool {
		return decision{}
	}
	info, _ := f.Class.Info()
	now := in.now()
	first := !in.started
	if first {
		in.started, in.first = true, now
	}
	switch f.Class {
	case study.Transient:
		if f.ForMS != nil {
			until := in.first + ms(*f.ForMS)
			if now >= until {
				return decision{}
			}
			return fail(in.text(fmt.Sprintf("%s failed: %s (503); nothing was changed; retry after %s", f.Tool, info.Words, seconds(until-now))))
		}
		if in.fired >= f.k() {
			return decision{}
		}
		return fail(in.text(fmt.Sprintf("%s failed: %s (503); nothing was changed", f.Tool, info.Words)))
	case study.RateLimit:
		if !first && now >= in.windowUntil {
			return decision{}
		}
		in.windowUntil = now + ms(*f.WindowMS) // the first call opens it, a call inside restarts it
		wait := "retry after " + seconds(ms(*f.WindowMS))
		if f.Message != "" {
			return fail(f.Message + ": " + wait)
		}
		return fail(fmt.Sprintf("%s failed: %s; %s", f.Tool, info.Words, wait))
	case study.AuthRequired:
		if in.authed {
			return decision{}
		}
		return fail(in.text(fmt.Sprintf("%s failed: %s (authentication required)", f.Tool, info.Words)))
	case study.UnknownTool:
		return fail(in.text(fmt.Sprintf("unknown tool %q", f.Tool)))
	case study.UpstreamOutage:
		return fail(in.text(fmt.Sprintf("%s failed: %s; nothing was changed", f.Tool, info.Words)))
	case study.InvalidType, study.InvalidValue:
		if f.K != nil && in.fired >= *f.K {
			return decision{}
		}
		path, _ := splitPointer(f.Pointer)
		v, ok := lookup(args, path)
		if !ok || !sameJSON(v, f.Value) {
			return decision{}
		}
		return fail(in.text(fmt.Sprintf("invalid params: %s (%s)", info.Words, f.Pointer)))
	case study.TimeoutCommitted:
		if in.fired >= f.k() {
			return decision{}
		}
		in.fired++
		c.Injected = Lost
		d := ms(*f.DeadlineMS)
		in.advanced += d
		var fail *answer
		if f.Surface == study.ToolError {
			fail = &answer{result: textResult(in.text(fmt.Sprintf("%s failed: %s (no answer within %s)", f.Tool, info.Words, seconds(d))), true)}
		} else {
			fail = &answer{err: &jsonrpc.Error{Code: CodeTimeout, Message: in.text("Request timed out after " + seconds(d))}}
		}
		return decision{after: func(r *jsonrpc.Response) *jsonrpc.Response { return fail.response(r.ID) }}
	case study.PartialCommit:
		if in.fired >= f.k() {
			return decision{}
		}
		path, _ := splitPointer(f.Pointer)
		cut, n, ok := cutAt(args, path, *f.At)
		if !ok {
			return decision{} // no array longer than at to cut
		}
		in.fired++
		c.Injected = Partial
		at := *f.At
		applied := fmt.Sprintf("items 1 to %d were applied", at)
		if at == 1 {
			applied = "item 1 was applied"
		}
		fail := in.failure(in.text(fmt.Sprintf("%s failed at item %d of %d: %s; %s, the rest were not", f.Tool, at+1, n, info.Words, applied)))
		return decision{args: cut, after: func(r *jsonrpc.Response) *jsonrpc.Response {
			if r.Error != nil || isErrorResult(r.Result) {
				return r // the cut call failed itself: nothing to claim applied
			}
			return fail.response(r.ID)
		}}
	case study.SilentNoop:
		if in.fired >= f.k() {
			return decision{}
		}
		in.fired++
		c.Injected = Noop
		return decision{reply: &answer{result: bytes.Clone(f.Answer)}}
	}
	return decision{}
}

// text returns the fault's message, or def.
func (in *Injector) text(def string) string {
	if in.f.Message != "" {
		return in.f.Message
	}
	return def
}

// failure renders a failure's text on the fault's surface.
func (in *Injector) failure(text string) *answer {
	if in.f.Surface == study.ToolError {
		return &answer{result: textResult(text, true)}
	}
	info, _ := in.f.Class.Info()
	return &answer{err: &jsonrpc.Error{Code: info.RPCCode, Message: text}}
}

// listRewrite returns the rewrite of a tools/list answer: unknown_tool
// hides the tool; authentication adds the credential tool (on the first
// page, a request without a cursor).
func (in *Injector) listRewrite(req *jsonrpc.Request) rewrite {
	f := in.f
	if f.Class != study.UnknownTool && f.Class != study.AuthRequired {
		return nil
	}
	var p struct {
		Cursor string `json:"cursor"`
	}
	_ = json.Unmarshal(req.Params, &p)
	add := f.Class == study.AuthRequired && p.Cursor == ""
	hide := f.Tool
	if f.Class == study.AuthRequired {
		hide = f.AuthTool // the proxy's own tool shadows a server's of the same name
	}
	return func(r *jsonrpc.Response) *jsonrpc.Response {
		if r.Error != nil {
			return r
		}
		var res map[string]json.RawMessage
		var tools []json.RawMessage
		if json.Unmarshal(r.Result, &res) != nil || json.Unmarshal(res["tools"], &tools) != nil {
			return r
		}
		kept := tools[:0]
		for _, t := range tools {
			var x struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(t, &x) == nil && x.Name == hide {
				continue
			}
			kept = append(kept, t)
		}
		if add {
			t, _ := json.Marshal(&mcp.Tool{Name: f.AuthTool, Description: "Obtain a fresh credential for the server",
				InputSchema: map[string]any{"type": "object", "properties": map[string]any{}}})
			kept = append(kept, t)
		}
		var err error
		if res["tools"], err = json.Marshal(kept); err != nil {
			return r
		}
		out, err := json.Marshal(res)
		if err != nil {
			return r
		}
		return &jsonrpc.Response{ID: r.ID, Result: out}
	}
}

func (f *Fault) k() int {
	if f.K == nil {
		return 1
	}
	return *f.K
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// seconds writes a wait as the lab does: "250 ms" under a second, else
// whole seconds rounded up ("retry after 30 s").
func seconds(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", max(d.Milliseconds(), 1))
	}
	return fmt.Sprintf("%d s", (d+time.Second-1)/time.Second)
}

// textResult is a CallToolResult of one text block.
func textResult(text string, isError bool) json.RawMessage {
	b, _ := json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError})
	return b
}

func isErrorResult(raw json.RawMessage) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(raw, &r) == nil && r.IsError
}

func errorResponse(id jsonrpc.ID, code int64, msg string) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}}
}

// lookup returns the value at path in raw.
func lookup(raw json.RawMessage, path []string) (json.RawMessage, bool) {
	for _, tok := range path {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil {
			v, ok := m[tok]
			if !ok {
				return nil, false
			}
			raw = v
			continue
		}
		var a []json.RawMessage
		i, err := strconv.Atoi(tok)
		if json.Unmarshal(raw, &a) != nil || err != nil || i < 0 || i >= len(a) {
			return nil, false
		}
		raw = a[i]
	}
	return raw, len(raw) > 0
}

// cutAt returns raw with the array at path cut to its first at items
// (a string there is a batch of SQL statements, cut by cutBatch),
// and the array's length; ok is false when there is no array longer
// than at there.
func cutAt(raw json.RawMessage, path []string, at int) (out json.RawMessage, n int, ok bool) {
	if len(path) == 0 {
		if len(raw) > 0 && raw[0] == '"' {
			return cutBatch(raw, at) // a batch of SQL statements
		}
		var a []json.RawMessage
		if json.Unmarshal(raw, &a) != nil || len(a) <= at {
			return nil, 0, false
		}
		b, err := json.Marshal(a[:at])
		return b, len(a), err == nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		v, has := m[path[0]]
		if !has {
			return nil, 0, false
		}
		if m[path[0]], n, ok = cutAt(v, path[1:], at); !ok {
			return nil, 0, false
		}
		b, err := json.Marshal(m)
		return b, n, err == nil
	}
	var a []json.RawMessage
	i, err := strconv.Atoi(path[0])
	if json.Unmarshal(raw, &a) != nil || err != nil || i < 0 || i >= len(a) {
		return nil, 0, false
	}
	if a[i], n, ok = cutAt(a[i], path[1:], at); !ok {
		return nil, 0, false
	}
	b, err := json.Marshal(a)
	return b, n, err == nil
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
