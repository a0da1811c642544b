package lab

import (
	"encoding/json"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/study"
)

// Revision2026 is the MCP revision whose rules the lab follows on a
// session that negotiated it (and in process): every result carries
// resultType, and no code of -32020 to -32099 that the revision does not
// define is sent (schema/2026-07-28/schema.ts and
// docs/specification/2026-07-28/basic/index.mdx of
// modelcontextprotocol/modelcontextprotocol at
// b0f60ba5409db7a6582440a7b473cc0398890f15).
const Revision2026 = "2026-07-28"

// metaProtocolVersion is the _meta key of a 2026-07-28 request's version
// (SEP-2575, as the Go SDK names it).
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// legacyCodes maps the lab's own JSON-RPC codes (study.CauseInfo.RPCCode)
// to those it sends on a session of a version before Revision2026: the
// codes it sent before that revision, in -32050 to -32055, so that such a
// session is answered byte for byte as before.
var legacyCodes = map[int64]int64{
	study.RPCUpstream:     -32050,
	study.RPCUnauthorized: -32051,
	study.RPCConflict:     -32052,
	study.RPCBusiness:     -32053,
	study.RPCRateLimited:  -32054,
	study.RPCLocked:       -32055,
}

// LegacyCode returns the code the lab sends for code on a session of a
// version before Revision2026: the lab's own codes as they were before it,
// any other code (the JSON-RPC standard ones, SEP-3304's -32023)
// unchanged.
func LegacyCode(code int64) int64 {
	if c, ok := legacyCodes[code]; ok {
		return c
	}
	return code
}

// modern reports whether version, a negotiated MCP version, follows
// Revision2026's rules. Note: an unknown version ("") is the latest, as
// the Go SDK reads a session without initialize parameters.
func modern(version string) bool { return version == "" || version >= Revision2026 }

// protocolOf returns the MCP version a request to the server follows: the
// version its own _meta names (a 2026-07-28 request carries one), else
// its session's negotiated version, else "".
func protocolOf(req mcp.Request) string {
	if req == nil {
		return ""
	}
	if p := req.GetParams(); p != nil && !isNilPointer(p) {
		if v, ok := p.GetMeta()[metaProtocolVersion].(string); ok && v != "" {
			return v
		}
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			return ip.ProtocolVersion
		}
	}
	return ""
}

// completeResult returns res with resultType "complete", as the Go SDK
// marks the results of the tools it holds on a 2026-07-28 session.
//
// Note: the SDK keeps resultType unexported and sets it only on the path
// of a tool it holds; an unknown tool's answer, which the lab's receiving
// middleware gives itself, takes it from the SDK's own decoding of
// {"resultType": "complete"}. Every exported field is copied over; a
// test checks the result is res's JSON with resultType added.
func completeResult(res *mcp.CallToolResult) *mcp.CallToolResult {
	var out mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"complete"}`), &out); err != nil {
		panic("lab: decoding a result type: " + err.Error()) // a constant the SDK reads
	}
	out.Meta, out.Content, out.StructuredContent, out.IsError = res.Meta, res.Content, res.StructuredContent, res.IsError
	out.InputRequests, out.RequestState = res.InputRequests, res.RequestState
	return &out
}

// isNilPointer reports whether v holds a nil pointer (a request without
// params).
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
