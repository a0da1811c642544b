package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/study"
)

// TestMain runs the test server over stdio when asked (Command's tests
// start the test binary as the upstream command).
func TestMain(m *testing.M) {
	if os.Getenv("PROXY_TEST_SERVER") == "1" {
		srv, _ := newUpstream()
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// record is what the test server received: each tool call's name and raw
// arguments.
type record struct {
	mu    sync.Mutex
	calls []Call
}

func (r *record) got() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// newUpstream is the test server: write (a batch), read, big (an answer
// of n bytes), ask (asks the client for a ping and sends a log message).
func newUpstream() (*mcp.Server, *record) {
	rec := &record{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	handle := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := json.RawMessage(req.Params.Arguments)
		rec.mu.Lock()
		rec.calls = append(rec.calls, Call{Tool: req.Params.Name, Arguments: args})
		rec.mu.Unlock()
		var a struct {
			Items []any `json:"items"`
			N     int   `json:"n"`
		}
		_ = json.Unmarshal(args, &a)
		text := "ok"
		switch req.Params.Name {
		case "write":
			text = fmt.Sprintf("wrote %d items", len(a.Items))
		case "big":
			text = strings.Repeat("x", a.N)
		case "ask":
			if err := req.Session.Ping(ctx, nil); err != nil {
				return nil, err
			}
			//lint:ignore SA1019 a server's notification and an other method, passed through on purpose
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "hello from upstream"})
			text = "asked"
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: map[string]any{"echo": args}}, nil
	}
	for _, name := range []string{"write", "read", "big", "ask"} {
		srv.AddTool(&mcp.Tool{Name: name, Description: "the " + name + " tool", InputSchema: obj}, handle)
	}
	return srv, rec
}

// fakeClock is a settable Clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Duration
}

func (c *fakeClock) clock() time.Duration { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) add(d time.Duration)  { c.mu.Lock(); c.now += d; c.mu.Unlock() }

// logs collects the client's log notifications.
type logs struct {
	mu   sync.Mutex
	msgs []string
}

// session connects a client through a proxy of f (nil: none) to a fresh
// test server in memory.
func session(t *testing.T, f *Fault, clock Clock, limit int) (*mcp.ClientSession, *Injector, *record, *logs) {
	return sessionVia(t, "memory", f, clock, limit)
}

// modes are the ways a test session reaches its server: in memory
// (Wrap), and through Handler to a streamable HTTP server answering in
// event streams (sse) or JSON bodies (json).
var modes = []string{"memory", "sse", "json"}

// forModes runs test once per mode.
func forModes(t *testing.T, test func(t *testing.T, mode string)) {
	for _, m := range modes {
		t.Run(m, func(t *testing.T) { test(t, m) })
	}
}

// sessionVia is session over mode (modes).
func sessionVia(t *testing.T, mode string, f *Fault, clock Clock, limit int) (*mcp.ClientSession, *Injector, *record, *logs) {
	t.Helper()
	ctx := context.Background()
	srv, rec := newUpstream()
	var ct mcp.Transport
	if mode == "memory" {
		st, c := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			t.Fatal(err)
		}
		ct = c
	}
	lg := &logs{}
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		//lint:ignore SA1019 a server's notification and an other method, passed through on purpose
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			lg.mu.Lock()
			lg.msgs = append(lg.msgs, fmt.Sprint(r.Params.Data))
			lg.mu.Unlock()
		},
	})
	var transport mcp.Transport = ct
	var in *Injector
	if f != nil {
		if err := f.Check(); err != nil {
			t.Fatal(err)
		}
		in = NewInjector(f, clock)
		in.MaxMessageBytes = limit
		if mode == "memory" {
			transport = Wrap(ct, in)
		}
	}
	if mode != "memory" {
		up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{JSONResponse: mode == "json"}))
		t.Cleanup(up.Close)
		endpoint := up.URL
		if in != nil {
			u, _ := url.Parse(up.URL)
			px := httptest.NewServer(Handler(u, nil, in))
			t.Cleanup(px.Close)
			endpoint = px.URL + "/mcp"
		}
		transport = &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, in, rec, lg
}

func intp(n int) *int              { return &n }
func i64p(n int64) *int64          { return &n }
func raw(s string) json.RawMessage { return json.RawMessage(s) }

// outcome is what the client saw of a call: "ok: TEXT", "tool_error:
// TEXT" or "rpc CODE: MESSAGE".
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return fmt.Sprintf("rpc %d: %s", rpc.Code, rpc.Message)
	}
	if err != nil {
		return "error: " + err.Error()
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		return "tool_error: " + text
	}
	return "ok: " + text
}

func injected(in *Injector) []string {
	var out []string
	for _, c := range in.Calls() {
		out = append(out, c.Tool+":"+c.Injected)
	}
	return out
}

func want(t *testing.T, what string, got, exp any) {
	t.Helper()
	g, _ := json.Marshal(got)
	e, _ := json.Marshal(exp)
	if string(g) != string(e) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, e)
	}
}

func serverSaw(rec *record) []string {
	var out []string
	for _, c := range rec.got() {
		out = append(out, c.Tool+" "+string(c.Arguments))
	}
	return out
}

func TestTransientK(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		cs, in, rec, _ := sessionVia(t, mode, &Fault{Tool: "write", Class: study.Transient, K: intp(2)}, nil, 0)
		a := map[string]any{"items": []int{1, 2}}
		var got []string
		for range 3 {
			got = append(got, call(t, cs, "write", a))
		}
		got = append(got, call(t, cs, "read", nil))
		want(t, "client", got, []string{
			"rpc -31050: write failed: an upstream dependency is temporarily unavailable (503); nothing was changed",
			"rpc -31050: write failed: an upstream dependency is temporarily unavailable (503); nothing was changed",
			"ok: wrote 2 items", "ok: ok"})
		want(t, "server", serverSaw(rec), []string{`write {"items":[1,2]}`, `read {}`})
		want(t, "calls", injected(in), []string{"write:failed", "write:failed", "write:", "read:"})
		if c := in.Calls(); c[0].Forwarded != nil || string(c[2].Forwarded) != `{"items":[1,2]}` {
			t.Errorf("forwarded: %s, %s", c[0].Forwarded, c[2].Forwarded)
		}
	})
}

func TestTransientForMS(t *testing.T) {
	clk := &fakeClock{now: 5 * time.Second}
	cs, in, rec, _ := session(t, &Fault{Tool: "read", Class: study.Transient, ForMS: i64p(10_000), Surface: study.ToolError}, clk.clock, 0)
	first := call(t, cs, "read", nil)
	clk.add(4 * time.Second)
	second := call(t, cs, "read", nil)
	clk.add(6 * time.Second)
	third := call(t, cs, "read", nil)
	want(t, "client", []string{first, second, third}, []string{
		"tool_error: read failed: an upstream dependency is temporarily unavailable (503); nothing was changed; retry after 10 s",
		"tool_error: read failed: an upstream dependency is temporarily unavailable (503); nothing was changed; retry after 6 s",
		"ok: ok"})
	if w, ok := study.AnnouncedWait([]byte(second)); !ok || w != 6*time.Second {
		t.Errorf("announced wait %v %v", w, ok)
	}
	want(t, "server", len(rec.got()), 1)
	want(t, "calls", injected(in), []string{"read:failed", "read:failed", "read:"})
}

func TestRateLimitWindowExtends(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		clk := &fakeClock{}
		cs, in, rec, _ := sessionVia(t, mode, &Fault{Tool: "read", Class: study.RateLimit, WindowMS: i64p(30_000)}, clk.clock, 0)
		var got []string
		var waits []time.Duration
		step := func(d time.Duration) {
			clk.add(d)
			s := call(t, cs, "read", nil)
			got = append(got, s)
			w, _ := study.AnnouncedWait([]byte(s))
			waits = append(waits, w)
		}
		step(0)                // opens the window: fails, 30 s
		step(10 * time.Second) // inside: restarts it
		step(30 * time.Second) // the restarted window has passed
		want(t, "waits", waits, []time.Duration{30 * time.Second, 30 * time.Second, 0})
		if !strings.HasPrefix(got[0], fmt.Sprintf("rpc %d: read failed: the caller exceeded a rate limit", study.RPCRateLimited)) || got[2] != "ok: ok" {
			t.Errorf("client: %q", got)
		}
		want(t, "server", len(rec.got()), 1)
		want(t, "calls", injected(in), []string{"read:failed", "read:failed", "read:"})
		// A message of the fault's own keeps the announced wait.
		cs, _, _, _ = sessionVia(t, mode, &Fault{Tool: "read", Class: study.RateLimit, WindowMS: i64p(1500), Message: "slow down"}, (&fakeClock{}).clock, 0)
		want(t, "own message", call(t, cs, "read", nil), fmt.Sprintf("rpc %d: slow down: retry after 2 s", study.RPCRateLimited))
	})
}

func TestAuthentication(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		cs, in, rec, _ := sessionVia(t, mode, &Fault{Tool: "write", Class: study.AuthRequired, AuthTool: "login"}, nil, 0)
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
			if tl.Name == "login" && tl.Description != "Obtain a fresh credential for the server" {
				t.Errorf("login's description %q", tl.Description)
			}
		}
		want(t, "tools", names, []string{"ask", "big", "read", "write", "login"})
		got := []string{call(t, cs, "write", nil), call(t, cs, "write", nil), call(t, cs, "login", nil), call(t, cs, "write", nil)}
		if !strings.HasPrefix(got[0], fmt.Sprintf("rpc %d: write failed: the call lacks a valid credential", study.RPCUnauthorized)) ||
			!strings.HasPrefix(got[2], "ok: A fresh credential") || got[3] != "ok: wrote 0 items" {
			t.Errorf("client: %q", got)
		}
		want(t, "server", serverSaw(rec), []string{"write {}"})
		want(t, "calls", injected(in), []string{"write:failed", "write:failed", "login:auth", "write:"})
	})
}

func TestUnknownTool(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		cs, in, rec, _ := sessionVia(t, mode, &Fault{Tool: "read", Class: study.UnknownTool}, nil, 0)
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools.Tools {
			if tl.Name == "read" {
				t.Error("tools/list still lists read")
			}
		}
		want(t, "tools", len(tools.Tools), 3)
		got := []string{call(t, cs, "read", nil), call(t, cs, "read", nil), call(t, cs, "write", nil)}
		want(t, "client", got, []string{`rpc -32602: unknown tool "read"`, `rpc -32602: unknown tool "read"`, "ok: wrote 0 items"})
		want(t, "server", serverSaw(rec), []string{"write {}"})
		want(t, "calls", injected(in), []string{"read:failed", "read:failed", "write:"})
		// The Go SDK's own words for a tool it lacks.
		cs, _, _, _ = sessionVia(t, mode, nil, nil, 0)
		want(t, "sdk", call(t, cs, "nosuch", nil), `rpc -32602: unknown tool "nosuch"`)
	})
}

func TestInvalidValue(t *testing.T) {
	for _, k := range []*int{nil, intp(1)} {
		cs, in, rec, _ := session(t, &Fault{Tool: "write", Class: study.InvalidValue, Pointer: "/mode", Value: raw(`"fast"`), K: k}, nil, 0)
		got := []string{
			call(t, cs, "write", map[string]any{"mode": "fast"}),
			call(t, cs, "write", map[string]any{"mode": "safe"}),
			call(t, cs, "write", map[string]any{"mode": "fast"}),
		}
		third := "rpc -32602: invalid params: an argument has a value outside its domain (/mode)"
		forwarded := []string{`write {"mode":"safe"}`}
		if k != nil {
			third = "ok: wrote 0 items"
			forwarded = append(forwarded, `write {"mode":"fast"}`)
		}
		want(t, "client", got, []string{"rpc -32602: invalid params: an argument has a value outside its domain (/mode)", "ok: wrote 0 items", third})
		want(t, "server", serverSaw(rec), forwarded)
		if in.Calls()[0].Injected != Failed {
			t.Errorf("calls %v", injected(in))
		}
	}
	cs, _, rec, _ := session(t, &Fault{Tool: "write", Class: study.InvalidType, Pointer: "/n", Value: raw(`"3"`), Surface: study.ToolError}, nil, 0)
	want(t, "type", []string{call(t, cs, "write", map[string]any{"n": "3"}), call(t, cs, "write", map[string]any{"n": 3})},
		[]string{"tool_error: invalid params: an argument has the wrong type (/n)", "ok: wrote 0 items"})
	want(t, "server", serverSaw(rec), []string{`write {"n":3}`})
}

func TestUpstreamOutage(t *testing.T) {
	cs, in, rec, _ := session(t, &Fault{Tool: "read", Class: study.UpstreamOutage, Message: "the archive is down"}, nil, 0)
	got := []string{call(t, cs, "read", nil), call(t, cs, "read", nil), call(t, cs, "read", nil)}
	want(t, "client", got, slices.Repeat([]string{"rpc -31050: the archive is down"}, 3))
	want(t, "server", len(rec.got()), 0)
	want(t, "calls", injected(in), []string{"read:failed", "read:failed", "read:failed"})
}

func TestTimeoutCommitted(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		clk := &fakeClock{}
		cs, in, rec, _ := sessionVia(t, mode, &Fault{Tool: "write", Class: study.TimeoutCommitted, DeadlineMS: i64p(30_000)}, clk.clock, 0)
		a := map[string]any{"items": []int{7}}
		got := []string{call(t, cs, "write", a), call(t, cs, "write", a)}
		want(t, "client", got, []string{"rpc -32001: Request timed out after 30 s", "ok: wrote 1 items"})
		want(t, "server", serverSaw(rec), []string{`write {"items":[7]}`, `write {"items":[7]}`})
		want(t, "calls", injected(in), []string{"write:lost", "write:"})
		if in.Advanced() != 30*time.Second || in.Now() != 30*time.Second {
			t.Errorf("advanced %v, now %v", in.Advanced(), in.Now())
		}
	})
}

func TestPartialCommit(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		cs, in, rec, _ := sessionVia(t, mode, &Fault{Tool: "write", Class: study.PartialCommit, Pointer: "/items", At: intp(2)}, nil, 0)
		a := map[string]any{"items": []string{"a", "b", "c", "d"}, "to": "x"}
		got := []string{call(t, cs, "write", a), call(t, cs, "write", a)}
		want(t, "client", got, []string{
			"rpc -31050: write failed at item 3 of 4: a batch was applied only in part before it failed; items 1 to 2 were applied, the rest were not",
			"ok: wrote 4 items"})
		want(t, "server", serverSaw(rec), []string{`write {"items":["a","b"],"to":"x"}`, `write {"items":["a","b","c","d"],"to":"x"}`})
		want(t, "calls", injected(in), []string{"write:partial", "write:"})
		if c := in.Calls()[0]; string(c.Forwarded) != `{"items":["a","b"],"to":"x"}` || string(c.Arguments) != `{"items":["a","b","c","d"],"to":"x"}` {
			t.Errorf("call %s → %s", c.Arguments, c.Forwarded)
		}
		// A batch no longer than at is not cut, and not counted.
		cs, in, _, _ = sessionVia(t, mode, &Fault{Tool: "write", Class: study.PartialCommit, Pointer: "/items", At: intp(2)}, nil, 0)
		want(t, "short", call(t, cs, "write", map[string]any{"items": []int{1}}), "ok: wrote 1 items")
		want(t, "short calls", injected(in), []string{"write:"})
	})
}

func TestSilentNoop(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		cs, in, rec, _ := sessionVia(t, mode, &Fault{Tool: "write", Class: study.SilentNoop, K: intp(1),
			Answer: raw(`{"content":[{"type":"text","text":"Accepted; 0 records were written."}]}`)}, nil, 0)
		got := []string{call(t, cs, "write", nil), call(t, cs, "write", nil)}
		want(t, "client", got, []string{"ok: Accepted; 0 records were written.", "ok: wrote 0 items"})
		want(t, "server", len(rec.got()), 1)
		want(t, "calls", injected(in), []string{"write:noop", "write:"})
		if in.Calls()[0].Forwarded != nil {
			t.Error("a no-op was forwarded")
		}
	})
}

// TestPassThrough: with a fault on another tool, the client sees exactly
// what it sees without the proxy (tools/list, results, a server's ping
// and log message, other methods), and the server the same arguments.
func TestPassThrough(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		run := func(f *Fault) ([]string, []string) {
			cs, _, rec, lg := sessionVia(t, mode, f, nil, 0)
			ctx := context.Background()
			var out []string
			add := func(v any, err error) {
				if err != nil {
					out = append(out, "error: "+err.Error())
					return
				}
				b, _ := json.Marshal(v)
				out = append(out, string(b))
			}
			add(cs.ListTools(ctx, nil))
			add(nil, cs.Ping(ctx, nil))
			//lint:ignore SA1019 a server's notification and an other method, passed through on purpose
			add(nil, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
			add(cs.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"items": []any{1, "two", map[string]any{"z": 1, "a": []int{}}}, "ünï": "\u2028"}}))
			add(cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask"}))
			add(cs.ListPrompts(ctx, nil))
			add(cs.ListResources(ctx, nil))
			add(cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "x"}, Argument: mcp.CompleteParamsArgument{Name: "a", Value: "b"}}))
			time.Sleep(50 * time.Millisecond) // the log notification
			lg.mu.Lock()
			out = append(out, lg.msgs...)
			lg.mu.Unlock()
			return out, serverSaw(rec)
		}
		direct, directServer := run(nil)
		for _, f := range []*Fault{
			{Tool: "other", Class: study.UnknownTool},
			{Tool: "other", Class: study.Transient, K: intp(3)},
			{Tool: "other", Class: study.PartialCommit, Pointer: "/items", At: intp(1)},
		} {
			got, gotServer := run(f)
			want(t, string(f.Class)+" client", got, direct)
			want(t, string(f.Class)+" server", gotServer, directServer)
		}
		if !slices.ContainsFunc(direct, func(s string) bool { return strings.Contains(s, `"text":"asked"`) }) {
			t.Errorf("the server's ping to the client did not pass: %q", direct)
		}
	})
}

// TestBound: an answer over the bound is a JSON-RPC error to the client,
// and the session goes on; so is a request over it, which the server
// never sees.
func TestBound(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		cs, in, rec, _ := sessionVia(t, mode, &Fault{Tool: "other", Class: study.UpstreamOutage}, nil, 4096)
		got := call(t, cs, "big", map[string]any{"n": 10_000})
		if !strings.HasPrefix(got, "rpc -32603: stress proxy: the server's answer is") || !strings.Contains(got, "bound of 4096 bytes") {
			t.Errorf("big answer: %q", got)
		}
		want(t, "small answer", call(t, cs, "big", map[string]any{"n": 10}), "ok: xxxxxxxxxx")
		got = call(t, cs, "write", map[string]any{"items": []string{strings.Repeat("y", 5000)}})
		if !strings.HasPrefix(got, "rpc -32600: stress proxy: the request is") {
			t.Errorf("big request: %q", got)
		}
		want(t, "server", len(rec.got()), 2)
		want(t, "after", call(t, cs, "read", nil), "ok: ok")
		_ = in
	})
}

// TestCommand runs the test server as a command (this test binary):
// the fault applies, and closing the session stops the command.
func TestCommand(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PROXY_TEST_SERVER=1")
	in := NewInjector(&Fault{Tool: "read", Class: study.Transient}, nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), Command(cmd, in), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{call(t, cs, "read", nil), call(t, cs, "read", nil), call(t, cs, "write", map[string]any{"items": []int{1}})}
	want(t, "client", got, []string{"rpc -31050: read failed: an upstream dependency is temporarily unavailable (503); nothing was changed", "ok: ok", "ok: wrote 1 items"})
	start := time.Now()
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
		t.Errorf("the command still runs after Close (%v)", cmd.ProcessState)
	}
	if d := time.Since(start); d > TerminateGrace {
		t.Errorf("close took %v", d)
	}
	want(t, "calls", injected(in), []string{"read:failed", "read:", "write:"})
}

// closeFails is a server connection whose read, once the connection is
// closed, fails with an error other than EOF, as a command's stdout pipe
// does when the command's Wait closed it before the read saw its end.
type closeFails struct {
	closed chan struct{}
	once   sync.Once
}

func (c *closeFails) Read(ctx context.Context) (jsonrpc.Message, error) {
	<-c.closed
	return nil, errors.New("read |0: file already closed")
}
func (c *closeFails) Write(context.Context, jsonrpc.Message) error { return nil }
func (c *closeFails) Close() error                                 { c.once.Do(func() { close(c.closed) }); return nil }
func (c *closeFails) SessionID() string                            { return "" }

// TestRelayClosesServer: when the client ends, the relay closes the
// server; the server's read failing because of that close is the end the
// relay caused, not an error of the session.
func TestRelayClosesServer(t *testing.T) {
	near, far := mcp.NewInMemoryTransports()
	ctx := context.Background()
	client, err := near.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := far.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	in := NewInjector(&Fault{Tool: "x", Class: study.UnknownTool}, nil)
	if err := relay(ctx, client, &closeFails{closed: make(chan struct{})}, in); err != nil {
		t.Errorf("relay: %v", err)
	}
}
