package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/internal/testserver/hostilemcp"
)

// The test binary doubles as a stdio MCP server (the Go SDK's), chosen by
// the CAPTURE_HELPER environment variable:
//
//	serve     serve over stdio and exit on EOF
//	stubborn  serve, then ignore stdin EOF and SIGTERM (capture must kill it)
//	hostile   serve internal/testserver/hostilemcp's server over stdio (it quotes the
//	          value of $HOSTILE_API_KEY in its failure texts)
//
// CAPTURE_HELPER_PID names a file the helper writes its pid to,
// CAPTURE_HELPER_CALLS one it appends each called tool's name to, and
// CAPTURE_HELPER_WIRE a prefix for copies of the bytes it read (.in) and
// wrote (.out).
func TestMain(m *testing.M) {
	switch os.Getenv("CAPTURE_HELPER") {
	case "":
		os.Exit(m.Run())
	case "serve", "stubborn", "hostile":
		helper(os.Getenv("CAPTURE_HELPER"))
	default:
		fmt.Fprintln(os.Stderr, "unknown CAPTURE_HELPER")
		os.Exit(2)
	}
}

func helper(mode string) {
	stubborn := mode == "stubborn"
	if f := os.Getenv("CAPTURE_HELPER_PID"); f != "" {
		_ = os.WriteFile(f, []byte(fmt.Sprint(os.Getpid())), 0o600)
	}
	if stubborn {
		signal.Ignore(syscall.SIGTERM)
	}
	calls := &callLog{file: os.Getenv("CAPTURE_HELPER_CALLS")}
	var t mcp.Transport = &mcp.StdioTransport{}
	if w := os.Getenv("CAPTURE_HELPER_WIRE"); w != "" {
		// Keep an independent copy of the bytes as the server saw them.
		in, err1 := os.Create(w + ".in")
		out, err2 := os.Create(w + ".out")
		if err1 != nil || err2 != nil {
			fmt.Fprintln(os.Stderr, "helper:", err1, err2)
			os.Exit(2)
		}
		t = &mcp.IOTransport{
			Reader: io.NopCloser(io.TeeReader(os.Stdin, in)),
			Writer: nopWriteCloser{io.MultiWriter(os.Stdout, out)},
		}
	}
	srv := fixtureServer(calls)
	if mode == "hostile" {
		srv = hostilemcp.New(calls.add, os.Getenv(hostilemcp.EchoEnv))
	}
	err := srv.Run(context.Background(), t)
	fmt.Fprintln(os.Stderr, "helper: session ended:", err)
	if stubborn {
		select {} // ignore EOF: capture must terminate us
	}
	os.Exit(0)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// callLog records which tools the fixture executed.
type callLog struct {
	mu    sync.Mutex
	file  string
	names []string
}

func (c *callLog) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names = append(c.names, name)
	if c.file != "" {
		f, err := os.OpenFile(c.file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, name)
			f.Close()
		}
	}
}

func (c *callLog) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file != "" {
		data, _ := os.ReadFile(c.file)
		return strings.Fields(string(data))
	}
	return append([]string(nil), c.names...)
}

type lookupIn struct {
	ID string `json:"id" jsonschema:"the item id"`
}

// fixtureServer is a Go SDK server whose tools cover the probe rules:
//
//	lookup_item   readOnlyHint true, typed (the SDK validates arguments);
//	              a sentinel id gets a success-shaped "lookup failed"
//	get_status    no annotations, read-only by the name rule
//	find_user     readOnlyHint true; raises a JSON-RPC error whose data holds
//	              a URL, an e-mail, a path and a token (for redaction)
//	list_things   readOnlyHint true; a sentinel gets an empty success
//	delete_item   no annotations, not read-only by the name rule
//	read_secret   readOnlyHint false (the annotation beats the name rule)
//	get_reading   readOnlyHint true, an outputSchema; a sentinel gets an
//	              isError result with off-schema structured content
func fixtureServer(calls *callLog) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "acme-inventory", Version: "3.1.4"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "lookup_item", Annotations: ro}, func(ctx context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
		calls.add("lookup_item")
		if strings.HasPrefix(in.ID, "stress-probe-sentinel") {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Lookup failed for the supplied test value."}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "item " + in.ID}}}, nil, nil
	})
	raw := func(name string, ann *mcp.ToolAnnotations, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Annotations: ann, InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"region": map[string]any{"type": "string"}, "id": map[string]any{"type": "string"}},
			"required":   []any{"region"},
		}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.add(name)
			return h(ctx, req)
		})
	}
	ok := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	raw("get_status", nil, ok)
	raw("delete_item", nil, ok)
	raw("read_secret", &mcp.ToolAnnotations{ReadOnlyHint: false}, ok)
	raw("find_user", ro, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		data, _ := json.Marshal(map[string]any{
			"docs": "https://docs.acme.example/errors#user", "owner": "ops@acme.example",
			"db": "/var/lib/acme/users.db", "key": "sk-live0123456789abcdefXYZ", "field": "region",
		})
		return nil, &jsonrpc.Error{Code: -32602, Message: "Invalid user region for find_user", Data: data}
	})
	raw("list_things", ro, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "get_reading", Annotations: ro,
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"sensor": map[string]any{"type": "string"}}, "required": []any{"sensor"}},
		OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "number"}},
			"required": []any{"value"}, "additionalProperties": false},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		calls.add("get_reading")
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Unknown sensor."}},
			StructuredContent: map[string]any{"error": "unknown sensor"}}, nil
	})
	return s
}

// waitGone waits up to d for process pid to disappear.
func waitGone(t *testing.T, pid int, d time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
