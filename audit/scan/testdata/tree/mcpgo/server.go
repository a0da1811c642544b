package mcpgo

// A Go server on mcp-go, with a wrapper package of its own.

import (
	"example.com/tree/pkg/utils"
	m "github.com/mark3labs/mcp-go/mcp"
)

func fail(err error) *m.CallToolResult {
	if err == nil {
		return utils.NewToolResultError("no error")
	}
	return m.NewToolResultErrorFromErr("failed", err)
}
