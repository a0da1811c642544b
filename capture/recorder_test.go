package capture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/internal/input"
)

// TestRecorderCaps feeds a recorder with small caps and checks what it
// keeps, what it counts under markers, and what it says went wrong.
func TestRecorderCaps(t *testing.T) {
	rec := newRecorder(48, 300, 2)
	send := lineSplitter{rec: rec, dir: dirSend}
	recv := lineSplitter{rec: rec, dir: dirRecv}
	note := `{"method":"notifications/message"}` + "\n"                                       // 34 bytes
	send.feed([]byte(`{"id":1,"method":"tools/call"}` + "\n"))                                // 30
	recv.feed([]byte(strings.Repeat(note, 4)))                                                // 2 kept, 2 dropped
	recv.feed([]byte(`{"id":"s1","method":"ping"}` + "\n"))                                   // 27: a server request past the cap, dropped
	send.feed([]byte(`{"id":"s1","result":{}}` + "\n"))                                       // 23: the client's reply to it, dropped
	recv.feed([]byte(`{"id":99,"result":{}}` + "\n"))                                         // 21: an id no request has: sent on its own, dropped too
	recv.feed([]byte(`{"id":1,"result":{"content":[]}}` + "\n"))                              // 32: the answer
	send.feed([]byte(`{"id":2,"method":"tools/call"}` + "\n"))                                // 30: a new window
	recv.feed([]byte(note))                                                                   // 34
	recv.feed([]byte(`{"id":2,"result":{"content":[{"type":"text","text":"long"}]}}` + "\n")) // 61: 48 kept, 13 cut
	if req, resp := rec.Exchange(0, "tools/call"); req == nil || resp == nil || string(resp.RequestID()) != "2" || !resp.Truncated {
		t.Errorf("exchange: %+v %+v", req, resp)
	}
	send.feed([]byte(`{"id":3,"method":"tools/call"}` + "\n")) // 30: 272 bytes recorded
	recv.feed([]byte(strings.Repeat(note, 2)))                 // past the 300 bytes

	var got []string
	for _, f := range rec.Frames() {
		switch {
		case f.Dropped != nil:
			got = append(got, fmt.Sprintf("%s marker %s %d/%d", f.Dir, f.Dropped.Cap, f.Dropped.Frames, f.Dropped.Bytes))
		case f.Truncated:
			got = append(got, fmt.Sprintf("%s %d+%d", f.Dir, len(f.Raw), f.Cut))
		default:
			got = append(got, f.Dir+" "+f.Raw)
		}
	}
	want := []string{
		`send {"id":1,"method":"tools/call"}`,
		`recv {"method":"notifications/message"}`,
		`recv {"method":"notifications/message"}`,
		`recv marker max-notifications 4/116`,
		`send marker max-notifications 1/23`,
		`recv {"id":1,"result":{"content":[]}}`,
		`send {"id":2,"method":"tools/call"}`,
		`recv {"method":"notifications/message"}`,
		`recv 48+13`,
		`send {"id":3,"method":"tools/call"}`,
		`recv marker max-server-bytes 2/68`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("frames:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	st := rec.Stats()
	if st != (FrameStats{Frames: 8, Bytes: 272, Truncated: 1, CutBytes: 13, DroppedNotifications: 5, DroppedOverBytes: 2, DroppedBytes: 207, UnknownIDs: 1}) {
		t.Errorf("stats %+v", st)
	}
	if why := rec.explain(0); len(why) != 1 || why[0] != `server answered id "99", which no request has` {
		t.Errorf("explain: %q", why)
	}
	if why := rec.explain(6); len(why) != 0 {
		t.Errorf("explain from frame 6: %q", why)
	}
	// Markers and cuts survive the frames file.
	var b bytes.Buffer
	if err := WriteFrames(&b, rec.Frames()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"dropped":{"cap":"max-notifications","frames":4,"bytes":116}`) || !strings.Contains(b.String(), `"truncated":true,"cut":13`) {
		t.Errorf("frames file:\n%s", b.String())
	}
	back, err := readFrames("x", &b)
	if err != nil || len(back) != len(want) || back[3].Dropped == nil || back[3].Dropped.Frames != 4 || back[8].Cut != 13 {
		t.Errorf("read back: %v %+v", err, back)
	}
	// A frame read back pairs as it did when recorded.
	if h := back[8].header(); h.kind != kindResponse || h.id != "2" {
		t.Errorf("truncated frame read back: %+v", h)
	}
}

// TestRecorderNonJSON checks that the first non-JSON line received is
// named, bounded and printable.
func TestRecorderNonJSON(t *testing.T) {
	rec := &Recorder{}
	recv := lineSplitter{rec: rec, dir: dirRecv}
	recv.feed([]byte("Starting \x1b[1mserver\x1b[0m " + strings.Repeat("v", 300) + "\nsecond line\n"))
	why := rec.explain(0)
	if len(why) != 1 || !strings.HasPrefix(why[0], `server wrote a non-JSON line: "Starting \x1b[1mserver`) || !strings.HasSuffix(why[0], "more bytes)") || !input.Printable(why[0]) {
		t.Errorf("explain: %q", why)
	}
}

// TestUnfinishedFrame checks that a line the stream stops in is recorded
// when the stream ends, marked unfinished.
func TestUnfinishedFrame(t *testing.T) {
	rec := &Recorder{}
	p := newStdoutPump(io.NopCloser(strings.NewReader(`{"id":1,"result":{}}`+"\n"+`{"id":2,"res`)), rec)
	if _, err := io.Copy(io.Discard, p); err != nil {
		t.Fatal(err)
	}
	p.finish(0)
	fr := rec.Frames()
	if len(fr) != 2 || fr[0].Unfinished || !fr[1].Unfinished || fr[1].Raw != `{"id":2,"res` || fr[1].Truncated {
		t.Errorf("frames %+v", fr)
	}
}

// TestPumpDrainsAfterClose checks that the pump records what the server
// writes after the SDK has closed its side.
func TestPumpDrainsAfterClose(t *testing.T) {
	rec := &Recorder{}
	pr, pw := io.Pipe()
	p := newStdoutPump(pr, rec)
	go func() {
		pw.Write([]byte(`{"id":1,"result":{}}` + "\n"))
		pw.Write([]byte(`{"method":"notifications/message"}` + "\n"))
		pw.Close()
	}()
	buf := make([]byte, 8)
	if _, err := p.Read(buf); err != nil { // the SDK reads a little, then closes
		t.Fatal(err)
	}
	p.Close()
	p.finish(5e9)
	if fr := rec.Frames(); len(fr) != 2 || fr[1].Raw != `{"method":"notifications/message"}` {
		t.Errorf("frames %+v", fr)
	}
}

func TestSSETeeCap(t *testing.T) {
	rec := newRecorder(12, 0, 0)
	body := "event: message\ndata: {\"id\":1,\ndata: \"result\":{\"a\":\"long\"}}\n\ndata: {\"id\":2}\n\ndata: {\"id\":3"
	s := &sseTee{body: nopRC{strings.NewReader(body)}, rec: rec, info: HTTPInfo{Method: "POST", Status: 200}}
	if _, err := io.Copy(io.Discard, s); err != nil {
		t.Fatal(err)
	}
	fr := rec.Frames()
	if len(fr) != 3 || fr[0].Raw != "{\"id\":1,\n\"re" || fr[0].Cut != 19 || fr[0].HTTP.Event != "message" ||
		fr[1].Raw != `{"id":2}` || fr[1].Truncated || fr[1].Unfinished || fr[2].Raw != `{"id":3` || !fr[2].Unfinished {
		t.Errorf("frames %+v", fr)
	}
	// A body the SDK stops reading is recorded, unfinished, when closed.
	s = &sseTee{body: nopRC{strings.NewReader("data: {\"id\":4,\n")}, rec: rec, info: HTTPInfo{Method: "POST"}}
	s.Read(make([]byte, 64))
	s.Close()
	if fr := rec.Frames(); len(fr) != 4 || fr[3].Raw != `{"id":4,` {
		t.Errorf("frames %+v", fr)
	}
}

func TestBodyTeeCap(t *testing.T) {
	rec := newRecorder(10, 0, 0)
	b := &bodyTee{body: nopRC{strings.NewReader(`{"id":1,"result":{}}`)}, rec: rec, info: HTTPInfo{Method: "POST", Status: 200}}
	if _, err := io.Copy(io.Discard, b); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if fr := rec.Frames(); len(fr) != 1 || fr[0].Raw != `{"id":1,"r` || fr[0].Cut != 10 || fr[0].Unfinished {
		t.Errorf("frames %+v", fr)
	}
}

func TestCutText(t *testing.T) {
	b := &textBudget{left: 30}
	if got, n := b.cut("short text"); got != "short text" || n != 0 || b.left != 20 {
		t.Errorf("cut %q %d, left %d", got, n, b.left)
	}
	// The cut falls before the separator in reach: the key is not split.
	if got, n := b.cut("token sk-live-0123456789abcdefghij and more"); got != "token"+cutMarker(38) || n != 38 {
		t.Errorf("cut %q %d", got, n)
	}
	if got, n := b.cut("more"); got != cutMarker(4) || n != 4 {
		t.Errorf("over budget: %q %d", got, n)
	}
	b = &textBudget{left: 8}
	if got, _ := b.cut("<a@b.example.com>"); got != cutMarker(17) {
		t.Errorf("no separator: %q", got)
	}
	b = &textBudget{left: 8}
	if got, _ := b.cut("12345678 9"); got != "12345678"+cutMarker(2) {
		t.Errorf("separator at the cap: %q", got)
	}

	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("ab ", 10)}, &mcp.ImageContent{}, &mcp.TextContent{Text: "cd ef"}},
		StructuredContent: map[string]any{"k": strings.Repeat("x", 40)}}
	cuts := boundCall(res, nil, 32)
	cuts = append(cuts, boundStructured(res, 32)...)
	want := []string{"/result/content/2/text (3 bytes cut)", "/result/structuredContent (48 bytes of JSON, over the text cap of 32)"}
	if strings.Join(cuts, "|") != strings.Join(want, "|") || res.StructuredContent != nil || res.Content[2].(*mcp.TextContent).Text != "cd"+cutMarker(3) {
		t.Errorf("cuts %q, result %+v", cuts, res.Content[2])
	}
	rpc := &jsonrpc.Error{Code: -32602, Message: "bad " + strings.Repeat("x", 40), Data: json.RawMessage(`"` + strings.Repeat("y", 40) + `"`)}
	cuts = boundCall(nil, fmt.Errorf("calling: %w", rpc), 32)
	if len(cuts) != 2 || rpc.Message != "bad"+cutMarker(41) || rpc.Data != nil {
		t.Errorf("cuts %q, error %+v", cuts, rpc)
	}
	if cuts := boundCall(nil, errors.New("EOF"), 1); cuts != nil {
		t.Errorf("cuts %q", cuts)
	}
}

func TestStderrTail(t *testing.T) {
	b := &capBuffer{max: 16, tailMax: 24}
	for i := range 10 {
		fmt.Fprintf(b, "line %d\n", i)
	}
	if got := string(b.Bytes()); got != "line 0\nline 1\nli\n[stress capture left out 30 bytes here]\n 6\nline 7\nline 8\nline 9\n" {
		t.Errorf("bytes %q", got)
	}
	if got := b.lastLines(2); strings.Join(got, " ") != `"line 8" "line 9"` {
		t.Errorf("last lines %q", got)
	}
	b = &capBuffer{max: 16, tailMax: 24}
	b.Write([]byte("0123456789abcdefghij")) // 20 bytes: head 16, tail 4 more
	if got := string(b.Bytes()); got != "0123456789abcdefghij" {
		t.Errorf("bytes %q", got)
	}
}

// rawHTTP is a hand-written streamable-HTTP MCP server: it answers
// tools/call on an event stream that first carries n notifications.
func rawHTTP(t *testing.T, n int) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result any
		switch m.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": m.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "raw-http", "version": "1"}}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{"name": "get_item", "annotations": map[string]any{"readOnlyHint": true},
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []any{"id"}}}}}
		case "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range n {
				fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"tick %d\"}}\n\n", i)
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "Unknown tool."}}}})
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
			return
		default:
			result = map[string]any{}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestHTTPNotificationCap captures from a streamable-HTTP server that
// sends 50 notifications before each answer, with a cap of 5.
func TestHTTPNotificationCap(t *testing.T) {
	o := rawOptions()
	o.MaxNotifications = 5
	servers, err := Run(context.Background(), []Target{{Label: "raw-http", URL: rawHTTP(t, 50)}}, o)
	if err != nil || servers[0].Err != nil {
		t.Fatal(err, servers[0].Err)
	}
	s := servers[0]
	if s.FrameStats.DroppedNotifications != 3*45 {
		t.Errorf("stats %+v", s.FrameStats)
	}
	for _, out := range s.Outcomes {
		if out.Status != statusFailure || out.Response == nil {
			t.Errorf("%s: %s %q", out.Kind, out.Status, out.Note)
		}
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), "dropped 135 messages the server sent on its own past -max-notifications 5 per request") {
		t.Errorf("notes %q", s.Notes)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := Write(dir, servers, o); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, framesName(s.Pseudonym)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	frames, err := readFrames(f.Name(), f)
	if err != nil {
		t.Fatal(err)
	}
	var markers int
	for _, fr := range frames {
		if fr.Dropped != nil {
			markers++
			if fr.Dropped.Frames != 45 || fr.Dropped.Cap != capNotifications || fr.Dir != dirRecv {
				t.Errorf("marker %+v", fr.Dropped)
			}
		}
	}
	if markers != 3 {
		t.Errorf("%d markers, want 3", markers)
	}
}

// readFrames reads a frames file written by WriteFrames. Errors name the
// line.
func readFrames(name string, r io.Reader) ([]Frame, error) {
	var out []Frame
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 8*MaxFrameBytesLimit) // escapes and base64 make a line longer than its frame
	line := 0
	for sc.Scan() {
		line++
		var f Frame
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return out, fmt.Errorf("%s: line %d: %w", name, line, err)
		}
		if f.Dir != dirSend && f.Dir != dirRecv {
			return out, fmt.Errorf("%s: line %d: field dir: want %q or %q, got %q", name, line, dirSend, dirRecv, f.Dir)
		}
		out = append(out, f)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: line %d: %w", name, line+1, err)
	}
	return out, nil
}
