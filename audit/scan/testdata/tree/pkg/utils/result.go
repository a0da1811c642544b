package utils

// A repository's own helper named like mcp-go's: its definition is the
// construction, its call sites are wrapper calls.

import "github.com/modelcontextprotocol/go-sdk/mcp"

func NewToolResultError(message string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: message}},
		IsError: true,
	}
}
