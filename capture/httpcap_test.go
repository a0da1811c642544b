package capture

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/internal/testserver/hostilemcp"
)

// TestHTTPAnswerCapped: capture over streamable HTTP caps each answer at
// the frame cap, as the Go SDK caps a stdio frame: every probe of a server
// whose tool results are 40 MiB (a JSON body, or a server-sent event)
// stops reading at the cap, records the frame cut, and says so; the server
// sends about the cap, not the whole answer (before the cap, capture held
// it whole: 514 MB on a 40 MiB result).
func TestHTTPAnswerCapped(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain JSON answer", true: "SSE answer"}[sse], func(t *testing.T) {
			calls := &callLog{}
			h, sent := hostilemcp.Flood(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return fixtureServer(calls) }, nil), 40<<20, sse)
			ts := httptest.NewServer(h)
			o := fixtureOptions()
			o.MaxFrameBytes = 1 << 20
			servers, err := Run(context.Background(), []Target{{Label: "big", URL: ts.URL}}, o)
			ts.Close()
			if err != nil {
				t.Fatal(err)
			}
			s := servers[0]
			text := fmt.Sprint(s.Err, s.Notes)
			for _, oc := range s.Outcomes {
				text += fmt.Sprint(" ", oc.Err, " ", oc.Note, " ", oc.Cut)
			}
			if !strings.Contains(text, "larger than the frame cap") {
				t.Errorf("sse %v: nothing says an answer was cut: %s", sse, text)
			}
			// What the server could write is the cap and what the sockets
			// buffer (a few MiB on loopback), far short of 40 MiB a call.
			probes := len(s.Outcomes) + 1
			if n := sent(); n > int64(probes)*(9<<20) {
				t.Errorf("sse %v: the server sent %d bytes for %d calls, want at most the 1 MiB cap and the socket buffers each", sse, n, probes)
			}
		})
	}
}
