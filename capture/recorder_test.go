package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCutText(t *testing.T) {
	b := &textBudget{left: 30}
	if got, n := b.cut("short text"); got != "short text" || n != 0 || b.left != 20 {
		t.Errorf("cut %q %d, left %d", got, n, b.left)
	}
	// The cut falls before the separator in reach: the key is not split.
	if got, n := b.cut("token sk-live-0123456789abcdefghij and more"); got != "token"+cutMarker(38) || n != 38 {
		t.Errorf("cut %q %d", got, n)
	}
	if got, n := b.cut("more"); got != cutMarker(4) || n != 4 {
		t.Errorf("over budget: %q %d", got, n)
	}
	b = &textBudget{left: 8}
	if got, _ := b.cut("<a@b.example.com>"); got != cutMarker(17) {
		t.Errorf("no separator: %q", got)
	}
	b = &textBudget{left: 8}
	if got, _ := b.cut("12345678 9"); got != "12345678"+cutMarker(2) {
		t.Errorf("separator at the cap: %q", got)
	}

	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("ab ", 10)}, &mcp.ImageContent{}, &mcp.TextContent{Text: "cd ef"}},
		StructuredContent: map[string]any{"k": strings.Repeat("x", 40)}}
	cuts := boundCall(res, nil, 32)
	cuts = append(cuts, boundStructured(res, 32)...)
	want := []string{"/result/content/2/text (3 bytes cut)", "/result/structuredContent (48 bytes of JSON, over the text cap of 32)"}
	if strings.Join(cuts, "|") != strings.Join(want, "|") || res.StructuredContent != nil || res.Content[2].(*mcp.TextContent).Text != "cd"+cutMarker(3) {
		t.Errorf("cuts %q, result %+v", cuts, res.Content[2])
	}
	rpc := &jsonrpc.Error{Code: -32602, Message: "bad " + strings.Repeat("x", 40), Data: json.RawMessage(`"` + strings.Repeat("y", 40) + `"`)}
	cuts = boundCall(nil, fmt.Errorf("calling: %w", rpc), 32)
	if len(cuts) != 2 || rpc.Message != "bad"+cutMarker(41) || rpc.Data != nil {
		t.Errorf("cuts %q, error %+v", cuts, rpc)
	}
	if cuts := boundCall(nil, errors.New("EOF"), 1); cuts != nil {
		t.Errorf("cuts %q", cuts)
	}
}
