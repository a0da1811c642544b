package mcpstdio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	initialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

func toolsList(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id)
}

func callWait(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait","arguments":{}}}`, id)
}

// testServer is an MCP server with a tool "wait", which answers once
// release is closed (or fails when its request is cancelled), and the
// methods "t/plain", which fails with a plain error, and "t/coded", which
// fails with JSON-RPC code 7.
func testServer(release <-chan struct{}) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	type params struct{ mcp.ParamsBase }
	type result struct{ mcp.ResultBase }
	fail := func(err error) func(context.Context, *mcp.ServerSession, *params) (*result, error) {
		return func(context.Context, *mcp.ServerSession, *params) (*result, error) { return nil, err }
	}
	for method, err := range map[string]error{"t/plain": errors.New("plain"), "t/coded": &jsonrpc.Error{Code: 7, Message: "coded"}} {
		if err := mcp.AddReceivingCustomMethod(srv, method, fail(err)); err != nil {
			panic(err)
		}
	}
	return srv
}

// session is a server run over a Transport on pipes.
type session struct {
	t    *testing.T
	in   *io.PipeWriter
	out  chan reply    // the server's frames; closed when Run has returned
	done chan error    // Run's error
	ends *atomic.Int32 // calls of OnInputEnd
}

// reply is one frame the server wrote.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
	raw    string
}

// start runs srv over a Transport (its Reader and Writer set here) on
// pipes.
func start(t *testing.T, srv *mcp.Server, tr *Transport) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: make(chan reply, 64), done: make(chan error, 1), ends: new(atomic.Int32)}
	tr.Reader, tr.Writer = inR, outW
	onEnd := tr.OnInputEnd
	tr.OnInputEnd = func() {
		s.ends.Add(1)
		if onEnd != nil {
			onEnd()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		inW.Close()
	})
	go func() {
		s.done <- srv.Run(ctx, tr)
		outW.Close()
	}()
	go func() {
		defer close(s.out)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			r := reply{raw: sc.Text()}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				r.raw = "not JSON: " + r.raw
			}
			s.out <- r
		}
	}()
	return s
}

func (s *session) send(frames ...string) {
	s.t.Helper()
	for _, f := range frames {
		if _, err := io.WriteString(s.in, f+"\n"); err != nil {
			s.t.Fatalf("writing %q: %v", f, err)
		}
	}
}

func (s *session) next() reply {
	s.t.Helper()
	select {
	case r, ok := <-s.out:
		if !ok {
			s.t.Fatal("the server ended")
		}
		return r
	case <-time.After(30 * time.Second):
		s.t.Fatal("no answer in 30 s")
	}
	return reply{}
}

// end closes the input and returns the frames written until Run returns,
// and Run's error.
func (s *session) end() ([]reply, error) {
	s.t.Helper()
	s.in.Close()
	var out []reply
	for {
		select {
		case r, ok := <-s.out:
			if !ok {
				return out, <-s.done
			}
			out = append(out, r)
		case <-time.After(30 * time.Second):
			s.t.Fatalf("Run has not returned 30 s after the input ended; answers so far: %v", out)
		}
	}
}

func ids(rs []reply) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.ID))
	}
	slices.Sort(out)
	return out
}

func (r reply) String() string { return r.raw }

// TestEOF checks that every request read before the input ends is
// answered before Run returns (nil), and that OnInputEnd is called once,
// before the wait: the call it releases is answered too.
func TestEOF(t *testing.T) {
	release := make(chan struct{})
	s := start(t, testServer(release), &Transport{OnInputEnd: func() { close(release) }})
	s.send(initialize, initialized, callWait(2))
	for id := 3; id <= 9; id++ {
		s.send(toolsList(id))
	}
	rs, err := s.end()
	if err != nil {
		t.Errorf("Run: %v", err)
	}
	if got := strings.Join(ids(rs), ","); got != "1,2,3,4,5,6,7,8,9" {
		t.Errorf("answers %s, want 1 to 9: %v", got, rs)
	}
	for _, r := range rs {
		if r.Result == nil {
			t.Errorf("no result: %s", r)
		}
	}
	if n := s.ends.Load(); n != 1 {
		t.Errorf("OnInputEnd called %d times", n)
	}
}

// TestFrames checks the answer to each malformed frame and that the
// session goes on; a blank line is skipped, "\r\n" ends a line, and a
// response from the client, well-formed or not, gets no answer.
func TestFrames(t *testing.T) {
	s := start(t, testServer(nil), &Transport{MaxLineBytes: 200})
	s.send(initialize, initialized)
	if r := s.next(); string(r.ID) != "1" || r.Result == nil {
		t.Fatalf("initialize: %s", r)
	}
	cases := []struct {
		frame string
		code  int64
		id    string
	}{
		{`{"jsonrpc":"2.0","id":2,"method"`, jsonrpc.CodeParseError, "null"},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"} {}`, jsonrpc.CodeParseError, "null"},
		{"\xfe\xff", jsonrpc.CodeParseError, "null"},
		{`{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/list"}`, jsonrpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}`, jsonrpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":false,"method":"tools/list"}`, jsonrpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":2,"id":3,"method":"tools/list"}`, jsonrpc.CodeInvalidRequest, "3"},
		{`{"JSONRPC":"2.0","id":"x","method":"tools/list"}`, jsonrpc.CodeInvalidRequest, `"x"`},
		{`{"jsonrpc":"2.0","id":4,"method":null}`, jsonrpc.CodeInvalidRequest, "4"},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":true}`, jsonrpc.CodeInvalidRequest, "5"},
		{`{"jsonrpc":"2.0","method":"tools/list","params":7}`, jsonrpc.CodeInvalidRequest, "null"},
		{`[1]`, jsonrpc.CodeInvalidRequest, "null"},
		{`true`, jsonrpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/list","pad":"` + strings.Repeat("x", 200) + `"}`, jsonrpc.CodeInvalidRequest, "null"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%.40q", c.frame), func(t *testing.T) {
			s.send(c.frame)
			r := s.next()
			if r.Error == nil || r.Error.Code != c.code || string(r.ID) != c.id {
				t.Errorf("frame %.60q: %s, want code %d, id %s", c.frame, r, c.code, c.id)
			}
		})
	}
	s.send("", "  \t", `{"jsonrpc":"2.0","id":77,"result":{}}`, `{"jsonrpc":"2.0","id":{},"error":5}`, `{"result":1,"error":2}`)
	s.send(toolsList(7) + "\r")
	if r := s.next(); string(r.ID) != "7" || r.Result == nil {
		t.Errorf("tools/list after the malformed frames: %s", r)
	}
	// params null is taken as absent.
	s.send(`{"jsonrpc":"2.0","id":8,"method":"tools/list","params":null}`)
	if r := s.next(); string(r.ID) != "8" || r.Result == nil {
		t.Errorf("tools/list with params null: %s", r)
	}
	if rs, err := s.end(); len(rs) > 0 || err != nil {
		t.Errorf("after the input ended: %v, %v", rs, err)
	}
}

// TestCancelled checks that a call cancelled by notifications/cancelled
// gets no answer, that a call reusing the id of one still in flight is
// refused with id null, and that a call cancelled just before the input
// ends is not answered either.
func TestCancelled(t *testing.T) {
	s := start(t, testServer(make(chan struct{})), &Transport{})
	s.send(initialize, initialized)
	s.next()
	s.send(callWait(2), callWait(2))
	if r := s.next(); string(r.ID) != "null" || r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("a second call with id 2 in flight: %s", r)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`, toolsList(3))
	if r := s.next(); string(r.ID) != "3" {
		t.Errorf("after the cancelled call: %s, want the answer to 3 and none to 2", r)
	}
	s.send(callWait(4), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`)
	if rs, err := s.end(); len(rs) > 0 || err != nil {
		t.Errorf("after the input ended: %v, %v", rs, err)
	}
}

// TestErrorCodes checks the code of an error the server gives without one:
// -32600 before initialize (the SDK's refusal of a call then), -32603
// after; a JSON-RPC error keeps its code.
func TestErrorCodes(t *testing.T) {
	s := start(t, testServer(nil), &Transport{})
	s.send(toolsList(2))
	if r := s.next(); string(r.ID) != "2" || r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(r.Error.Message, "initialization") {
		t.Errorf("tools/list before initialize: %s", r)
	}
	s.send(initialize, initialized)
	s.next()
	s.send(`{"jsonrpc":"2.0","id":3,"method":"t/plain","params":{}}`)
	if r := s.next(); r.Error == nil || r.Error.Code != jsonrpc.CodeInternalError || r.Error.Message != "plain" {
		t.Errorf("a plain error: %s", r)
	}
	s.send(`{"jsonrpc":"2.0","id":4,"method":"t/coded","params":{}}`)
	if r := s.next(); r.Error == nil || r.Error.Code != 7 {
		t.Errorf("a coded error: %s", r)
	}
	s.end()
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestWriteFails checks that a server whose output is broken ends, with
// requests it could not answer.
func TestWriteFails(t *testing.T) {
	in := strings.Join([]string{initialize, initialized, callWait(2), "garbage", toolsList(3)}, "\n")
	done := make(chan error, 1)
	go func() {
		done <- testServer(make(chan struct{})).Run(context.Background(), &Transport{Reader: strings.NewReader(in), Writer: failWriter{}})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run has not returned 30 s after the input ended")
	}
	if _, err := (&Transport{}).Connect(context.Background()); err == nil {
		t.Error("a Transport without Reader and Writer connected")
	}
}
