package tools

import (
	"example.com/tree/pkg/utils"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func GetIssue(id string) *mcp.CallToolResult {
	if id == "" {
		return utils.NewToolResultError("missing id")
	}
	return utils.NewToolResultError("not found: " + id)
}
