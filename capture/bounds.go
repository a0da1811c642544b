package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxTextBytes is the default cap on the server text an observation
// keeps (Options.MaxTextBytes, flag -max-text-bytes), 64 KiB.
const DefaultMaxTextBytes = 64 << 10

func (o *Options) maxText() int { return orDefault(o.MaxTextBytes, DefaultMaxTextBytes) }

// cutSeparator reports whether b may end the kept part of a cut text:
// white space, a quote or an angle bracket. Sensitive strings (tokens,
// e-mail addresses, paths, URLs) do not run across these, so a cut there
// leaves none of them half kept and unrecognizable to the scrubber.
func cutSeparator(b byte) bool {
	return strings.IndexByte(" \t\n\r\f\v\"'`<>", b) >= 0
}

// textBudget hands out the bytes of server text an observation may keep.
type textBudget struct{ left int }

// cut returns s whole if it fits the budget, or else the part before the
// last separator that does, followed by a marker saying how many bytes
// were cut, and the number of bytes cut. A text without a separator in
// reach is cut whole. Note: the cut comes before scrubbing, the failure
// rules and the surface classification, so they all read the same kept
// text, and their cost is bounded by the budget.
func (b *textBudget) cut(s string) (string, int) {
	if len(s) <= b.left {
		b.left -= len(s)
		return s, 0
	}
	i := max(b.left, 0)
	for i > 0 && !cutSeparator(s[i]) {
		i--
	}
	b.left = 0
	n := len(s) - i
	return s[:i] + cutMarker(n), n
}

// cutMarker ends a cut text.
func cutMarker(n int) string { return fmt.Sprintf(" [… %d bytes cut by stress]", n) }

// Bound cuts, in place, what a call returned to max bytes of server text
// (boundCall) and drops a structuredContent over max bytes of JSON
// (boundStructured), as capture does before it keeps an observation. It
// returns what it cut, as JSON pointers into the result with sizes.
func Bound(res *mcp.CallToolResult, err error, max int) []string {
	return append(boundCall(res, err, max), boundStructured(res, max)...)
}

// boundCall cuts, in place, the server text of a call's result or
// JSON-RPC error to max bytes (textBudget): the text blocks and the error
// message share the budget; error.data over max bytes of JSON is dropped.
// It returns what it cut as capture.dropped entries (JSON pointers into
// the SDK's result). structuredContent is left for boundStructured: the
// outputSchema check needs all of it.
func boundCall(res *mcp.CallToolResult, err error, max int) []string {
	var cuts []string
	b := &textBudget{left: max}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		var n int
		if rpc.Message, n = b.cut(rpc.Message); n > 0 {
			cuts = append(cuts, fmt.Sprintf("/error/message (%d bytes cut)", n))
		}
		if len(rpc.Data) > max {
			cuts = append(cuts, fmt.Sprintf("/error/data (%d bytes of JSON, over the text cap of %d)", len(rpc.Data), max))
			rpc.Data = nil
		}
	}
	if res == nil {
		return cuts
	}
	for i, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			var n int
			if t.Text, n = b.cut(t.Text); n > 0 {
				cuts = append(cuts, fmt.Sprintf("/result/content/%d/text (%d bytes cut)", i, n))
			}
		}
	}
	return cuts
}

// boundStructured drops, in place, a result's structuredContent when its
// JSON is over max bytes, and says so as a capture.dropped entry.
func boundStructured(res *mcp.CallToolResult, max int) []string {
	if res == nil || res.StructuredContent == nil {
		return nil
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil || len(b) <= max {
		return nil
	}
	res.StructuredContent = nil
	return []string{fmt.Sprintf("/result/structuredContent (%d bytes of JSON, over the text cap of %d)", len(b), max)}
}
