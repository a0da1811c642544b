package capture

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The caps of ListTools: a server's tools/list pages might never end,
// and each page may be as large as a frame (mcp.DefaultMaxLineLength).
const (
	maxListedTools     = 10_000   // tools read from a server at most
	maxListedToolBytes = 16 << 20 // bytes of their JSON together at most
)

// ListTools reads every page of cs's tools/list and returns each tool as
// the JSON object the server sent, in order; more than 10,000
// tools or 16 MiB of them is an error naming the cap.
func ListTools(ctx context.Context, cs *mcp.ClientSession) ([]json.RawMessage, error) {
	var out []json.RawMessage
	size := 0
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if len(out) == maxListedTools {
			return nil, fmt.Errorf("tools/list: more than %d tools", maxListedTools)
		}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if size += len(b); size > maxListedToolBytes {
			return nil, fmt.Errorf("tools/list: the tools take more than %d bytes", maxListedToolBytes)
		}
		out = append(out, b)
	}
	return out, nil
}
