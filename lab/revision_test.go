package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/study"
)

// frameLog is the Writer of an mcp.LoggingTransport: every message the
// client read or wrote, one a line.
type frameLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (f *frameLog) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.b.Write(p)
}

// reads returns the messages the client read.
func (f *frameLog) reads() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for l := range strings.SplitSeq(f.b.String(), "\n") {
		if m, ok := strings.CutPrefix(l, "read: "); ok {
			out = append(out, m)
		}
	}
	return out
}

// wireMessage is a JSON-RPC message as the tests read it.
type wireMessage struct {
	Result map[string]json.RawMessage `json:"result"`
	Error  *struct {
		Code int64 `json:"code"`
	} `json:"error"`
}

// definedCodes are the codes of -32000 to -32099 the 2026-07-28 revision
// defines (HeaderMismatch, MissingRequiredClientCapability,
// UnsupportedProtocolVersion).
var definedCodes = map[int64]bool{-32020: true, -32021: true, -32022: true}

// checkMessages checks what a client read on a session of version: on
// 2026-07-28, every result carries resultType "complete" and no error
// code lies in -32000 to -32099 unless the revision defines it (allowed
// adds the codes the session's error shape sends on purpose: SEP-3304's
// -32023); before it, the lab's codes are its older ones. It returns the
// error codes read.
func checkMessages(t *testing.T, what, version string, reads []string, allowed ...int64) []int64 {
	t.Helper()
	var codes []int64
	for _, raw := range reads {
		var m wireMessage
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("%s: %v: %s", what, err, raw)
		}
		if m.Result != nil && version >= Revision2026 && string(m.Result["resultType"]) != `"complete"` {
			t.Errorf("%s: a %s result without resultType complete: %s", what, version, raw)
		}
		if m.Error == nil {
			continue
		}
		c := m.Error.Code
		codes = append(codes, c)
		isAllowed := false
		for _, a := range allowed {
			isAllowed = isAllowed || a == c
		}
		switch {
		case version >= Revision2026 && c <= -32000 && c >= -32099 && !definedCodes[c] && !isAllowed:
			t.Errorf("%s: code %d on a %s session lies in the range the revision reserves and is not one it defines: %s", what, c, version, raw)
		case version < Revision2026 && c != LegacyCode(c):
			t.Errorf("%s: code %d on a %s session, want the lab's older code %d", what, c, version, LegacyCode(c))
		}
	}
	return codes
}

// driveFirstCall connects a Go SDK client (asking for version; "" the
// SDK's latest) over transport, makes scenario sc's first call (its held
// answer abandoned as a client whose deadline passed, the lab clock then
// moved past it), reads lab/state, and returns the messages read and the
// version negotiated.
func driveFirstCall(t *testing.T, transport mcp.Transport, version string, sc *Scenario, clock *VirtualClock) ([]string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log := &frameLog{}
	cs, err := newClient().Connect(ctx, &mcp.LoggingTransport{Transport: transport, Writer: log}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("%s: connect: %v", sc.ID, err)
	}
	defer cs.Close()
	negotiated := cs.InitializeResult().ProtocolVersion
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = cs.CallTool(cctx, &mcp.CallToolParams{Name: sc.Tool, Arguments: sc.Args})
	}()
	for held := false; !held; {
		select {
		case <-done:
			held = true
		case <-time.After(time.Millisecond):
			if clock != nil && clock.Sleepers() > 0 {
				ccancel()
				<-done
				held = true
			}
		}
	}
	ccancel()
	if _, err := mcp.CallCustomMethod[*AdvanceParams, *StateResult](ctx, cs, MethodAdvance, &AdvanceParams{MS: MaxDurationMS}); err != nil {
		t.Fatalf("%s: lab/advance: %v", sc.ID, err)
	}
	if _, err := mcp.CallCustomMethod[*StateParams, *StateResult](ctx, cs, MethodState, &StateParams{}); err != nil {
		t.Fatalf("%s: lab/state: %v", sc.ID, err)
	}
	return log.reads(), negotiated
}

// TestRevision2026HTTP serves every core scenario, plain and in every
// error shape it can carry, over streamable HTTP (NewHTTPHandler) to the
// Go SDK client: a client of 2026-07-28 negotiates it, reads resultType on
// every result (the unknown tool's and lab/state's too) and no code the
// revision reserves without defining it (but -32023 in the ratelimited
// shapes, the proposal studied); a client of 2025-11-25 reads the lab's
// older codes, and no resultType was added for it.
func TestRevision2026HTTP(t *testing.T) {
	set := coreSet(t)
	shapes := append([]study.Condition{""}, study.ShapeConditions...)
	seen := map[string]map[int64]bool{Revision2026: {}, "2025-11-25": {}}
	for _, sc := range set.Scenarios {
		for _, shape := range shapes {
			if CanCarry(sc, shape) != nil {
				continue
			}
			for _, version := range []string{"", "2025-11-25"} {
				l := New(sc, Options{Seed: 1, Shape: shape})
				hs := httptest.NewServer(NewHTTPHandler(NewServer(l)))
				what := fmt.Sprintf("%s %q %q", sc.ID, shape, version)
				reads, negotiated := driveFirstCall(t, &mcp.StreamableClientTransport{Endpoint: hs.URL}, version, sc, l.Clock().(*VirtualClock))
				hs.Close()
				want := version
				if want == "" {
					want = Revision2026
				}
				if negotiated != want {
					t.Fatalf("%s: negotiated %q, want %q", what, negotiated, want)
				}
				var allowed []int64
				if shape == study.RateLimited || strings.Contains(string(shape), "ratelimited") {
					allowed = append(allowed, study.RateLimitedCode)
				}
				for _, c := range checkMessages(t, what, negotiated, reads, allowed...) {
					seen[negotiated][c] = true
				}
			}
		}
	}
	// The lab's own codes were met on both sides, each on its own.
	for _, c := range []int64{study.RPCUpstream, study.RPCUnauthorized, study.RPCConflict, study.RPCLocked} {
		if !seen[Revision2026][c] || seen["2025-11-25"][c] || !seen["2025-11-25"][LegacyCode(c)] {
			t.Errorf("code %d: seen on 2026-07-28 %v, its older code %d on 2025-11-25 %v", c, seen[Revision2026][c], LegacyCode(c), seen["2025-11-25"][LegacyCode(c)])
		}
	}
}

// TestRevision2026Stdio does the same over stdio (the test binary serving
// a scenario, as TestStdio does) for the scenarios of protocol errors and
// of the unknown tool, whose answers the SDK's own path does not mark.
func TestRevision2026Stdio(t *testing.T) {
	set := coreSet(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sc := range set.Scenarios {
		if sc.Surface != study.ProtocolError && sc.Class != study.UnknownTool || sc.Held() {
			continue
		}
		n++
		for _, version := range []string{"", "2025-11-25"} {
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), "LAB_HELPER=serve", "LAB_SCENARIO="+sc.ID, "LAB_SEED=1")
			reads, negotiated := driveFirstCall(t, &mcp.CommandTransport{Command: cmd}, version, sc, nil)
			if version == "" && negotiated != Revision2026 {
				t.Fatalf("%s: negotiated %q", sc.ID, negotiated)
			}
			checkMessages(t, sc.ID+" over stdio", negotiated, reads)
		}
	}
	if n < 8 {
		t.Errorf("only %d scenarios", n)
	}
}

// TestUnknownToolResultType checks the unknown tool's answer on a
// 2026-07-28 session is the lab's result with resultType added, member for
// member (completeResult copies every field), and on 2025-11-25 the lab's
// result as before.
func TestUnknownToolResultType(t *testing.T) {
	l := New(nil, Options{})
	want, _ := json.Marshal(l.Call("nope", json.RawMessage(`{}`)).Result)
	for _, c := range []struct{ name, version, add string }{{"the latest version", "", `,"resultType":"complete"`}, {"2025-11-25", "2025-11-25", ""}} {
		t.Run(c.name, func(t *testing.T) {
			hs := httptest.NewServer(NewHTTPHandler(NewServer(New(nil, Options{}))))
			ctx := context.Background()
			log := &frameLog{}
			cs, err := newClient().Connect(ctx, &mcp.LoggingTransport{Transport: &mcp.StreamableClientTransport{Endpoint: hs.URL}, Writer: log}, &mcp.ClientSessionOptions{ProtocolVersion: c.version})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}}); err != nil {
				t.Fatal(err)
			}
			cs.Close()
			hs.Close()
			reads := log.reads()
			var m struct {
				Result json.RawMessage `json:"result"`
			}
			_ = json.Unmarshal([]byte(reads[len(reads)-1]), &m)
			var got, exp map[string]any
			_ = json.Unmarshal(m.Result, &got)
			_ = json.Unmarshal([]byte(strings.TrimSuffix(string(want), "}")+c.add+"}"), &exp)
			delete(got, "_meta") // the SDK's serverInfo on 2026-07-28
			gb, _ := json.Marshal(got)
			eb, _ := json.Marshal(exp)
			if !bytes.Equal(gb, eb) {
				t.Errorf("version %q: unknown tool answered\n%s\nwant\n%s", c.version, gb, eb)
			}
		})
	}
}

// rateLimitScenario returns a core scenario whose first call the
// ratelimited shape answers with -32023, and the wait it announces.
func rateLimitScenario(t *testing.T) (*Scenario, time.Duration) {
	t.Helper()
	for _, sc := range coreSet(t).Scenarios {
		if CanCarry(sc, study.RateLimited) != nil {
			continue
		}
		r := New(sc, Options{Shape: study.RateLimited}).Call(sc.Tool, sc.Args)
		if r.Err != nil && r.Err.Code == study.RateLimitedCode {
			return sc, r.RetryAfter
		}
	}
	t.Fatal("no scenario answers -32023 under ratelimited")
	return nil, 0
}

// TestHTTPRateLimited checks SEP-3304's HTTP binding on the served lab:
// -32023 comes as HTTP 429 with Retry-After (the wait in whole seconds)
// and the JSON-RPC error as the body, on a raw 2026-07-28 request and on
// a 2025-11-25 session, while every other answer keeps its status; the Go
// SDK client reads a 429 as a transient HTTP failure (it does not read the
// body, as SEP-3304's survey of SDKs says) and its session goes on.
func TestHTTPRateLimited(t *testing.T) {
	sc, wait := rateLimitScenario(t)
	hs := httptest.NewServer(NewHTTPHandler(NewServer(New(sc, Options{Shape: study.RateLimited}))))
	defer hs.Close()
	args, _ := json.Marshal(sc.Args)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
	post := func(body string, header map[string]string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	h2026 := map[string]string{"Mcp-Protocol-Version": Revision2026, "Mcp-Method": "tools/call", "Mcp-Name": sc.Tool}
	resp, body := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{%s,"name":%q,"arguments":%s}}`, meta, sc.Tool, args), h2026)
	secs := fmt.Sprint(int64((wait + time.Second - 1) / time.Second))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != secs || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("2026-07-28 rate limit: HTTP %d, Retry-After %q (want 429, %s), Content-Type %q", resp.StatusCode, resp.Header.Get("Retry-After"), secs, resp.Header.Get("Content-Type"))
	}
	var m struct {
		ID    int `json:"id"`
		Error struct {
			Code int64 `json:"code"`
			Data struct {
				RetryAfterMs int64 `json:"retryAfterMs"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.ID != 7 || m.Error.Code != study.RateLimitedCode || m.Error.Data.RetryAfterMs != wait.Milliseconds() {
		t.Errorf("2026-07-28 rate limit body %s (%v)", body, err)
	}
	// Another answer on the same lab keeps its status.
	resp, body = post(fmt.Sprintf(`{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{%s}}`, meta), map[string]string{"Mcp-Protocol-Version": Revision2026, "Mcp-Method": "tools/list"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Retry-After") != "" || !bytes.Contains(body, []byte(`"resultType":"complete"`)) {
		t.Errorf("tools/list: HTTP %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}

	// The Go SDK client, on both versions, over the recording transport.
	for _, version := range []string{"", "2025-11-25"} {
		var statuses []string
		client := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			resp, err := http.DefaultTransport.RoundTrip(r)
			if err == nil {
				statuses = append(statuses, fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("Retry-After")))
			}
			return resp, err
		})}
		ctx := context.Background()
		cs, err := newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: client}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: sc.Tool, Arguments: sc.Args})
		if err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
			t.Errorf("version %q: the Go SDK client got %v, want its HTTP 429 error", version, err)
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Errorf("version %q: the session did not go on: %v", version, err)
		}
		cs.Close()
		if !strings.Contains(strings.Join(statuses, ","), "429 "+secs) {
			t.Errorf("version %q: HTTP statuses %v, want a 429 with Retry-After %s", version, statuses, secs)
		}
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRateLimitedBody checks rateLimited reads both framings the SDK
// writes and refuses everything else.
func TestRateLimitedBody(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":3,"error":{"code":-32023,"message":"m","data":{"retryAfterMs":1500}}}`
	for _, c := range []struct {
		name string
		in   string
		wait int64
		ok   bool
	}{
		{"JSON", msg, 2, true},
		{"an SSE event", "event: message\nid: 1\ndata: " + msg + "\n\n", 2, true},
		{"no retry-after", `{"jsonrpc":"2.0","id":3,"error":{"code":-32023,"message":"m"}}`, -1, true},
		{"a retry-after of 0", `{"jsonrpc":"2.0","id":3,"error":{"code":-32023,"message":"m","data":{"retryAfterMs":0}}}`, 0, true},
		{"another error code", `{"jsonrpc":"2.0","id":3,"error":{"code":-32054,"message":"m"}}`, 0, false},
		{"a result", `{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete"}}`, 0, false},
		{"an SSE comment", ": ok\n\n", 0, false},
		{"nothing", "", 0, false},
		{"a cut event", "data: {", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, wait, ok := rateLimited([]byte(c.in))
			if ok != c.ok || (ok && (wait != c.wait || !json.Valid(body))) {
				t.Errorf("%q: %s, %d, %v; want %d, %v", c.in, body, wait, ok, c.wait, c.ok)
			}
		})
	}
	// A long SSE event is read whole.
	long := "event: message\ndata: " + strings.Replace(msg, `"m"`, `"`+strings.Repeat("x", 1<<17)+`"`, 1) + "\n\n"
	if _, _, ok := rateLimited([]byte(long)); !ok {
		t.Error("a long event was not read")
	}
}
