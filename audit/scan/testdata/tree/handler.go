package tree

// A Go MCP server on the Go SDK. Traps: IsError: true in this comment.

import "github.com/modelcontextprotocol/go-sdk/mcp"

type result struct {
	IsError bool `json:"isError"` // IsError: true in a struct tag
}

func (s *Server) Call(name string) (*mcp.CallToolResult, error) {
	if name == "" {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no name"}}}, nil
	}
	if name == "ok" {
		return &mcp.CallToolResult{IsError: false}, nil
	}
	var res mcp.CallToolResult
	if err := s.run(name); err != nil {
		res.SetError(err)
		return &res, nil
	}
	res.IsError = true
	_ = "IsError: true"
	_ = `raw IsError: true`
	_ = map[string]any{"isError": true}
	return &res, nil
}

func toolError(msg string) *mcp.CallToolResult {
	return mcp.NewToolResultError(msg)
}
