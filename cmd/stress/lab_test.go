package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/study"
)

// TestLabList pins `stress lab list` and its JSON form.
func TestLabList(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"lab", "list"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	golden(t, "lab-list.golden", out.String())
	out.Reset()
	if err := run(context.Background(), []string{"lab", "list", "-json", "-set", "core"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var rows []labRow
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || len(rows) != len(labIDs(t)) || rows[0].Summary == "" {
		t.Errorf("lab list -json: %v, %d rows", err, len(rows))
	}
}

func labIDs(t *testing.T) []string {
	s, err := lab.BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	return s.IDs()
}

// TestLabUsage checks the lab command's usage errors, each naming the flag
// or argument at fault.
func TestLabUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"lab"}, "name a subcommand"},
		{[]string{"lab", "run"}, `unknown subcommand "run"`},
		{[]string{"lab", "serve"}, "exactly one of -stdio and -http"},
		{[]string{"lab", "serve", "-stdio", "-http", ":0"}, "exactly one of -stdio and -http"},
		{[]string{"lab", "serve", "-stdio", "-set", "nope"}, "flag -set"},
		{[]string{"lab", "serve", "-stdio", "-scenario", "S01"}, `flag -scenario: set core has no scenario "S01"`},
		{[]string{"lab", "serve", "-stdio", "extra"}, "unexpected arguments"},
		{[]string{"lab", "list", "-set", "nope"}, "flag -set"},
	}
	for _, c := range cases {
		t.Run(argsName(c.args), func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), c.args, &out, &errb)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("stress %v: %v, want a usage error containing %q", c.args, err, c.want)
			}
		})
	}
}

// TestLabServeStdio drives `stress lab serve -stdio` (the built binary)
// with the Go SDK client through an authentication scenario: the call fails,
// authenticate grants a token, the call succeeds with it, lab/state reports
// the outcome, and the command prints it on stderr when the client leaves.
func TestLabServeStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := stressBinary(t)
	cmd := exec.Command(bin, "lab", "serve", "-stdio", "-scenario", "X19", "-seed", "5")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "lab-test", Version: "1"}, nil)
	if err := mcp.AddSendingCustomMethod[*lab.StateParams, *lab.StateResult](client, lab.MethodState); err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"invoice_id": "INV-2003", "amount_cents": 990, "currency": "EUR"}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "charge_payment", Arguments: args})
	if err != nil || !res.IsError {
		t.Fatalf("first call: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "authenticate", Arguments: map[string]any{"scope": "payments:write"}})
	if err != nil || res.IsError {
		t.Fatalf("authenticate: %v %+v", err, res)
	}
	var tok struct{ Token string }
	b, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(b, &tok) != nil || !strings.HasPrefix(tok.Token, "tok_") {
		t.Fatalf("token %s", b)
	}
	args["auth_token"] = tok.Token
	if res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "charge_payment", Arguments: args}); err != nil || res.IsError {
		t.Fatalf("with the token: %v %+v", err, res)
	}
	st, err := mcp.CallCustomMethod[*lab.StateParams, *lab.StateResult](ctx, cs, lab.MethodState, &lab.StateParams{})
	if err != nil || !st.Outcome.Recovered || st.Outcome.Harm || st.Outcome.Calls != 3 {
		t.Fatalf("lab/state: %v %+v", err, st)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if !strings.Contains(stderr.String(), "serving scenario X19 (L02 lab-billing, authentication on charge_payment) over stdio, virtual clock, seed 5") ||
		!strings.Contains(stderr.String(), "outcome of X19: recovered true, harm false, 3 calls, 0 ms of lab time") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// serveLab starts `stress lab serve -http 127.0.0.1:0 args…` and returns
// its URL and a function that interrupts it and returns its stderr.
func serveLab(t *testing.T, bin string, args ...string) (string, func() string) {
	t.Helper()
	return serveCommand(t, bin, append([]string{"lab", "serve", "-http", "127.0.0.1:0"}, args...)...)
}

// serveCommand starts bin with args, a command that serves HTTP and
// prints its URL (http://HOST:PORT/mcp, the first on its stderr), and
// returns the URL and a func that stops it with SIGINT and returns its
// stderr.
func serveCommand(t *testing.T, bin string, args ...string) (string, func() string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urlc := make(chan string, 1)
	var rest bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			rest.WriteString(sc.Text() + "\n")
			if m := regexp.MustCompile(`http://[0-9.:]+/mcp`).FindString(sc.Text()); m != "" {
				urlc <- m
			}
		}
	}()
	stop := func() string {
		_ = cmd.Process.Signal(syscall.SIGINT)
		// Note: Wait closes the stderr pipe once the process has
		// exited, losing what the reader has not read yet (the proxy's
		// last lines): read to the end first, bounded in case a child
		// the command started still holds the pipe.
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
		_ = cmd.Wait()
		<-done
		return rest.String()
	}
	select {
	case u := <-urlc:
		return u, stop
	case <-time.After(30 * time.Second):
		t.Fatalf("%s printed no URL:\n%s", strings.Join(args[:2], " "), stop())
	}
	return "", nil
}

// TestLabRecord records the lab corpus again through stress lab serve
// -stdio and checks it against manifests/corpus/lab: the same records
// (every field but the confirmation, which a person adds) and the same
// frames, compared as frameLines reads them.
func TestLabRecord(t *testing.T) {
	bin := stressBinary(t)
	dir := filepath.Join(t.TempDir(), "lab")
	out, err := exec.Command(bin, "lab", "record", "-out", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "recorded 40 scenarios of lab set core") {
		t.Fatalf("%v\n%s", err, out)
	}
	got, err := study.LoadCorpus(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	want, err := study.LoadCorpus(os.DirFS("../../manifests/corpus/lab"), ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Scenarios) != len(want.Scenarios) {
		t.Fatalf("%d records, want %d", len(got.Scenarios), len(want.Scenarios))
	}
	for i := range got.Scenarios {
		g, w := got.Scenarios[i], want.Scenarios[i]
		if g.Coding != nil || !g.Capture.Proposed {
			t.Errorf("%s: a fresh recording is confirmed", g.ID)
		}
		w = w.Unconfirmed()
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if !bytes.Equal(gb, wb) {
			t.Errorf("%s: recorded\n%s\nwant\n%s", g.ID, gb, wb)
		}
		if gl, wl := frameLines(t, filepath.Join(dir, g.Capture.Frames)), frameLines(t, filepath.Join("../../manifests/corpus/lab", w.Capture.Frames)); !slices.Equal(gl, wl) {
			t.Errorf("%s: frames differ:\n%q\nwant\n%q", g.ID, gl, wl)
		}
	}
	if out, err := exec.Command(bin, "lab", "record", "-out", dir).CombinedOutput(); err == nil || !strings.Contains(string(out), "is not empty") {
		t.Errorf("recording over an existing directory: %v %s", err, out)
	}
}

// frameLines reads a frames file of lab record as a sorted set of "dir
// message" lines, each message re-encoded (keys sorted), leaving out what
// depends on timing: the lab/state polls of a held call and the lab state
// results (of lab/state and lab/advance), whose number varies; the order
// of frames crossing in opposite directions at once; and request ids,
// since each poll takes one. The ids are renumbered in the order each side
// sent the requests kept, in the requests, their responses and the
// requestId of cancellations.
func frameLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"send": "recv", "recv": "send"}
	ids := map[string]int{}  // by the sending side and the id as sent
	sent := map[string]int{} // requests kept, by the sending side
	var out []string
	for l := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var f struct {
			Dir string `json:"dir"`
			Raw string `json:"raw"`
		}
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if strings.Contains(f.Raw, `"method":"lab/state"`) || strings.Contains(f.Raw, `"virtual":true,"held":`) {
			continue
		}
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(f.Raw))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		key := func(dir string, id any) string { return fmt.Sprintf("%s %T %v", dir, id, id) }
		if id, ok := m["id"]; ok {
			if _, req := m["method"]; req {
				sent[f.Dir]++
				ids[key(f.Dir, id)] = sent[f.Dir]
				m["id"] = sent[f.Dir]
			} else if n, ok := ids[key(other[f.Dir], id)]; ok {
				m["id"] = n
			}
		}
		if p, ok := m["params"].(map[string]any); ok && m["method"] == "notifications/cancelled" {
			if n, ok := ids[key(f.Dir, p["requestId"])]; ok {
				p["requestId"] = n
			}
		}
		nb, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f.Dir+" "+string(nb))
	}
	slices.Sort(out)
	return out
}

// TestLabServeShapes drives `stress lab serve -stdio -shape …` (the built
// binary) with the Go SDK client: under ratelimited the lab's own rate
// limit (X40) arrives as the JSON-RPC error -32023 with data.retryAfterMs
// alone, and the upstream limit of X05 as the scenario serves it; under
// toolfailure+sep2145 the JSON-RPC error of X05 arrives as an isError
// result carrying the ToolFailure classification in _meta; a shape the
// scenario's surface cannot carry is refused.
func TestLabServeShapes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := stressBinary(t)
	set, err := lab.BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	call := func(id, shape string) (*mcp.CallToolResult, error) {
		t.Helper()
		sc, _ := set.Scenario(id)
		var args map[string]any
		if err := json.Unmarshal(sc.Args, &args); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "lab", "serve", "-stdio", "-scenario", id, "-shape", shape)
		client := mcp.NewClient(&mcp.Implementation{Name: "lab-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if r := cs.InitializeResult(); r == nil || r.ProtocolVersion != "2026-07-28" {
			t.Errorf("the lab and the Go SDK client did not speak 2026-07-28: %+v", r)
		}
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: sc.Tool, Arguments: args})
	}
	_, err = call("X40", "ratelimited")
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != -32023 || string(rpc.Data) != `{"retryAfterMs":20000}` {
		t.Errorf("ratelimited, the lab's own limit: %v (%T)", err, err)
	}
	_, err = call("X05", "ratelimited")
	if !errors.As(err, &rpc) || rpc.Code == -32023 || strings.Contains(string(rpc.Data), "errorCategory") {
		t.Errorf("ratelimited, an upstream limit (RL-6: not -32023, no contract): %v (%T)", err, err)
	}
	res, err := call("X05", "toolfailure+sep2145")
	if err != nil || res == nil || !res.IsError {
		t.Fatalf("toolfailure+sep2145: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.Meta["io.modelcontextprotocol/toolFailure"])
	if !strings.Contains(string(b), `"class":"reliability"`) || !strings.Contains(string(b), `"retryable":true`) || !strings.Contains(string(b), `"retryNotBefore":1767225660000`) {
		t.Errorf("toolfailure+sep2145: _meta %s", b)
	}
	var out, errb bytes.Buffer
	err = run(ctx, []string{"lab", "serve", "-stdio", "-scenario", "X06", "-shape", "ratelimited"}, &out, &errb)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "flag -shape: scenario X06 serves its rate_limit failure success_shaped, which cannot carry a -32023 error") {
		t.Errorf("X06 ratelimited: %v", err)
	}
	err = run(ctx, []string{"lab", "serve", "-stdio", "-shape", "category"}, &out, &errb)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), `flag -shape: "category" is not an error shape`) {
		t.Errorf("-shape category: %v", err)
	}
}
