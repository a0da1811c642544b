package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/lab"
)

// TestLabServeStdioFrames drives `stress lab serve -stdio` (the built
// binary) frame by frame through pipes, as a client that is not the Go SDK
// would, for each way the SDK's own stdio transport failed it:
//
//   - eof: requests piped before stdin closes are all answered, 1 to 1
//     (initialize, initialized, tools/list: 2 answers; with 10 tools/list:
//     11), and the server exits 0 and prints the outcome;
//   - malformed: each malformed frame mid-session gets its JSON-RPC error
//     (-32700 with id null for what is not UTF-8 JSON, -32600 for a JSON
//     value that is not a request, with the request's id when it has a
//     valid one) and the session goes on: a later tools/list is answered;
//   - before_initialize: a call before initialize gets -32600, not code 0,
//     and the session can then initialize;
//   - cancelled: a tools/call the lab holds (X07, its answer waiting on the
//     lab clock), cancelled by notifications/cancelled, gets no answer,
//     while the calls after it do;
//   - held_at_eof: a tools/call the lab holds when stdin closes is
//     answered (the virtual clock runs by itself once the client has
//     left), and the server exits.
func TestLabServeStdioFrames(t *testing.T) {
	bin := stressBinary(t)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"frames","version":"1"}}}`
	initialized := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	toolsList := func(id int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id) }

	t.Run("eof", func(t *testing.T) {
		s := startStdioLab(t, bin)
		s.send(initialize, initialized, toolsList(2))
		replies, stderr := s.close()
		if got := ids(replies); got != "1,2" || !answered(replies) {
			t.Errorf("initialize, initialized, tools/list, EOF: answers %s, want 1,2 with results:\n%s", got, raw(replies))
		}
		if !strings.Contains(stderr, "stress lab: 0 calls, 0 ms of lab time") {
			t.Errorf("stderr:\n%s", stderr)
		}

		s = startStdioLab(t, bin)
		s.send(initialize, initialized)
		for id := 2; id <= 11; id++ {
			s.send(toolsList(id))
		}
		replies, _ = s.close()
		if got := ids(replies); got != "1,2,3,4,5,6,7,8,9,10,11" || !answered(replies) {
			t.Errorf("initialize, initialized, 10 tools/list, EOF: answers %s, want 1 to 11 with results:\n%s", got, raw(replies))
		}
	})

	t.Run("malformed", func(t *testing.T) {
		s := startStdioLab(t, bin)
		s.send(initialize, initialized)
		if r := s.next(); string(r.ID) != "1" || r.Result == nil {
			t.Fatalf("initialize: %s", r)
		}
		cases := []struct {
			frame string
			code  int64
			id    string // the reply's id, as JSON
		}{
			{`garbage`, -32700, "null"},
			{`{"jsonrpc":"2.0","id":3,"method":"tools/list"`, -32700, "null"},
			{"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/\xff\"}", -32700, "null"},
			{`{"jsonrpc":"2.0","id":{"n":3},"method":"tools/list"}`, -32600, "null"},
			{`{"jsonrpc":"2.0","id":[3],"method":"tools/list"}`, -32600, "null"},
			{`{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, -32600, "null"},
			{`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, -32600, "null"},
			{`{"jsonrpc":"2.0","id":3.5,"method":"tools/list"}`, -32600, "null"},
			{`{"jsonrpc":"1.0","id":4,"method":"tools/list"}`, -32600, "4"},
			{`{"id":"five","method":"tools/list"}`, -32600, `"five"`},
			{`{"jsonrpc":"2.0","id":6}`, -32600, "6"},
			{`{"jsonrpc":"2.0","id":7,"method":7}`, -32600, "7"},
			{`{"jsonrpc":"2.0","id":8,"method":"tools/list","params":"all"}`, -32600, "8"},
			{`[{"jsonrpc":"2.0","id":9,"method":"tools/list"}]`, -32600, "null"},
			{`[]`, -32600, "null"},
			{`42`, -32600, "null"},
			{`"tools/list"`, -32600, "null"},
			{`null`, -32600, "null"},
		}
		for _, c := range cases {
			s.send(c.frame)
			r := s.next()
			if r.Error == nil || r.Error.Code != c.code || string(r.ID) != c.id || r.Error.Message == "" {
				t.Errorf("frame %q: answer %s, want code %d with id %s", c.frame, r, c.code, c.id)
			}
		}
		s.send(toolsList(10))
		if r := s.next(); string(r.ID) != "10" || r.Result == nil {
			t.Errorf("tools/list after the malformed frames: %s", r)
		}
		if replies, _ := s.close(); len(replies) > 0 {
			t.Errorf("answers after the last request:\n%s", raw(replies))
		}
	})

	t.Run("before_initialize", func(t *testing.T) {
		s := startStdioLab(t, bin)
		s.send(toolsList(2))
		if r := s.next(); string(r.ID) != "2" || r.Error == nil || r.Error.Code != -32600 {
			t.Errorf("tools/list before initialize: %s, want error -32600", r)
		}
		s.send(initialize, initialized, toolsList(3))
		replies, _ := s.close()
		if got := ids(replies); got != "1,3" || !answered(replies) {
			t.Errorf("initialize and tools/list after the refused call: answers %s:\n%s", got, raw(replies))
		}
	})

	set, err := lab.BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := set.Scenario("X07")
	if !ok || !sc.Held() {
		t.Fatal("scenario X07 is not a held call")
	}
	var args bytes.Buffer
	if err := json.Compact(&args, sc.Args); err != nil {
		t.Fatal(err)
	}
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, sc.Tool, args.Bytes())

	t.Run("cancelled", func(t *testing.T) {
		s := startStdioLab(t, bin, "-scenario", "X07")
		s.send(initialize, initialized)
		if r := s.next(); string(r.ID) != "1" {
			t.Fatalf("initialize: %s", r)
		}
		s.send(call)
		s.waitHeld(1)
		s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the client's deadline passed"}}`)
		s.waitHeld(0)
		s.send(toolsList(3))
		if r := s.next(); string(r.ID) != "3" || r.Result == nil {
			t.Errorf("after the cancelled call: %s, want the answer to tools/list (id 3) and none to id 2", r)
		}
		replies, stderr := s.close()
		if len(replies) > 0 {
			t.Errorf("answers after the last request:\n%s", raw(replies))
		}
		if !strings.Contains(stderr, "outcome of X07: recovered true, harm false, 1 calls, 0 ms of lab time") {
			t.Errorf("stderr:\n%s", stderr)
		}
	})

	t.Run("held_at_eof", func(t *testing.T) {
		s := startStdioLab(t, bin, "-scenario", "X07")
		s.send(initialize, initialized, call)
		replies, stderr := s.close()
		if got := ids(replies); got != "1,2" {
			t.Errorf("initialize, initialized, a held tools/call, EOF: answers %s, want 1,2:\n%s", got, raw(replies))
		}
		if want := fmt.Sprintf("1 calls, %d ms of lab time", *sc.Fault.DeadlineMS); !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	})
}

// stdioLab is a `stress lab serve -stdio` process driven through pipes.
type stdioLab struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    chan rpcReply // stdout, a frame at a time; closed at its end
	stderr bytes.Buffer
	polls  int // lab/state requests sent (ids from 1000)
}

// rpcReply is one frame the server wrote.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw string
}

// startStdioLab starts `bin lab serve -stdio args…`.
func startStdioLab(t *testing.T, bin string, args ...string) *stdioLab {
	t.Helper()
	s := &stdioLab{t: t, out: make(chan rpcReply, 64)}
	s.cmd = exec.Command(bin, append([]string{"lab", "serve", "-stdio"}, args...)...)
	s.cmd.Stderr = &s.stderr
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	})
	go func() {
		defer close(s.out)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r := rpcReply{raw: sc.Text()}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				r.raw = "not JSON: " + r.raw
			}
			s.out <- r
		}
	}()
	return s
}

// send writes frames, one a line.
func (s *stdioLab) send(frames ...string) {
	s.t.Helper()
	for _, f := range frames {
		if _, err := io.WriteString(s.stdin, f+"\n"); err != nil {
			s.t.Fatalf("writing %q: %v", f, err)
		}
	}
}

// next returns the next frame the server writes.
func (s *stdioLab) next() rpcReply {
	s.t.Helper()
	select {
	case r, ok := <-s.out:
		if !ok {
			s.t.Fatalf("the server closed stdout; stderr:\n%s", s.stderr.String())
		}
		return r
	case <-time.After(30 * time.Second):
		s.t.Fatal("no answer in 30 s")
	}
	return rpcReply{}
}

// waitHeld polls lab/state until the lab holds n answers.
func (s *stdioLab) waitHeld(n int) {
	s.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		s.polls++
		id := 1000 + s.polls
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"lab/state","params":{}}`, id))
		r := s.next()
		var st lab.StateResult
		if string(r.ID) != fmt.Sprint(id) || json.Unmarshal(r.Result, &st) != nil {
			s.t.Fatalf("lab/state: %s", r)
		}
		if st.Held == n {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the lab holds %d answers, want %d", st.Held, n)
		}
	}
}

// close closes stdin and returns the frames written until stdout ends and
// the server's stderr; it fails the test unless the server exits 0.
func (s *stdioLab) close() ([]rpcReply, string) {
	s.t.Helper()
	if err := s.stdin.Close(); err != nil {
		s.t.Fatal(err)
	}
	var out []rpcReply
	timeout := time.After(30 * time.Second)
	for {
		select {
		case r, ok := <-s.out:
			if ok {
				out = append(out, r)
				continue
			}
		case <-timeout:
			s.t.Fatalf("stdout still open 30 s after stdin closed; answers so far:\n%s", raw(out))
		}
		break
	}
	if err := s.cmd.Wait(); err != nil {
		s.t.Errorf("the server: %v; stderr:\n%s", err, s.stderr.String())
	}
	return out, s.stderr.String()
}

// ids lists the ids of replies, comma-separated, numbers in increasing
// order (answers to concurrent calls come in any order).
func ids(replies []rpcReply) string {
	var b []string
	for _, r := range replies {
		b = append(b, string(r.ID))
	}
	slices.SortFunc(b, func(x, y string) int {
		return cmp.Or(cmp.Compare(len(x), len(y)), cmp.Compare(x, y))
	})
	return strings.Join(b, ",")
}

// answered reports whether every reply has a result.
func answered(replies []rpcReply) bool {
	for _, r := range replies {
		if r.Result == nil {
			return false
		}
	}
	return true
}

// raw joins the replies as the server wrote them, each cut to 160 bytes.
func raw(replies []rpcReply) string {
	var b []string
	for _, r := range replies {
		b = append(b, r.String())
	}
	return strings.Join(b, "\n")
}

// String returns the frame as the server wrote it, cut to 160 bytes.
func (r rpcReply) String() string {
	if len(r.raw) > 160 {
		return r.raw[:160] + "…"
	}
	return r.raw
}
