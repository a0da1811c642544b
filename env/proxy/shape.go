package proxy

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/study"
)

// reshaped is request's outcome for the decision d on call req when
// Reshape is set: the proxy's own answer, or the server's, passes
// through Reshape.
func (in *Injector) reshaped(req *jsonrpc.Request, d decision) (*jsonrpc.Request, *jsonrpc.Response, rewrite) {
	in.mu.Lock()
	c := in.calls[len(in.calls)-1]
	in.mu.Unlock()
	if d.reply != nil {
		return nil, in.Reshape(c, d.reply.response(req.ID)), nil
	}
	after := d.after
	d.after = func(r *jsonrpc.Response) *jsonrpc.Response {
		if after != nil {
			r = after(r)
		}
		return in.Reshape(c, r)
	}
	var params map[string]json.RawMessage
	json.Unmarshal(req.Params, &params) // request decoded them before
	return forward(req, params, d)
}

// ShapeAnswers returns a Reshape that serves every failed tools/call
// answer in error shape shape (study.ShapeConditions), as a server
// following the shape's proposals alone would send it
// (conditions.ShapeResult): a failure the proxy injected as fault f's
// class (its cause, code and target known), any other failure without a
// cause (moved and stripped of a contract, never classified). A success
// passes unchanged.
func ShapeAnswers(shape study.Condition, f *Fault) func(Call, *jsonrpc.Response) *jsonrpc.Response {
	return func(c Call, r *jsonrpc.Response) *jsonrpc.Response {
		obs, failed := observation(r)
		if !failed {
			return r
		}
		s := study.Scenario{ID: "proxy", Observation: obs}
		if r.Error != nil {
			s.Surface = study.ProtocolError
		} else {
			s.Surface = study.ToolError
		}
		if c.Injected != "" && c.Injected != Passed {
			info, _ := f.Class.Info()
			s.Cause, s.Code = f.Class, info.Code
			s.Target = study.Target{Kind: info.TargetKind, Name: f.Tool, Pointer: f.Pointer}
			if f.Class == study.RateLimit {
				s.Target = study.Target{Kind: "tool", Name: f.Tool} // the proxy stands for the server: its own limit
			}
			if len(info.Preferred) > 0 {
				s.Preferred = info.Preferred[0]
			}
		}
		raw, label, ok, err := conditions.ShapeResult(&s, shape)
		if err != nil || !ok {
			return r
		}
		if label == conditions.ShapeErrorLabel {
			var e jsonrpc.Error
			if json.Unmarshal(raw, &e) != nil {
				return r
			}
			return &jsonrpc.Response{ID: r.ID, Error: &e}
		}
		return &jsonrpc.Response{ID: r.ID, Result: raw}
	}
}

// observation is r as an observation ({"exception": …} or {"result":
// …}), and whether it reports a failure.
func observation(r *jsonrpc.Response) (json.RawMessage, bool) {
	if r.Error != nil {
		var e *jsonrpc.Error
		if x, ok := r.Error.(*jsonrpc.Error); ok {
			e = x
		} else {
			e = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: r.Error.Error()}
		}
		b, err := json.Marshal(map[string]any{"exception": map[string]any{"type": "jsonrpc.Error", "error": e}})
		return b, err == nil
	}
	if !isErrorResult(r.Result) {
		return nil, false
	}
	b, err := json.Marshal(map[string]json.RawMessage{"result": r.Result})
	return b, err == nil
}
