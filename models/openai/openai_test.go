package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/internal/faultserver"
	"github.com/mcpstress/stress/internal/ollamatest"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/ollama"
	"github.com/mcpstress/stress/models/openai"
	"github.com/mcpstress/stress/models/transport"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/study"
)

const completion = `{"id":"c1","object":"chat.completion","created":1,"model":"tiny-served","system_fingerprint":"fp_test",
"choices":[{"index":0,"message":{"role":"assistant","content":"{\"operation_status\": \"failed\", \"recovery_policy\": \"select_tool\"}"},"finish_reason":"stop"}],
"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}`

// fakeServer answers chat completions with a fixed body and records the
// requests it got.
type fakeServer struct {
	bodies [][]byte
	auth   []string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.bodies = append(f.bodies, b)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	if strings.HasSuffix(r.URL.Path, "/models") {
		w.Write([]byte(`{"object":"list","data":[{"id":"tiny","object":"model"}]}`))
		return
	}
	w.Write([]byte(completion))
}

func spec(host string) models.Spec {
	return models.Spec{Name: "m", Backend: openai.Backend, Model: "tiny", Host: host, Format: "schema", Options: map[string]any{"max_tokens": 48}}
}

func TestRequestAndReply(t *testing.T) {
	fake := &fakeServer{}
	srv := faultserver.New(fake)
	defer srv.Close()
	m, err := openai.New(spec(srv.URL+"/v1"), transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Generate(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "hi"}}, Seed: 0, Temperature: 0, Options: map[string]any{"max_tokens": 48}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != `{"operation_status": "failed", "recovery_policy": "select_tool"}` || string(r.Body) != completion ||
		r.PromptTokens != 11 || r.OutputTokens != 5 || r.Meta["system_fingerprint"] != "fp_test" || r.Meta["finish_reason"] != "stop" || r.Meta["model"] != "tiny-served" {
		t.Errorf("reply %+v", r)
	}
	var sent map[string]any
	json.Unmarshal(fake.bodies[0], &sent)
	// A zero seed and a zero temperature are sent, not dropped.
	if sent["seed"] != 0.0 || sent["temperature"] != 0.0 || sent["max_tokens"] != 48.0 || sent["model"] != "tiny" {
		t.Errorf("request %s", fake.bodies[0])
	}
	rf, _ := sent["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["strict"] != true || js["schema"] == nil {
		t.Errorf("response_format %v", sent["response_format"])
	}
	if _, err := openai.New(models.Spec{Name: "m", Model: "x", Host: srv.URL, Options: map[string]any{"num_ctx": 4}}, transport.Options{}); err == nil || !strings.Contains(err.Error(), "options.num_ctx") {
		t.Errorf("unknown option: %v", err)
	}
	for _, host := range []string{"", "ftp://x", "http://"} {
		if _, err := openai.New(models.Spec{Name: "m", Model: "x", Host: host}, transport.Options{}); err == nil || !strings.Contains(err.Error(), "host") {
			t.Errorf("host %q: %v", host, err)
		}
	}
}

// TestFaults drives the backend with a fault-injecting server: 429 with
// Retry-After, 500, a hung connection and malformed JSON are retried and
// recorded as transport events, never as answers.
func TestFaults(t *testing.T) {
	srv := faultserver.New(&fakeServer{},
		faultserver.Fault{Kind: faultserver.KindStatus, Status: 429, RetryAfter: "0"},
		faultserver.Fault{Kind: faultserver.KindStatus, Status: 500},
		faultserver.Fault{Kind: faultserver.KindHang},
		faultserver.Fault{Kind: faultserver.KindMalformed},
		faultserver.Fault{Kind: faultserver.KindOK})
	defer srv.Close()
	m, _ := openai.New(spec(srv.URL+"/v1"), transport.Options{Timeout: 200 * time.Millisecond, MaxAttempts: 5, BaseDelay: time.Millisecond})
	r, err := m.Generate(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range r.Events {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, ",") != "http_status,http_status,timeout,malformed" || r.Events[0].Status != 429 || !strings.Contains(r.Text, "select_tool") {
		t.Errorf("events %v, text %q", kinds, r.Text)
	}
}

// TestAPIKeyNeverStored runs a study with an API key from the environment
// against a server that echoes the Authorization header in its errors, and
// checks the key appears nowhere in the bundle, the log or the error.
func TestAPIKeyNeverStored(t *testing.T) {
	const key = "sk-test-SECRET-0123456789abcdef"
	t.Setenv("STRESS_TEST_KEY", key)
	calls := 0
	srv := faultserver.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "no key", 401)
			return
		}
		calls++
		if calls%3 == 0 {
			http.Error(w, `{"error":"overloaded for key `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}`, 503)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/models") {
			w.Write([]byte(`{"data":[{"id":"tiny"}]}`))
			return
		}
		w.Write([]byte(completion))
	}))
	defer srv.Close()
	m := manifest(t, manifests.Model{Name: "remote", Backend: openai.Backend, Model: "tiny", Host: srv.URL + "/v1", APIKeyEnv: "STRESS_TEST_KEY",
		Transport: manifests.TransportSpec{Attempts: 2, BackoffMS: 1}, SeedCheck: "off"})
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	dir, sum, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "run"), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Decisions != 21 {
		t.Fatalf("summary %+v", sum)
	}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if info != nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte(key)) {
				t.Errorf("%s contains the API key", p)
			}
			if strings.HasSuffix(p, results.CallsFile) && !bytes.Contains(b, []byte("[redacted]")) {
				t.Errorf("%s: the echoed key was not redacted in the transport events", p)
			}
		}
		return nil
	})
	if strings.Contains(log.String(), key) {
		t.Error("the log contains the API key")
	}
	// An unset key variable is an error naming the variable, not the key.
	t.Setenv("STRESS_TEST_KEY", "")
	if _, err := runner.Prepare(m, false); err == nil || !strings.Contains(err.Error(), "STRESS_TEST_KEY") {
		t.Errorf("unset key: %v", err)
	}
}

func manifest(t *testing.T, md manifests.Model) *manifests.Resolved {
	t.Helper()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	m.Models = []manifests.Model{md}
	m.Conditions = []study.Condition{study.Normalized}
	m.Replicates = 1
	return m
}

// TestPinMismatchStopsBeforeFirstCall: a fingerprint other than the pinned
// one stops the run before any decision is made.
func TestPinMismatchStopsBeforeFirstCall(t *testing.T) {
	fake := &fakeServer{}
	srv := faultserver.New(fake)
	defer srv.Close()
	m := manifest(t, manifests.Model{Name: "remote", Backend: openai.Backend, Model: "tiny", Host: srv.URL + "/v1",
		Pin: manifests.Pin{Model: "tiny-served", SystemFingerprint: "fp_other"}})
	plan, _ := runner.Prepare(m, false)
	out := filepath.Join(t.TempDir(), "run")
	_, _, err := plan.Run(context.Background(), runner.Options{Out: out})
	if err == nil || !strings.Contains(err.Error(), `pin.system_fingerprint: manifest expects "fp_other"`) || !strings.Contains(err.Error(), `reports "fp_test"`) {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run wrote a bundle")
	}
	m.Models[0].Pin.SystemFingerprint = "fp_test"
	plan, _ = runner.Prepare(m, false)
	checks, err := plan.Verify(context.Background())
	if err != nil || checks["remote"].Facts["pinned"] != true || checks["remote"].Facts["listed"] != true {
		t.Errorf("matching pin: %v %v", err, checks["remote"])
	}
}

// TestAgainstOllamaV1 runs the same small study through the Ollama backend
// (/api/chat) and this backend (Ollama's OpenAI-compatible /v1) on one real
// server and tiny model.
//
// What must match: with the same seeds, temperature, top_p, token limit and
// the same JSON-schema constraint, the server runs the same sampler on the
// same prompt, so every decision's answer text and outcome agree. What need
// not: the raw bodies (different wire formats, timestamps, ids) and
// latencies.
func TestAgainstOllamaV1(t *testing.T) {
	srv := ollamatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := srv.CreateTinyModel(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	run := func(md manifests.Model) (string, *runner.Summary) {
		m := manifest(t, md)
		m.Conditions = []study.Condition{study.Normalized, study.CodeOnly}
		m.Replicates = 2
		plan, err := runner.Prepare(m, false)
		if err != nil {
			t.Fatal(err)
		}
		dir, sum, err := plan.Run(ctx, runner.Options{Out: filepath.Join(t.TempDir(), md.Backend)})
		if err != nil {
			t.Fatal(err)
		}
		return dir, sum
	}
	dirA, sumA := run(manifests.Model{Name: "tiny", Backend: ollama.Backend, Model: info.Name, Digest: info.Digest, Host: srv.Host,
		Format: "schema", Options: map[string]any{"num_predict": 48, "top_p": 1.0}})
	dirB, sumB := run(manifests.Model{Name: "tiny", Backend: openai.Backend, Model: info.Name, Host: srv.Host + "/v1",
		Format: "schema", Options: map[string]any{"max_tokens": 48, "top_p": 1.0}, Pin: manifests.Pin{Model: info.Name, SystemFingerprint: "fp_ollama"}})
	if sumA.Errors != 0 || sumB.Errors != 0 || sumA.Decisions != 84 || sumB.Decisions != 84 {
		t.Fatalf("ollama %+v\nopenai %+v", sumA, sumB)
	}
	a, b := readCalls(t, dirA), readCalls(t, dirB)
	for _, c := range b {
		if len(c.Body) == 0 || c.BodySHA256 != results.SHA256(c.Body) || c.Meta["system_fingerprint"] != "fp_ollama" {
			t.Fatalf("openai call %s: body or fingerprint missing", c.Key)
		}
	}
	if len(a) != len(b) {
		t.Fatalf("%d calls through /api/chat, %d through /v1", len(a), len(b))
	}
	differ := 0
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Turn != b[i].Turn || a[i].Response != b[i].Response {
			differ++
		}
	}
	if differ > 0 {
		t.Errorf("%d of %d calls differ between the two backends", differ, len(a))
	}
	for i := range sumA.Cells {
		ca, cb := sumA.Cells[i], sumB.Cells[i]
		if ca != cb {
			t.Errorf("cells differ:\n ollama %+v\n openai %+v", ca, cb)
		}
	}
}

func readCalls(t *testing.T, dir string) []results.Call {
	t.Helper()
	calls, err := results.ReadCalls(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	return calls
}
