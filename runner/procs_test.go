package runner_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/mcpstress/stress/internal/testserver/echohttp"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/baseline"
	"github.com/mcpstress/stress/runner"
)

// TestFitProcs: with Options.FitProcs, a study whose every model waits on
// a server runs its decisions with GOMAXPROCS lowered to one processor
// per 8 calls in flight and restores it after; a study with a model that
// computes in process, or a run without FitProcs, keeps it.
func TestFitProcs(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	if procs < 2 {
		t.Skip("GOMAXPROCS is 1 already")
	}
	var most atomic.Int64 // the largest GOMAXPROCS a call saw
	srv := httptest.NewServer(echohttp.Handler(func(models.Request) string {
		if n := int64(runtime.GOMAXPROCS(0)); n > most.Load() {
			most.Store(n)
		}
		return `{"operation_status": "failed", "recovery_policy": "stop_or_escalate"}`
	}))
	defer srv.Close()
	remote := manifests.Model{Name: "http", Backend: echohttp.Backend, Model: "x", Host: srv.URL, Parallel: 1}
	eight := remote
	eight.Parallel = 8
	nine := remote
	nine.Parallel = 9
	local := manifests.Model{Name: "always_stop", Backend: baseline.Backend, Model: "always_stop"}
	for _, tc := range []struct {
		name   string
		models []manifests.Model
		fit    bool
		want   int64
	}{
		{"every model waits", []manifests.Model{remote}, true, 1},
		{"8 calls in flight", []manifests.Model{eight}, true, 1},
		{"9 calls in flight", []manifests.Model{nine}, true, int64(min(2, procs))},
		{"one model computes", []manifests.Model{remote, local}, true, int64(procs)},
		{"not asked", []manifests.Model{remote}, false, int64(procs)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := manifests.LoadBuiltin(manifests.DefaultName)
			if err != nil {
				t.Fatal(err)
			}
			m.Replicates, m.Models = 1, tc.models
			most.Store(0)
			if _, _, err := prepare(t, m).Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "run"), FitProcs: tc.fit}); err != nil {
				t.Fatal(err)
			}
			if got := most.Load(); got != tc.want {
				t.Errorf("calls saw GOMAXPROCS %d, want %d", got, tc.want)
			}
			if got := runtime.GOMAXPROCS(0); got != procs {
				t.Errorf("GOMAXPROCS after the run: %d, want %d again", got, procs)
			}
		})
	}
}
