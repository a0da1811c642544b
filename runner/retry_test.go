package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/study"
)

// flakyDown makes the flaky test backend fail every call about an unknown
// tool (10 of the 21 scenarios) while it is set.
var flakyDown atomic.Bool

type flaky struct{ models.Model }

func (f flaky) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	if flakyDown.Load() && strings.Contains(req.Messages[len(req.Messages)-1].Content, "probe_missing_tool_7c2e") {
		return models.Reply{}, &models.CallError{Err: errors.New("connection refused"), Events: []models.TransportEvent{{Attempt: 1, Kind: "connect", Error: "refused"}}}
	}
	return f.Model.Generate(ctx, req)
}

var registerFlaky sync.Once

func flakyPlan(t *testing.T) *runner.Plan {
	t.Helper()
	registerFlaky.Do(func() {
		models.Register("flaky-test", models.Backend{New: func(s models.Spec) (models.Model, error) {
			base, err := models.New(models.Spec{Name: s.Name, Backend: "baseline", Model: "code_registry"})
			return flaky{base}, err
		}})
	})
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	m.Models = []manifests.Model{{Name: "f", Backend: "flaky-test", Model: "x"}}
	m.Conditions = []study.Condition{study.CodeOnly}
	m.Replicates = 2
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// TestRetryErrors: error decisions are kept by a plain resume and run again
// with RetryErrors, giving the bundle of a run that never failed; a
// retrying session cut short (an error decision followed by its redo) is
// resumed with the redo kept.
func TestRetryErrors(t *testing.T) {
	ctx := context.Background()
	flakyDown.Store(false)
	clean, _, err := flakyPlan(t).Run(ctx, runner.Options{Out: filepath.Join(t.TempDir(), "clean"), Log: nil})
	if err != nil {
		t.Fatal(err)
	}
	flakyDown.Store(true)
	dir, sum, err := flakyPlan(t).Run(ctx, runner.Options{Out: filepath.Join(t.TempDir(), "flaky")})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors != 20 {
		t.Fatalf("%d error decisions, want 20 (10 unknown-tool scenarios x 2 replicates)", sum.Errors)
	}
	// A cut-short retry leaves an error decision followed by its redo.
	cleanCalls, _ := os.ReadFile(filepath.Join(clean, results.CallsFile))
	redo := strings.SplitAfter(string(cleanCalls), "\n")[0] // S01 replicate 1, an unknown tool
	cut := filepath.Join(t.TempDir(), "cut")
	copyDir(t, dir, cut)
	f, _ := os.OpenFile(filepath.Join(cut, results.CallsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(redo)
	f.Close()
	flakyDown.Store(false)
	sum, err = flakyPlan(t).Resume(ctx, cut, runner.Options{})
	if err != nil || sum.Errors != 19 {
		t.Fatalf("resume of a cut-short retry: %v, %+v; want 19 errors left", err, sum)
	}
	// A plain resume keeps the errors; -retry-errors runs them again.
	sum, err = flakyPlan(t).Resume(ctx, dir, runner.Options{})
	if err != nil || sum.Errors != 20 {
		t.Fatalf("plain resume: %v, %+v; want the 20 errors kept", err, sum)
	}
	var log strings.Builder
	sum, err = flakyPlan(t).Resume(ctx, dir, runner.Options{RetryErrors: true, Log: &log})
	if err != nil || sum.Errors != 0 || sum.Decisions != 42 {
		t.Fatalf("retry: %v, %+v", err, sum)
	}
	if !strings.Contains(log.String(), "20 error decisions to retry") {
		t.Errorf("log %q", log.String())
	}
	a, _ := results.ReadRows(filepath.Join(clean, results.DecisionsFile))
	b, _ := results.ReadRows(filepath.Join(dir, results.DecisionsFile))
	if len(a) != len(b) {
		t.Fatalf("%d rows vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("row %d: clean %+v, retried %+v", i, a[i], b[i])
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	os.MkdirAll(to, 0o755)
	entries, _ := os.ReadDir(from)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(to, e.Name()), b, 0o644)
	}
}
