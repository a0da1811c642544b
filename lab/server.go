package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	Scenario string  `json:"scenario,omitempty"` // the armed scenario's id; "" for a healthy lab
	Virtual  bool    `json:"virtual"`            // the lab runs on a virtual clock
	Held     int     `json:"held"`               // answers held on the virtual clock (a timeout_committed call waiting for its deadline)
	Outcome  Outcome `json:"outcome"`            // the outcome now, with the state
}

// NewServer returns an MCP server (Go SDK) serving l: its tools, each
// tools/call answered by l.Call (an unknown tool too, so that the
// scenario's surface applies to it), and the methods lab/state and
// lab/advance. A call whose answer comes after the client's deadline (a
// timeout_committed scenario) is held until that much lab time has passed
// or the client cancels it.
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
		return answer(ctx, l, req.Params.Name, req.Params.Arguments)
	}
	for _, t := range l.Tools() {
		srv.AddTool(t, handler)
	}
	// Note: the SDK answers a call to a tool it does not hold itself;
	// this middleware hands such calls to the lab, which answers on the
	// scenario's surface (the SDK's words on protocol_error).
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
					if _, known := l.tools[p.Name]; !known {
						return answer(ctx, l, p.Name, p.Arguments)
					}
				}
			}
			return next(ctx, method, req)
		}
	})
	must(mcp.AddReceivingCustomMethod(srv, MethodState, func(ctx context.Context, _ *mcp.ServerSession, _ *StateParams) (*StateResult, error) {
		return stateResult(l), nil
	}))
	must(mcp.AddReceivingCustomMethod(srv, MethodAdvance, func(ctx context.Context, _ *mcp.ServerSession, p *AdvanceParams) (*StateResult, error) {
		if !l.clock.Virtual() {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the lab runs on the wall clock (-realtime); lab/advance needs the virtual clock"}
		}
		if p == nil || p.MS < 0 || p.MS > MaxDurationMS {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("ms must be 0 to %d", MaxDurationMS)}
		}
		l.clock.Advance(time.Duration(p.MS) * time.Millisecond)
		return stateResult(l), nil
	}))
	return srv
}

func must(err error) {
	if err != nil {
		panic("lab: " + err.Error())
	}
}

func stateResult(l *Lab) *StateResult {
	r := &StateResult{Virtual: l.clock.Virtual(), Outcome: l.Outcome()}
	if vc, ok := l.clock.(*VirtualClock); ok {
		r.Held = vc.Sleepers()
	}
	if l.sc != nil {
		r.Scenario = l.sc.ID
	}
	return r
}

// answer is the tools/call handler: the lab's response as the SDK sends
// it.
func answer(ctx context.Context, l *Lab, name string, raw json.RawMessage) (*mcp.CallToolResult, error) {
	r := l.Call(name, raw)
	if r.Timeout > 0 {
		// The write is applied; the answer is held past the client's
		// deadline, as a slow upstream would hold it.
		if err := l.clock.Sleep(ctx, r.Timeout); err != nil {
			return nil, err
		}
	}
	if r.Err != nil {
		return nil, r.Err
	}
	if r.Result == nil {
		return nil, errors.New("lab: no answer") // unreachable: every response has one
	}
	return r.Result, nil
}
