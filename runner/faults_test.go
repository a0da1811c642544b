package runner_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/internal/testserver/echohttp"
	"github.com/mcpstress/stress/internal/testserver/faultserver"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/baseline"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/study"
)

// registryAnswer answers as the code-registry baseline would, so an HTTP
// run can be checked against the in-process one.
func registryAnswer(req models.Request) string {
	m, _ := baseline.New(models.Spec{Name: "r", Model: baseline.CodeRegistry})
	r, _ := m.Generate(context.Background(), req)
	return r.Text
}

// httpStudy is the code-registry baseline behind echohttp servers: one
// model per URL, all conditions, one replicate.
func httpStudy(t *testing.T, tr manifests.TransportSpec, parallel int, urls ...string) *manifests.Resolved {
	t.Helper()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	m.Replicates = 1
	m.Models = []manifests.Model{{Name: "code_registry", Backend: echohttp.Backend, Model: "r", Parallel: parallel, Transport: tr}}
	if len(urls) == 1 {
		m.Models[0].Host = urls[0]
	} else {
		m.Models[0].Endpoints = urls
	}
	return m
}

// fast keeps retries quick: short backoffs, a 4 KiB body cap. Its
// attempt timeout (5 s) passes on a hang, and not on a good answer of the
// test's own server, which on a loaded machine may take a second or two.
var fast = manifests.TransportSpec{TimeoutS: 5, Attempts: 10, BackoffMS: 1, MaxBackoffMS: 5, MaxBodyBytes: 4096, BreakerAfter: 50, BreakerPauseS: 0.01}

func transportOf(t *testing.T, dir string) *analysis.TransportSummary {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts, problems, err := analysis.Transport(f, filepath.Join(dir, results.CallsFile))
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	return ts
}

// TestFaultsRetried drives the full runner against a server that injects
// every retryable fault (HTTP 500 and 503, 429 with Retry-After, a hang, a
// reset connection, a truncated and a malformed body) among good answers,
// with four calls in flight: every fault is retried, recorded once as a
// transport event of its kind, and never becomes an answer, so the rows
// equal those of the in-process baseline.
func TestFaultsRetried(t *testing.T) {
	srv := faultserver.New(echohttp.Handler(registryAnswer),
		faultserver.Fault{Kind: faultserver.KindOK},
		faultserver.Fault{Kind: faultserver.KindStatus, Status: 500},
		faultserver.Fault{Kind: faultserver.KindOK},
		faultserver.Fault{Kind: faultserver.KindStatus, Status: 429, RetryAfter: "1"},
		faultserver.Fault{Kind: faultserver.KindHang},
		faultserver.Fault{Kind: faultserver.KindOK},
		faultserver.Fault{Kind: faultserver.KindReset},
		faultserver.Fault{Kind: faultserver.KindTruncate},
		faultserver.Fault{Kind: faultserver.KindOK},
		faultserver.Fault{Kind: faultserver.KindMalformed},
		faultserver.Fault{Kind: faultserver.KindStatus, Status: 503},
		faultserver.Fault{Kind: faultserver.KindOK},
	)
	defer srv.Close()
	root := t.TempDir()
	dir := filepath.Join(root, "http")
	sum := runTo(t, prepare(t, httpStudy(t, fast, 4, srv.URL)), dir, runner.Options{})
	if sum.Decisions != 84 || sum.Errors != 0 || sum.TransportEvents != 7 {
		t.Fatalf("summary: %d decisions, %d errors, %d transport events; want 84, 0, 7", sum.Decisions, sum.Errors, sum.TransportEvents)
	}
	ts := transportOf(t, dir)
	got := map[string]int{}
	for _, e := range ts.Events {
		got[e.Kind] += e.Events
	}
	want := map[string]int{"http_status": 3, "timeout": 1, "connect": 1, "truncated": 1, "malformed": 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s events: %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	// The in-process baseline gives the same rows.
	m, _ := manifests.LoadBuiltin(manifests.DefaultName)
	m.Replicates = 1
	m.Models = m.Models[1:2]
	base := filepath.Join(root, "base")
	runTo(t, prepare(t, m), base, runner.Options{})
	ra, _ := results.ReadRows(filepath.Join(base, results.DecisionsFile))
	rb, _ := results.ReadRows(filepath.Join(dir, results.DecisionsFile))
	if len(ra) != len(rb) {
		t.Fatalf("%d rows vs %d", len(ra), len(rb))
	}
	for i := range ra {
		if ra[i] != rb[i] {
			t.Fatalf("row %d: baseline %+v, over HTTP %+v", i, ra[i], rb[i])
		}
	}
	// Events were stored on the calls that met them, and the raw body of
	// each good answer is kept.
	b, _ := os.ReadFile(filepath.Join(dir, results.CallsFile))
	cr := results.NewCallReader(bytes.NewReader(b), "calls.jsonl")
	events := 0
	for cr.Scan() {
		c := cr.Call()
		events += len(c.Events)
		if !strings.HasPrefix(string(c.Body), `{"text":`) || c.BodySHA256 != results.SHA256(c.Body) {
			t.Fatalf("call %s: body %q", c.Key, c.Body)
		}
	}
	if events != 7 {
		t.Errorf("%d events on call lines, want 7", events)
	}
}

// TestFaultsFatal: a body over the cap fails its call without retry, and a
// server that keeps failing opens the circuit breaker; both make error
// decisions, excluded from the counts and listed by analysis.Transport.
func TestFaultsFatal(t *testing.T) {
	root := t.TempDir()
	huge := faultserver.New(echohttp.Handler(registryAnswer),
		faultserver.Fault{Kind: faultserver.KindOK},
		faultserver.Fault{Kind: faultserver.KindHuge, Size: 10000},
		faultserver.Fault{Kind: faultserver.KindOK})
	defer huge.Close()
	dir := filepath.Join(root, "huge")
	sum := runTo(t, prepare(t, httpStudy(t, fast, 2, huge.URL)), dir, runner.Options{})
	if sum.Decisions != 84 || sum.Errors != 1 || sum.Cells[0].Errors != 1 || sum.Cells[0].N+sum.Cells[1].N+sum.Cells[2].N+sum.Cells[3].N != 83 {
		t.Fatalf("summary %+v: want one error decision, excluded from N", sum)
	}
	ts := transportOf(t, dir)
	if ts.FailedTotal != 1 || len(ts.Events) != 1 || ts.Events[0].Kind != "too_large" || !strings.Contains(ts.Failed[0].Error, "exceeds 4096 bytes") {
		t.Errorf("transport summary %+v", ts)
	}
	checkBundle(t, dir, sum)

	// Always 500: every decision fails after its attempts; after 3 failed
	// attempts in a row the endpoint is paused.
	down := faultserver.New(echohttp.Handler(registryAnswer), faultserver.Fault{Kind: faultserver.KindStatus, Status: 500})
	defer down.Close()
	tr := manifests.TransportSpec{TimeoutS: 30, Attempts: 2, BackoffMS: 1, MaxBackoffMS: 2, BreakerAfter: 3, BreakerPauseS: 0.005}
	m := httpStudy(t, tr, 1, down.URL)
	m.Conditions = []study.Condition{study.Normalized}
	dir = filepath.Join(root, "down")
	sum = runTo(t, prepare(t, m), dir, runner.Options{})
	if sum.Errors != 21 || sum.Cells[0].N != 0 || sum.Cells[0].Errors != 21 {
		t.Fatalf("summary %+v: want 21 error decisions and N 0", sum)
	}
	ts = transportOf(t, dir)
	kinds := map[string]int{}
	for _, e := range ts.Events {
		kinds[e.Kind] = e.Events
	}
	if kinds["http_status"] != 42 || kinds["breaker"] == 0 || ts.FailedTotal != 21 {
		t.Errorf("events %v, %d failed; want 42 http_status, some breaker, 21 failed", kinds, ts.FailedTotal)
	}
	var out bytes.Buffer
	analysis.WriteTransport(&out, ts)
	if !strings.Contains(out.String(), "Error decisions (a call failed for good; excluded from the counts): 21") ||
		!strings.Contains(out.String(), "code_registry/default/normalized/S01/1 turn 0: giving up after 2 attempts: HTTP 500") {
		t.Errorf("report:\n%s", out.String())
	}
	checkBundle(t, dir, sum)
}

// TestEndpointsShareWork spreads one model over three servers: each gets
// calls, and together they served exactly the calls of the bundle.
func TestEndpointsShareWork(t *testing.T) {
	var srvs []*faultserver.Server
	var urls []string
	for range 3 {
		s := faultserver.New(echohttp.Handler(registryAnswer), faultserver.Fault{Kind: faultserver.KindOK})
		defer s.Close()
		srvs = append(srvs, s)
		urls = append(urls, s.URL)
	}
	dir := filepath.Join(t.TempDir(), "three")
	sum := runTo(t, prepare(t, httpStudy(t, fast, 2, urls...)), dir, runner.Options{})
	if sum.Decisions != 84 || sum.Errors != 0 {
		t.Fatalf("summary %+v", sum)
	}
	total := 0
	for i, s := range srvs {
		if s.Requests() == 0 {
			t.Errorf("endpoint %d got no calls", i)
		}
		total += s.Requests()
	}
	if total != sum.Calls {
		t.Errorf("servers saw %d calls, the bundle has %d", total, sum.Calls)
	}
}
