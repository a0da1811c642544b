package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpstress/stress/study"
)

// TestParseFault: every check of a fault file names the file and the
// field at fault.
func TestParseFault(t *testing.T) {
	for _, c := range []struct{ json, err string }{
		{`{"tool":"t","class":"rate_limit"}`, "fault.json: field window_ms: rate_limit needs window_ms"},
		{`{"class":"transient"}`, "fault.json: field tool: name the tool"},
		{`{"tool":"t"}`, "fault.json: field class: missing"},
		{`{"tool":"t","class":"locked"}`, `fault.json: field class: "locked" is not a class the proxy injects`},
		{`{"tool":"t","class":"transient","window_ms":5}`, "fault.json: field window_ms: transient takes no window_ms"},
		{`{"tool":"t","class":"transient","k":1,"for_ms":5}`, "fault.json: field for_ms: transient takes k or for_ms, not both"},
		{`{"tool":"t","class":"transient","k":0}`, "fault.json: field k: k is 0"},
		{`{"tool":"t","class":"transient","for_ms":-1}`, "fault.json: field for_ms: for_ms is -1, want 1 to 86400000"},
		{`{"tool":"t","class":"transient","surface":"success_shaped"}`, `fault.json: field surface: "success_shaped" is not protocol_error or tool_error`},
		{`{"tool":"t","class":"authentication"}`, "fault.json: field auth_tool: authentication needs auth_tool"},
		{`{"tool":"t","class":"authentication","auth_tool":"t"}`, "fault.json: field auth_tool: the credential tool must not be"},
		{`{"tool":"t","class":"invalid_value","pointer":"/a"}`, "fault.json: field value: invalid_value needs value"},
		{`{"tool":"t","class":"invalid_type","pointer":"a","value":1}`, `fault.json: field pointer: "a" is not a JSON pointer`},
		{`{"tool":"t","class":"invalid_type","pointer":"/a~2","value":1}`, `fault.json: field pointer: "/a~2" has a bad escape`},
		{`{"tool":"t","class":"partial_commit","pointer":"/items"}`, "fault.json: field at: partial_commit needs at"},
		{`{"tool":"t","class":"partial_commit","pointer":"/items","at":0}`, "fault.json: field at: at is 0"},
		{`{"tool":"t","class":"timeout_committed"}`, "fault.json: field deadline_ms: timeout_committed needs deadline_ms"},
		{`{"tool":"t","class":"silent_noop","answer":{"content":[{"type":"text","text":"x"}],"isError":true}}`, "fault.json: field answer: a silent no-op answers success-shaped"},
		{`{"tool":"t","class":"silent_noop","answer":{"content":[{"type":"bogus"}]}}`, "fault.json: field answer: not a CallToolResult"},
		{`{"tool":"t","class":"silent_noop","answer":{}}`, "fault.json: field answer: no content"},
		{`{"tool":"t","class":"silent_noop","message":"m","answer":{"content":[{"type":"text","text":"x"}]}}`, "fault.json: field message: silent_noop takes no message"},
		{`{"tool":"t","class":"upstream_outage","k":2}`, "fault.json: field k: upstream_outage takes no k"},
		{`{"tool":"t","class":"transient","bogus":1}`, "fault.json: field bogus: no such field of a fault"},
		{`{"tool":"t","class":"transient","k":"2"}`, "fault.json: field k: string is not a int"},
		{`{"tool":"t","class":"transient"} {}`, "fault.json: data after the JSON object"},
		{strings.Repeat("[", 200), "fault.json: line 1: "},
		{"\xff\xfe{\x00}\x00", "fault.json: file is UTF-16"},
	} {
		t.Run(c.err, func(t *testing.T) {
			_, err := ParseFault("fault.json", []byte(c.json))
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%s:\n got %v\nwant %s…", c.json, err, c.err)
			}
		})
	}
	for _, ok := range []string{
		`{"tool":"t","class":"transient"}`,
		`{"tool":"t","class":"transient","for_ms":2000,"surface":"tool_error"}`,
		`{"tool":"t","class":"rate_limit","window_ms":30000,"message":"slow down"}`,
		`{"tool":"t","class":"authentication","auth_tool":"refresh_token"}`,
		`{"tool":"t","class":"unknown_tool"}`,
		`{"tool":"t","class":"invalid_type","pointer":"/n","value":"3"}`,
		`{"tool":"t","class":"invalid_value","pointer":"/a~1b/0","value":{"x":[1]},"k":2}`,
		`{"tool":"t","class":"upstream_outage","surface":"tool_error"}`,
		`{"tool":"t","class":"timeout_committed","deadline_ms":30000,"k":2}`,
		`{"tool":"t","class":"partial_commit","pointer":"/items","at":2}`,
		`{"tool":"t","class":"silent_noop","answer":{"content":[{"type":"text","text":"Accepted."}]}}`,
		"\xef\xbb\xbf" + `{"tool":"t","class":"transient"}`,
	} {
		if _, err := ParseFault("fault.json", []byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	// Check alone names the field, for a fault decoded elsewhere.
	if err := (&Fault{Tool: "t", Class: study.PartialCommit, Pointer: "/x", At: intp(-1)}).Check(); err == nil || err.Error() != "field at: at is -1, a partial commit applies 1 or more items" {
		t.Errorf("Check: %v", err)
	}
}

// TestHostileInput: the HTTP handler and the relay answer garbage, odd
// messages and batches without panicking, and the session goes on.
func TestHostileInput(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case bytes.Contains(b, []byte("sse")):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"x\"}]}}\n\n: comment\n\ndata: not json\n\n")
		case bytes.Contains(b, []byte("garbage")):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":`)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"tools":"not a list"}}`)
		}
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	in := NewInjector(&Fault{Tool: "x", Class: study.UnknownTool}, nil)
	in.MaxMessageBytes = 1 << 10
	h := Handler(u, nil, in)
	for _, body := range []string{
		``, `null`, `[]`, `[1,2]`, `{}`, `{"jsonrpc":"2.0"}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":3}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":"s"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"sse":1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"garbage":1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"a":"` + strings.Repeat("y", 2000) + `"}}}`,
		strings.Repeat("{", 5000),
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", strings.NewReader(body)))
		if rec.Code == 0 {
			t.Errorf("%.60s: no answer", body)
		}
	}
	// The oversized call with its id is answered as a JSON-RPC error.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"a":"`+strings.Repeat("y", 2000)+`"}}}`)))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"id":7`) || !strings.Contains(rec.Body.String(), "bound of 1024 bytes") {
		t.Errorf("oversized call: %d %s", rec.Code, rec.Body)
	}
}
