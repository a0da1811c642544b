package capture

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/internal/testserver/hostilemcp"
	"github.com/mcpstress/stress/study"
)

// hostileEcho is the secret the hostile server is configured with (in its
// environment over stdio, in the URL's query over HTTP) and quotes bare in
// every failure text: no pattern finds it, only knowing it does.
const hostileEcho = "opaque-qzecho-value-42"

// hostileTarget starts the hostile server over stdio (the test binary) or
// streamable HTTP (in process) and returns its target and a function
// listing the tools whose handlers ran.
func hostileTarget(t *testing.T, transport string) (Target, func() []string) {
	t.Helper()
	if transport == "stdio" {
		target, dir := helperTarget(t, "hostile")
		target.Label = "hostile-lab"
		target.Env = append(target.Env, hostilemcp.EchoEnv+"="+hostileEcho)
		calls := &callLog{file: filepath.Join(dir, "calls")}
		return target, calls.list
	}
	calls := &callLog{}
	srv := hostilemcp.New(calls.add, hostileEcho)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return Target{Label: "hostile-lab", URL: ts.URL + "/mcp?api_key=" + hostileEcho}, calls.list
}

func hostileOptions() Options {
	return Options{Salt: testSalt, Interval: time.Millisecond, Timeout: 10 * time.Second, MaxCalls: 30}
}

// privateLog reads the capture's private/capture.json.
func privateLog(t *testing.T, dir string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Servers []map[string]any `json:"servers"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	return log.Servers
}

// TestHostileNeverWrites captures from a server whose write tools pass
// yesterday's rules: purge_all_records claims readOnlyHint true beside
// destructiveHint true, check_and_restart_service has no hints and starts
// with a read verb. Neither may ever run, whether capture picks the probe
// tool itself, is asked to probe one, or is asked for sentinels on them.
func TestHostileNeverWrites(t *testing.T) {
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			for _, probeTool := range []string{"", hostilemcp.ToolPurge, hostilemcp.ToolRestart} {
				target, calls := hostileTarget(t, tr)
				o := hostileOptions()
				o.ProbeTool = probeTool
				o.Sentinels = []SentinelSpec{{Tool: hostilemcp.ToolPurge}, {Tool: hostilemcp.ToolRestart}, {Tool: hostilemcp.ToolTime}}
				servers, err := Run(context.Background(), []Target{target}, o)
				if err != nil || servers[0].Err != nil {
					t.Fatal(err, servers[0].Err)
				}
				for _, bad := range []string{hostilemcp.ToolPurge, hostilemcp.ToolRestart, hostilemcp.ToolTime} {
					if slices.Contains(calls(), bad) {
						t.Errorf("probe tool %q: capture ran %s (executed: %v)", probeTool, bad, calls())
					}
					for _, out := range servers[0].Outcomes {
						if out.Tool == bad {
							t.Errorf("probe tool %q: planned %s %s", probeTool, out.Kind, bad)
						}
					}
				}
			}
		})
	}
}

// TestCoercingServer probes a tool whose handler runs on a wrong JSON type
// (as lax servers that coerce types do): the completed, non-error answer
// marks the server as coercing, and no further argument probe is sent, so
// the handler runs once, not once per probe.
func TestCoercingServer(t *testing.T) {
	target, calls := hostileTarget(t, "http")
	o := hostileOptions()
	o.ProbeTool = hostilemcp.ToolLookupEntry
	o.Sentinels = []SentinelSpec{{Tool: hostilemcp.ToolFindAccount}}
	servers, err := Run(context.Background(), []Target{target}, o)
	if err != nil || servers[0].Err != nil {
		t.Fatal(err, servers[0].Err)
	}
	if got := calls(); !slices.Equal(got, []string{hostilemcp.ToolLookupEntry}) {
		t.Errorf("executed %v, want the coercing handler once", got)
	}
	for _, out := range servers[0].Outcomes {
		if out.Kind == study.MissingRequired || out.Kind == study.Sentinel {
			if out.Status != statusSkipped || !strings.Contains(out.Note, "coerc") {
				t.Errorf("%s %s after a coerced wrong type: status %s, note %q", out.Kind, out.Tool, out.Status, out.Note)
			}
		}
	}
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := Write(dir, servers, o); err != nil {
		t.Fatal(err)
	}
	if log := privateLog(t, dir); log[0]["coercing"] != true {
		t.Errorf("private log does not record the server as coercing: %v", log[0])
	}
}
