package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// faultFile writes a fault file and returns its path.
func faultFile(t *testing.T, json string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fault.json")
	if err := os.WriteFile(p, []byte(json), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// proxyCall calls tool and returns "ok", "tool_error" or "rpc CODE".
func proxyCall(t *testing.T, cs *mcp.ClientSession, tool string, args any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		return fmt.Sprintf("rpc %d %s", rpc.Code, rpc.Message)
	case err != nil:
		t.Fatalf("call %s: %v", tool, err)
	case res.IsError:
		return "tool_error"
	}
	return "ok"
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// TestProxyStdio runs stress proxy over stdio in front of stress lab
// serve -stdio: the fault applies to its tool, other calls pass, and on
// exit the proxy prints one line per call.
func TestProxyStdio(t *testing.T) {
	bin := stressBinary(t)
	file := faultFile(t, `{"tool":"list_orders","class":"transient","k":1}`)
	cmd := exec.Command(bin, "proxy", "-fault", file, "--", bin, "lab", "serve", "-stdio")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{proxyCall(t, cs, "list_orders", map[string]any{}), proxyCall(t, cs, "list_orders", map[string]any{}), proxyCall(t, cs, "list_files", map[string]any{})}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\n%s", err, stderr.String())
	}
	if got[0] != "rpc -31050 list_orders failed: an upstream dependency is temporarily unavailable (503); nothing was changed" || got[1] != "ok" || got[2] != "ok" {
		t.Errorf("calls: %q", got)
	}
	for _, line := range []string{"stress proxy: 3 calls", "call 1: list_orders failed", "call 2: list_orders passed", "call 3: list_files passed"} {
		if !strings.Contains(stderr.String(), line) {
			t.Errorf("stderr lacks %q:\n%s", line, stderr.String())
		}
	}
}

// TestProxyHTTP runs stress proxy -http in front of stress lab serve
// -http (-upstream) and of stress lab serve -stdio (a command): the
// tool is hidden and refused as unknown, the rest passes.
func TestProxyHTTP(t *testing.T) {
	bin := stressBinary(t)
	file := faultFile(t, `{"tool":"get_order","class":"unknown_tool"}`)
	labURL, stopLab := serveLab(t, bin)
	defer stopLab()
	for _, upstream := range [][]string{{"-upstream", labURL}, {"--", bin, "lab", "serve", "-stdio"}} {
		t.Run(upstream[0], func(t *testing.T) {
			url, stop := serveCommand(t, bin, append([]string{"proxy", "-fault", file, "-http", "127.0.0.1:0"}, upstream...)...)
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
			if err != nil {
				t.Fatalf("%v\n%s", err, stop())
			}
			names := toolNames(t, cs)
			if slices.Contains(names, "get_order") || !slices.Contains(names, "list_orders") {
				t.Errorf("tools: %v", names)
			}
			got := []string{proxyCall(t, cs, "get_order", map[string]any{"order_id": "x"}), proxyCall(t, cs, "list_orders", map[string]any{})}
			cs.Close()
			log := stop()
			if got[0] != `rpc -32602 unknown tool "get_order"` || got[1] != "ok" {
				t.Errorf("calls: %q\n%s", got, log)
			}
			if !strings.Contains(log, "call 1: get_order failed") || !strings.Contains(log, "call 2: list_orders passed") {
				t.Errorf("log:\n%s", log)
			}
		})
	}
}

// TestProxyUsage: the command's refusals name the flag.
func TestProxyUsage(t *testing.T) {
	good := faultFile(t, `{"tool":"x","class":"transient"}`)
	bad := faultFile(t, `{"tool":"x","class":"rate_limit"}`)
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"proxy", "--", "true"}, "proxy: flag -fault is required"},
		{[]string{"proxy", "-fault", good}, "proxy: give exactly one of -upstream URL and -- COMMAND ARGS..."},
		{[]string{"proxy", "-fault", bad, "--", "true"}, "proxy: flag -fault: " + bad + ": field window_ms: rate_limit needs window_ms"},
		{[]string{"proxy", "-fault", good, "-upstream", "http://127.0.0.1:1/mcp"}, "proxy: flag -upstream needs -http"},
		{[]string{"proxy", "-fault", good, "-http", "127.0.0.1:0", "-upstream", "ftp://x"}, `proxy: flag -upstream: "ftp://x" is not an http(s) URL`},
		{[]string{"proxy", "-fault", good, "-http", "0.0.0.0:0", "--", "true"}, `proxy: flag -http: "0.0.0.0" is not a loopback address`},
	} {
		t.Run(argsName(c.args), func(t *testing.T) {
			_, _, err := runCmd(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: got %v, want %s", c.args, err, c.err)
			}
		})
	}
}

// TestProxyConformance runs the MCP conformance suite against stress lab
// serve -http directly, then through stress proxy -http with a fault on
// a tool the suite does not call (an authentication fault, whose
// credential tool the proxy adds to tools/list): to the lab's URL
// (-upstream) and to stress lab serve -stdio (a command); each run must
// pass and fail the same scenarios as the direct one.
func TestProxyConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir, node, script := conformanceSuite(t, "conformance")
	expected := filepath.Join(dir, "expected-failures.yml")
	bin := stressBinary(t)
	file := faultFile(t, `{"tool":"charge_payment","class":"authentication","auth_tool":"refresh_credential"}`)
	results := func(t *testing.T, serve func() (string, func() string)) (map[string]bool, map[string]bool) {
		return scenarioResults(t, runConformanceOn(t, serve, dir, node, script, "--expected-failures", expected))
	}
	passed, failed := results(t, func() (string, func() string) { return serveLab(t, bin) })
	for _, upstream := range []string{"url", "command"} {
		t.Run(upstream, func(t *testing.T) {
			p, f := results(t, func() (string, func() string) {
				args := []string{"proxy", "-fault", file, "-http", "127.0.0.1:0", "--", bin, "lab", "serve", "-stdio"}
				if upstream == "url" {
					labURL, stopLab := serveLab(t, bin)
					url, stop := serveCommand(t, bin, append(args[:5], "-upstream", labURL)...)
					return url, func() string { return stop() + stopLab() }
				}
				return serveCommand(t, bin, args...)
			})
			if !equalSets(p, passed) || !equalSets(f, failed) {
				t.Errorf("through the proxy: passed %v, failed %v; direct: passed %v, failed %v", sortedSet(p), sortedSet(f), sortedSet(passed), sortedSet(failed))
			}
			t.Logf("through the proxy (%s): %d passed, %d failed as directly", upstream, len(p), len(f))
		})
	}
}

func equalSets(a, b map[string]bool) bool {
	return slices.Equal(sortedSet(a), sortedSet(b))
}

// TestProxyShape runs stress proxy -shape over stdio in front of stress
// lab serve -stdio: the injected rate limit on a tool is the server's
// own, so under ratelimited it reaches the client as -32023 with
// retryAfterMs; under sep2145 the injected JSON-RPC error arrives as an
// isError result; a success passes unchanged.
func TestProxyShape(t *testing.T) {
	bin := stressBinary(t)
	file := faultFile(t, `{"tool":"list_orders","class":"rate_limit","window_ms":30000}`)
	for _, c := range []struct{ shape, want string }{
		{"ratelimited", "rpc -32023 list_orders failed: the caller exceeded a rate limit and must wait for the window to pass; retry after 30 s"},
		{"sep2145", "tool_error"},
	} {
		t.Run("-shape "+c.shape, func(t *testing.T) {
			cmd := exec.Command(bin, "proxy", "-fault", file, "-shape", c.shape, "--", bin, "lab", "serve", "-stdio")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{proxyCall(t, cs, "list_orders", map[string]any{}), proxyCall(t, cs, "list_files", map[string]any{})}
			if c.shape == "ratelimited" {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_orders", Arguments: map[string]any{}})
				cancel()
				var rpc *jsonrpc.Error
				if !errors.As(err, &rpc) || !strings.Contains(string(rpc.Data), `"retryAfterMs":30000`) {
					t.Errorf("the -32023 error's data: %v", err)
				}
			}
			cs.Close()
			if got[0] != c.want || got[1] != "ok" {
				t.Errorf("-shape %s: calls %q, want %q then ok\n%s", c.shape, got, c.want, stderr.String())
			}
		})
	}
	if _, _, err := runCmd(t, "proxy", "-fault", file, "-shape", "normalized", "--", "true"); err == nil || !strings.Contains(err.Error(), "flag -shape") {
		t.Errorf("-shape normalized: %v", err)
	}
}

// TestProxyConformance2026 runs the 2026-07-28 conformance suite
// (scripts/conformance-2026, stateless, each request carrying its
// version) through stress proxy -http -upstream in front of stress lab
// serve -http: every check fails through the proxy exactly where it
// fails against the lab directly.
func TestProxyConformance2026(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir, node, script := conformanceSuite(t, "conformance-2026")
	args := []string{"--requirements", "2026-07-28", "--expected-failures", filepath.Join(dir, "expected-failures.yml")}
	bin := stressBinary(t)
	direct := failingChecks(t, runConformanceOn(t, func() (string, func() string) { return serveLab(t, bin) }, dir, node, script, args...))
	file := faultFile(t, `{"tool":"charge_payment","class":"authentication","auth_tool":"refresh_credential"}`)
	proxied := failingChecks(t, runConformanceOn(t, func() (string, func() string) {
		labURL, stopLab := serveLab(t, bin)
		url, stop := serveCommand(t, bin, "proxy", "-fault", file, "-http", "127.0.0.1:0", "-upstream", labURL)
		return url, func() string { return stop() + stopLab() }
	}, dir, node, script, args...))
	failing := 0
	for _, checks := range direct {
		if len(checks) > 0 {
			failing++
		}
	}
	t.Logf("%d scenarios run, %d with failing checks, the same directly and through the proxy", len(direct), failing)
	if fmt.Sprint(direct) != fmt.Sprint(proxied) {
		t.Errorf("failing checks through the proxy:\n%v\ndirectly:\n%v", proxied, direct)
	}
	if failing == 0 {
		t.Error("no failing check at all: the comparison compares nothing (the suite's expected failures list some)")
	}
}
