package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the version the lab's MCP servers announce.
const Version = "1.0.0"

// The lab's own JSON-RPC methods, for a harness that drives a served lab
// (they are not tools: a model never sees them).
const (
	MethodState   = "lab/state"   // returns StateResult
	MethodAdvance = "lab/advance" // takes AdvanceParams, returns StateResult; refused on the wall clock
)

// AdvanceParams are the parameters of lab/advance.
type AdvanceParams struct {
	mcp.ParamsBase
	MS int64 `json:"ms"` // lab-clock milliseconds to let pass (0 to MaxDurationMS)
}

// StateParams are the parameters of lab/state (none).
type StateParams struct {
	mcp.ParamsBase
}

// StateResult is what lab/state and lab/advance return: the outcome read
// from the lab's state (with the state itself).
type StateResult struct {
	mcp.ResultBase
	// ResultType is "complete" on a 2026-07-28 session, whose results all
	// carry it (Revision2026), and absent before.
	ResultType string  `json:"resultType,omitempty"`
	Scenario   string  `json:"scenario,omitempty"` // the armed scenario's id; "" for a healthy lab
	Virtual    bool    `json:"virtual"`            // the lab runs on a virtual clock
	Held       int     `json:"held"`               // answers held on the virtual clock (a timeout_committed call waiting for its deadline)
	Outcome    Outcome `json:"outcome"`            // the outcome now, with the state
}

// NewServer returns an MCP server (Go SDK) serving l: its tools, each
// tools/call answered by l.Call (an unknown tool too, so that the
// scenario's surface applies to it), and the methods lab/state and
// lab/advance. A call whose answer comes after the client's deadline (a
// timeout_committed scenario) is held until that much lab time has passed
// or the client cancels it.
//
// Each request is answered by the rules of the version it follows
// (protocolOf): on 2026-07-28 (Revision2026) every result carries
// resultType (the unknown tool's and lab/state's too) and the lab's own
// codes are outside the range that revision reserves, and the methods
// of the capabilities it does not declare (prompts, resources,
// completions) get -32601; before it, the lab's codes are its older ones
// (LegacyCode) and nothing else changes.
func NewServer(l *Lab) *mcp.Server {
	name := "lab"
	if l.sc != nil {
		name = Servers[l.sc.Server]
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Title: "stress recovery lab", Version: Version}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		Instructions: "A small shop, billing and file store for recovery experiments.",
	})
	handler := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return answer(ctx, l, req.Params.Name, req.Params.Arguments, protocolOf(req))
	}
	for _, t := range l.Tools() {
		srv.AddTool(t, handler)
	}
	// Note: the SDK answers a call to a tool it does not hold itself;
	// this middleware hands such calls to the lab, which answers on the
	// scenario's surface (the SDK's words on protocol_error).
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if undeclared[method] && modern(protocolOf(req)) {
				// Note: the Go SDK answers these with empty lists though the
				// lab declares only tools; 2026-07-28 says a method "gated
				// behind a server capability the server did not advertise"
				// gets -32601 (schema/2026-07-28/schema.ts,
				// MethodNotFoundError). Earlier sessions keep the SDK's
				// answers.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q: the lab declares no %s capability", method, strings.SplitN(method, "/", 2)[0])}
			}
			if method == "tools/call" {
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
					if _, known := l.tools[p.Name]; !known {
						version := protocolOf(req)
						res, err := answer(ctx, l, p.Name, p.Arguments, version)
						if err == nil && modern(version) {
							res = completeResult(res) // the SDK's path for held tools would have added it
						}
						return res, err
					}
				}
			}
			return next(ctx, method, req)
		}
	})
	must(mcp.AddReceivingCustomMethod(srv, MethodState, func(ctx context.Context, ss *mcp.ServerSession, p *StateParams) (*StateResult, error) {
		return stateResult(l, customProtocol(ss, p)), nil
	}))
	must(mcp.AddReceivingCustomMethod(srv, MethodAdvance, func(ctx context.Context, ss *mcp.ServerSession, p *AdvanceParams) (*StateResult, error) {
		if !l.clock.Virtual() {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the lab runs on the wall clock (-realtime); lab/advance needs the virtual clock"}
		}
		if p == nil || p.MS < 0 || p.MS > MaxDurationMS {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("ms must be 0 to %d", MaxDurationMS)}
		}
		l.clock.Advance(time.Duration(p.MS) * time.Millisecond)
		return stateResult(l, customProtocol(ss, p)), nil
	}))
	return srv
}

// undeclared are the methods of the capabilities the lab does not
// declare (prompts, resources, completions).
var undeclared = map[string]bool{
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true,
}

func must(err error) {
	if err != nil {
		panic("lab: " + err.Error())
	}
}

// customProtocol returns the version a custom method's request follows:
// its params' _meta, else the session's (protocolOf).
func customProtocol(ss *mcp.ServerSession, p mcp.Params) string {
	return protocolOf(&mcp.ServerRequest[mcp.Params]{Session: ss, Params: p})
}

func stateResult(l *Lab, version string) *StateResult {
	r := &StateResult{Virtual: l.clock.Virtual(), Outcome: l.Outcome()}
	if modern(version) {
		r.ResultType = "complete"
	}
	if vc, ok := l.clock.(*VirtualClock); ok {
		r.Held = vc.Sleepers()
	}
	if l.sc != nil {
		r.Scenario = l.sc.ID
	}
	return r
}

// answer is the tools/call handler: the lab's response as the SDK sends
// it on a session of version (the lab's older codes before Revision2026).
func answer(ctx context.Context, l *Lab, name string, raw json.RawMessage, version string) (*mcp.CallToolResult, error) {
	r := l.Call(name, raw)
	if r.Timeout > 0 {
		// The write is applied; the answer is held past the client's
		// deadline, as a slow upstream would hold it.
		if err := l.clock.Sleep(ctx, r.Timeout); err != nil {
			return nil, err
		}
	}
	if r.Err != nil {
		if !modern(version) {
			e := *r.Err
			e.Code = LegacyCode(e.Code)
			return nil, &e
		}
		return nil, r.Err
	}
	if r.Result == nil {
		return nil, errors.New("lab: no answer") // unreachable: every response has one
	}
	return r.Result, nil
}
