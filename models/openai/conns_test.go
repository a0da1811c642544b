package openai_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models/openai"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/study"
)

// TestKeepAlivePool runs a study with 4 calls in flight against a local
// OpenAI-compatible server and counts the TCP connections it accepted: at
// most 4, one per call in flight (Go's default pool keeps 2 per host, so 4
// in flight used to open dozens).
func TestKeepAlivePool(t *testing.T) {
	var conns atomic.Int64
	var mu sync.Mutex
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/models") {
			w.Write([]byte(`{"object":"list","data":[{"id":"tiny","object":"model"}]}`))
			return
		}
		w.Write([]byte(completion))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	m := manifest(t, manifests.Model{Name: "m", Backend: openai.Backend, Model: "tiny", Host: srv.URL + "/v1", Parallel: 4,
		Transport: manifests.TransportSpec{Attempts: 1}})
	m.Conditions = []study.Condition{study.Normalized, study.CodeOnly, study.Structured, study.Prose}
	m.Replicates = 5
	plan, err := runner.Prepare(m, true)
	if err != nil {
		t.Fatal(err)
	}
	_, sum, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Calls != 420 || sum.Errors != 0 {
		t.Fatalf("%d calls, %d errors; want 420 and 0", sum.Calls, sum.Errors)
	}
	// The preflight (model list, seed probe) uses clients of its own.
	if n := conns.Load(); n > 4+2 {
		t.Errorf("%d connections for 420 calls at 4 in flight, want at most 4 (plus the preflight's)", n)
	}
	t.Logf("%d connections", conns.Load())
}
