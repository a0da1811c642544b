// Package checkmatrix reproduces the client-check experiment of seed 003:
// how a client treats tool results, isError ones included, against the
// tool's outputSchema. A small in-process Go MCP server (the SDK's low-level
// Server.AddTool, so no server-side output check interferes) returns six
// result shapes; a client that listed tools first and a cold one call it.
// The clients are the Go SDK client (over in-memory transports), the same
// results judged by capture's optional client-side check
// (capture.CheckOutput, an emulation of the TypeScript SDK v1.32.2 rules),
// and the real TypeScript clients of the seed, @modelcontextprotocol/sdk
// 1.32.2 and @modelcontextprotocol/client 2.4.0, run by Node.js
// (scripts/ts-clients/check.mjs) over streamable HTTP on the loopback.
package checkmatrix

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/capture"
	"github.com/mcpstress/stress/study"
)

// toolName is the fixture's one tool.
const toolName = "measure"

// outputSchema is the tool's declared output: one required number, nothing
// else (seed 003).
var outputSchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"value": map[string]any{"type": "number"}},
	"required":             []any{"value"},
	"additionalProperties": false,
}

// shape is one result the fixture server returns.
type shape struct {
	Name   string // identifier, passed as the "shape" argument
	Label  string // for the table
	Result func() *mcp.CallToolResult
}

func text(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }

// shapes are the six result shapes of seed 003, in its order.
var shapes = []shape{
	{"conforming_success", `success, conforming {"value":7}`, func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: text(`{"value":7}`), StructuredContent: map[string]any{"value": 7}}
	}},
	{"offschema_success", `success, off-schema {"error":"unavailable"}`, func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: text(`{"error":"unavailable"}`), StructuredContent: map[string]any{"error": "unavailable"}}
	}},
	{"success_without_structured", "success without structuredContent", func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: text("7")}
	}},
	{"error_text_only", "isError, text only", func() *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: text("The measurement is unavailable.")}
	}},
	{"error_offschema", `isError, off-schema {"error":"unavailable"}`, func() *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: text("The measurement is unavailable."), StructuredContent: map[string]any{"error": "unavailable"}}
	}},
	{"error_conforming", `isError, conforming {"value":0}`, func() *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: text("The measurement is unavailable."), StructuredContent: map[string]any{"value": 0}}
	}},
}

// The Go clients of the matrix (the TypeScript ones are clientTSv1 and
// clientTSv2).
const (
	clientGoSDK      = "go-sdk"     // the Go SDK client as is
	clientValidating = "validating" // the Go SDK client plus capture.CheckOutput
)

// Cell is one client's handling of one shape.
type Cell struct {
	Shape      string `json:"shape"`
	Client     string `json:"client"`     // "go-sdk", "validating" (plus capture.CheckOutput), "ts-v1" or "ts-v2"
	Discovered bool   `json:"discovered"` // the client listed tools before calling
	Returned   bool   `json:"returned"`   // the call returned a result to the caller
	IsError    bool   `json:"is_error"`   // the returned result's isError
	Structured string `json:"structured"` // the returned structuredContent, compact JSON ("" when none)
	Code       int    `json:"code"`       // the error code when not returned
	Error      string `json:"error"`      // the error when not returned
}

// Outcome is the cell in words: "returned {…}", "returned isError {…}" or
// "rejected -32602".
func (c Cell) Outcome() string {
	if !c.Returned {
		return fmt.Sprintf("rejected %d", c.Code)
	}
	s := "returned"
	if c.IsError {
		s += " isError"
	}
	if c.Structured != "" {
		s += " " + c.Structured
	}
	return s
}

// Matrix is the result of one run.
type Matrix struct {
	SDK             string     `json:"sdk"`                  // the Go SDK module and version
	ProtocolVersion string     `json:"protocol_version"`     // negotiated by the Go SDK client
	Node            string     `json:"node,omitempty"`       // the Node.js version that ran the TypeScript clients
	TSClients       []TSClient `json:"ts_clients"`           // the TypeScript clients that ran (none when TSSkipped)
	TSSkipped       string     `json:"ts_skipped,omitempty"` // why the TypeScript clients did not run
	Cells           []Cell     `json:"cells"`                // per client and discovery state, one per shape
}

// Cell returns the cell of a shape, client and discovery state.
func (m *Matrix) Cell(shape, client string, discovered bool) (Cell, bool) {
	for _, c := range m.Cells {
		if c.Shape == shape && c.Client == client && c.Discovered == discovered {
			return c, true
		}
	}
	return Cell{}, false
}

// newServer is the fixture server.
func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "checkmatrix", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{
		Name: toolName,
		InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"shape": map[string]any{"type": "string"}},
			"required":   []any{"shape"},
		},
		OutputSchema: outputSchema,
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Shape string `json:"shape"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		for _, sh := range shapes {
			if sh.Name == args.Shape {
				return sh.Result(), nil
			}
		}
		return nil, fmt.Errorf("unknown shape %q", args.Shape)
	})
	return s
}

// Options are the settings of Run.
type Options struct {
	// ProtocolVersion pins the protocol version the Go SDK client offers
	// ("" for the SDK's latest). The TypeScript clients always offer their
	// own latest (v1.32.2 cannot be pinned).
	ProtocolVersion string
	// TSClients is the directory of check.mjs and the TypeScript clients'
	// node_modules (scripts/ts-clients; see FindTSClients). "" runs the Go
	// clients only.
	TSClients string
	// Node is the Node.js executable (default "node", looked up in PATH).
	Node string
	// Timeout bounds the TypeScript clients' run (default 2 minutes).
	Timeout time.Duration
}

func (o Options) node() string { return cmp.Or(o.Node, "node") }

func (o Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return 2 * time.Minute
	}
	return o.Timeout
}

// Run runs the matrix: the Go clients over in-memory transports, then the
// TypeScript clients. When o.TSClients is empty or Node.js or the packages
// are missing, the TypeScript clients are skipped and m.TSSkipped says why;
// when they run and fail, Run fails.
func Run(ctx context.Context, o Options) (*Matrix, error) {
	server := newServer()
	m := &Matrix{SDK: capture.SDKVersion(), TSClients: []TSClient{}}
	if err := runGo(ctx, o.ProtocolVersion, server, m); err != nil {
		return nil, err
	}
	node, why := tsUnavailable(o)
	if why != "" {
		m.TSSkipped = why
		return m, nil
	}
	if err := runTS(ctx, o, node, server, m); err != nil {
		return nil, fmt.Errorf("TypeScript clients: %w", err)
	}
	return m, nil
}

// runGo adds the Go clients' cells to m. protocolVersion pins the version
// the client offers ("" for the SDK's latest).
func runGo(ctx context.Context, protocolVersion string, server *mcp.Server, m *Matrix) error {
	tool := &capture.Tool{Name: toolName, OutputSchema: outputSchema}
	for _, discovered := range []bool{true, false} {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, st, nil)
		if err != nil {
			return err
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "checkmatrix-client", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
		if err != nil {
			ss.Close()
			return err
		}
		m.ProtocolVersion = cs.InitializeResult().ProtocolVersion
		known := (*capture.Tool)(nil)
		if discovered {
			lt, err := cs.ListTools(ctx, nil)
			if err != nil {
				cs.Close()
				ss.Close()
				return err
			}
			if len(lt.Tools) != 1 || lt.Tools[0].OutputSchema == nil {
				cs.Close()
				ss.Close()
				return errors.New("the fixture tool was not listed with its outputSchema")
			}
			known = tool
		}
		for _, sh := range shapes {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolName, Arguments: map[string]any{"shape": sh.Name}})
			sdk := Cell{Shape: sh.Name, Client: clientGoSDK, Discovered: discovered}
			if err != nil {
				var rpc *jsonrpc.Error
				if errors.As(err, &rpc) {
					sdk.Code = int(rpc.Code)
				}
				sdk.Error = err.Error()
			} else {
				sdk.Returned, sdk.IsError = true, res.IsError
				if res.StructuredContent != nil {
					b, err := json.Marshal(res.StructuredContent)
					if err != nil {
						return err
					}
					sdk.Structured = string(b)
				}
			}
			val := sdk
			val.Client = clientValidating
			if err == nil {
				if chk := capture.CheckOutput(known, res); chk.Verdict == study.OutputRejected {
					val = Cell{Shape: sh.Name, Client: clientValidating, Discovered: discovered, Code: chk.Code, Error: chk.Reason}
				}
			}
			m.Cells = append(m.Cells, sdk, val)
		}
		cs.Close()
		ss.Close()
	}
	return nil
}

// WriteTable prints the matrix: one row per discovery state and shape, one
// column per client that ran.
func WriteTable(w io.Writer, m *Matrix) error {
	schema, _ := json.Marshal(outputSchema)
	fmt.Fprintf(w, "Client checks of tool results against the tool's outputSchema\n")
	fmt.Fprintf(w, "outputSchema: %s\n", schema)
	fmt.Fprintf(w, "go-sdk: %s, in memory; protocol %s\n", m.SDK, m.ProtocolVersion)
	fmt.Fprintf(w, "validating: the go-sdk result judged by stress capture -validate-output (emulates ts-v1's check)\n")
	clients := []string{clientGoSDK, clientValidating}
	for _, c := range m.TSClients {
		how := "node " + m.Node + ", streamable HTTP"
		if c.Client == clientTSv2 {
			how += ", initialize handshake"
		}
		fmt.Fprintf(w, "%s: %s %s, %s; protocol %s\n", c.Client, c.Package, c.Version, how, c.ProtocolVersion)
		clients = append(clients, c.Client)
	}
	if m.TSSkipped != "" {
		fmt.Fprintf(w, "TypeScript clients (ts-v1, ts-v2) not run: %s\n", m.TSSkipped)
	}
	fmt.Fprintf(w, "listed: the client called tools/list first; cold: it did not.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "result shape\ttools/list")
	for _, c := range clients {
		fmt.Fprint(tw, "\t"+c)
	}
	fmt.Fprintln(tw)
	for _, discovered := range []bool{true, false} {
		state := "cold"
		if discovered {
			state = "listed"
		}
		for _, sh := range shapes {
			fmt.Fprint(tw, sh.Label+"\t"+state)
			for _, client := range clients {
				c, _ := m.Cell(sh.Name, client, discovered)
				fmt.Fprint(tw, "\t"+c.Outcome())
			}
			fmt.Fprintln(tw)
		}
	}
	return tw.Flush()
}
