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
	MaxListedTools     = 10_000   // tools read from a server at most
	MaxListedToolBytes = 16 << 20 // bytes of their JSON together at most
)

// ListTools reads every page of cs's tools/list and returns each tool as
// the JSON object the server sent, in order; more than MaxListedTools
// tools or MaxListedToolBytes bytes of them is an error naming the cap.
func ListTools(ctx context.Context, cs *mcp.ClientSession) ([]json.RawMessage, error) {
	var out []json.RawMessage
	size := 0
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if len(out) == MaxListedTools {
			return nil, fmt.Errorf("tools/list: more than %d tools", MaxListedTools)
		}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if size += len(b); size > MaxListedToolBytes {
			return nil, fmt.Errorf("tools/list: the tools take more than %d bytes", MaxListedToolBytes)
		}
		out = append(out, b)
	}
	return out, nil
}
