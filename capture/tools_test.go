package capture

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listFrom serves n tools whose descriptions hold size bytes each and
// lists them through ListTools.
func listFrom(t *testing.T, n, size int) (int, error) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	for i := range n {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%d", i), Description: strings.Repeat("d", size), InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := ListTools(ctx, cs)
	return len(tools), err
}

// TestListTools: every tool of every page is read, in order; more bytes
// of tools than maxListedToolBytes is refused naming the cap.
func TestListTools(t *testing.T) {
	if n, err := listFrom(t, 5, 100); err != nil || n != 5 {
		t.Errorf("5 tools: got %d, %v", n, err)
	}
	n, err := listFrom(t, 20, 1<<20)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes", maxListedToolBytes)) {
		t.Errorf("20 tools of 1 MiB: got %d, %v, want the byte cap", n, err)
	}
}
