package tree

import "testing"

func TestCall(t *testing.T) {
	want := &mcp.CallToolResult{IsError: true}
	_ = want
}
