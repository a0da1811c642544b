package openai_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/internal/testserver/faultserver"
	"github.com/mcpstress/stress/internal/testserver/ollamatest"
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
	paths  []string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.bodies = append(f.bodies, b)
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
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
		t.Run(host, func(t *testing.T) {
			if _, err := openai.New(models.Spec{Name: "m", Model: "x", Host: host}, transport.Options{}); err == nil || !strings.Contains(err.Error(), "host") {
				t.Errorf("host %q: %v", host, err)
			}
		})
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
	// The timeout must pass on the hang and not on the other answers,
	// which on a loaded machine may take a second or two.
	m, _ := openai.New(spec(srv.URL+"/v1"), transport.Options{Timeout: 5 * time.Second, MaxAttempts: 5, BaseDelay: time.Millisecond})
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
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		calls++
		if calls%3 == 0 {
			http.Error(w, `{"error":"overloaded for key `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}`, http.StatusServiceUnavailable)
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
	dir, sum, log := runLogged(t, m)
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
	if strings.Contains(log, key) {
		t.Error("the log contains the API key")
	}
	// An unset key variable is an error naming the variable, not the key.
	t.Setenv("STRESS_TEST_KEY", "")
	if _, err := runner.Prepare(m, false); err == nil || !strings.Contains(err.Error(), "STRESS_TEST_KEY") {
		t.Errorf("unset key: %v", err)
	}
}

// runLogged runs the study m into a fresh directory and returns the
// bundle, its summary and what the run logged.
func runLogged(t *testing.T, m *manifests.Resolved) (string, *results.Summary, string) {
	t.Helper()
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	dir, sum, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "run"), Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	return dir, sum, log.String()
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
	if err != nil || checks["remote"].Facts["pinned"] != true || checks["remote"].Facts["served_model"] != "tiny-served" {
		t.Errorf("matching pin: %v %v", err, checks["remote"])
	}
}

// TestPreflightRequests: the preflight of a pinned model sends two
// requests, both the seed probe (Verify's probe is its first answer), and
// no GET /models; with seed_check: off, one. The run's requests follow.
func TestPreflightRequests(t *testing.T) {
	for _, tc := range []struct {
		seedCheck string
		want      int
	}{{"", 2}, {"off", 1}} {
		t.Run(tc.seedCheck, func(t *testing.T) {
			fake := &fakeServer{}
			srv := faultserver.New(fake)
			m := manifest(t, manifests.Model{Name: "remote", Backend: openai.Backend, Model: "tiny", Host: srv.URL + "/v1",
				Pin: manifests.Pin{Model: "tiny-served", SystemFingerprint: "fp_test"}, SeedCheck: tc.seedCheck})
			plan, err := runner.Prepare(m, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := plan.Preflight(context.Background(), io.Discard); err != nil {
				t.Fatal(err)
			}
			srv.Close()
			if len(fake.paths) != tc.want {
				t.Fatalf("seed_check %q: the preflight sent %q, want %d requests", tc.seedCheck, fake.paths, tc.want)
			}
			for i, p := range fake.paths {
				if p != "POST /v1/chat/completions" || !bytes.Contains(fake.bodies[i], []byte("Choose a recovery policy.")) || !bytes.Contains(fake.bodies[i], []byte(`"seed":20260819`)) {
					t.Errorf("seed_check %q: request %d: %s %s, want the seed probe", tc.seedCheck, i, p, fake.bodies[i])
				}
			}
		})
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
	// Note: a guard against a hang, not a speed target: 168 calls take
	// 20 s on an idle machine and over 2 min on 2 loaded cores.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	info, err := srv.CreateTinyModel(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	run := func(md manifests.Model) (string, *results.Summary) {
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

// echoKey is the API key of TestAPIKeyEchoRedacted: it holds a '/' and a
// '+', which JSON encoders may escape (\/, \u002b).
const echoKey = "sk-canary/Q7x+Zr9LmN3pT0vW8yB2cD4eF6gH1jK"

// echoServer is an OpenAI-compatible server that echoes the API key back:
// in 503 bodies where the key straddles the transport's 300-byte clip of
// error texts, in the answer text of a completion, and elsewhere in
// successful bodies, raw and JSON-escaped. It serves chat requests
// sequentially, cycling through six kinds of answer (see TestAPIKeyEchoRedacted).
type echoServer struct {
	n      int               // chat requests served, the probe excluded
	echoed map[string]bool   // sha256 of every 2xx body that held the key
	bodies map[string][]byte // by sha256: every 2xx body served
}

func (e *echoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	if auth != "Bearer "+echoKey {
		http.Error(w, "no key", http.StatusUnauthorized)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/models") {
		w.Write([]byte(`{"data":[{"id":"tiny"}]}`))
		return
	}
	b, _ := io.ReadAll(r.Body)
	escaped := strings.NewReplacer("/", `\/`, "+", `\u002b`).Replace(echoKey)
	answer := `{\"operation_status\": \"failed\", \"recovery_policy\": \"select_tool\"}`
	send := func(body string, echo bool) {
		if e.echoed == nil {
			e.echoed, e.bodies = map[string]bool{}, map[string][]byte{}
		}
		sum := results.SHA256([]byte(body))
		e.echoed[sum], e.bodies[sum] = echo, []byte(body)
		w.Write([]byte(body))
	}
	completion := func(id, fingerprint, content, extra string) string {
		return `{"id":"` + id + `","object":"chat.completion","created":1,"model":"tiny-served","system_fingerprint":"` + fingerprint + `",` + extra +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"` + content + `"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}`
	}
	if bytes.Contains(b, []byte("A tool call failed with: unknown tool. Choose a recovery policy.")) {
		// The Verify probe: the key in the served model id, which lands in
		// manifest.json's model_checks.
		send(strings.Replace(completion("c0", "fp_test", "ok", ""), `"tiny-served"`, `"tiny-`+echoKey+`"`, 1), true)
		return
	}
	e.n++
	switch (e.n - 1) % 6 {
	case 0, 2, 3:
		// The key straddles byte 300 of the error text: the first 10 bytes
		// of the key are inside the clip, the rest outside.
		pre := `{"error":{"message":"`
		pad := strings.Repeat("x", 300-10-len(pre)-len("Bearer "))
		http.Error(w, pre+pad+auth+` bad key b64=`+base64.StdEncoding.EncodeToString([]byte(echoKey))+`","type":"overloaded"}}`, http.StatusServiceUnavailable)
	case 1:
		// The key in the answer text (the model repeats it), raw and escaped.
		send(completion("c1", "fp_test", answer+` key `+echoKey+` or `+escaped+` b64=`+base64.StdEncoding.EncodeToString([]byte("k:"+echoKey))+
			` url=`+base64.RawURLEncoding.EncodeToString([]byte("ab"+echoKey)), ""), true)
	case 4:
		// A valid answer; the key in the id, the fingerprint and an echoed
		// header, JSON-escaped.
		send(completion("chatcmpl-"+echoKey, escaped, answer, `"echo":{"authorization":"Bearer `+escaped+`"},`), true)
	default:
		send(completion("c5", "fp_test", answer, ""), false)
	}
}

// TestAPIKeyEchoRedacted runs a study against a server that echoes the API
// key in error bodies (straddling the 300-byte clip of error texts) and in
// successful bodies (in the answer text and elsewhere, raw and
// JSON-escaped). No file of the bundle, no decoded body and no log line
// may hold the key or any 8-byte run of it; every call whose body held the
// key is marked redacted and keeps the sha256 of the body the server sent;
// and the bundle still verifies (response_sha256, body_sha256, a rescore
// that agrees with decisions.parquet).
//
// Chat requests cycle through: 503, 200 with the key in the answer, 503,
// 503, 200 with the key elsewhere, 200 clean. With two attempts per call,
// the decisions cycle through: redacted answer (after a 503), error (two
// 503s), redacted body with a clean answer, clean.
func TestAPIKeyEchoRedacted(t *testing.T) {
	t.Setenv("STRESS_ECHO_KEY", echoKey)
	echo := &echoServer{}
	srv := faultserver.New(echo)
	defer srv.Close()
	m := manifest(t, manifests.Model{Name: "remote", Backend: openai.Backend, Model: "tiny", Host: srv.URL + "/v1", APIKeyEnv: "STRESS_ECHO_KEY",
		Transport: manifests.TransportSpec{Attempts: 2, BackoffMS: 1}, SeedCheck: "off"})
	dir, sum, log := runLogged(t, m)
	// 21 decisions: 5 full cycles of 4, then one redacted answer.
	if sum.Decisions != 21 || sum.Errors != 5 {
		t.Fatalf("summary: %d decisions, %d errors; want 21, 5", sum.Decisions, sum.Errors)
	}
	leaks := func(what string, b []byte) {
		t.Helper()
		for _, form := range append([]string{echoKey}, transport.Base64Forms(echoKey)...) {
			for i := 0; i+8 <= len(form); i++ {
				if frag := form[i : i+8]; bytes.Contains(b, []byte(frag)) {
					t.Errorf("%s holds %q, 8 bytes of the API key or of its base64 forms", what, frag)
					return
				}
			}
		}
	}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if info != nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			leaks(p, b)
		}
		return nil
	})
	leaks("the log", []byte(log))
	rows, err := results.ReadRows(filepath.Join(dir, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		leaks("decisions.parquet: error of "+r.Key().String(), []byte(r.Error))
	}

	calls := readCalls(t, dir)
	raw, err := os.ReadFile(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	if len(lines) != len(calls) || len(calls) != 21 {
		t.Fatalf("%d lines, %d calls; want 21", len(lines), len(calls))
	}
	redacted, clipped := 0, 0
	for i, c := range calls {
		what := fmt.Sprintf("call %d (%s)", i, c.Key)
		leaks(what+" body", c.Body)
		var line map[string]any
		if err := json.Unmarshal(lines[i], &line); err != nil {
			t.Fatal(err)
		}
		if c.ResponseSHA256 != results.SHA256([]byte(c.Response)) || (c.Body != nil && c.BodySHA256 != results.SHA256(c.Body)) {
			t.Errorf("%s: response_sha256 or body_sha256 does not describe the stored bytes", what)
		}
		for _, e := range c.Events {
			if e.Status == 503 && strings.Contains(e.Error, "[redacted]") {
				clipped++
			}
		}
		if c.Error != "" {
			if c.Body != nil || line["redacted"] != nil {
				t.Errorf("%s: an error call has a body or a redaction mark", what)
			}
			continue
		}
		orig, _ := line["original_body_sha256"].(string)
		if !echo.echoed[orig] && echo.echoed[c.BodySHA256] {
			t.Errorf("%s: the body holds the key and was stored as sent", what)
		}
		if echo.bodies[orig] == nil && echo.bodies[c.BodySHA256] == nil {
			t.Errorf("%s: neither body_sha256 nor original_body_sha256 is the sha256 of a body the server sent", what)
		}
		if echo.echoed[orig] {
			redacted++
			if line["redacted"] != true {
				t.Errorf("%s: redacted body not marked \"redacted\": true", what)
			}
			if !bytes.Contains(c.Body, []byte("[redacted]")) || c.BodySHA256 == orig {
				t.Errorf("%s: body %s", what, c.Body)
			}
			// The stored body is the server's with the key replaced, and
			// the stored answer text is the stored body's content.
			want := strings.ReplaceAll(string(echo.bodies[orig]), echoKey, "[redacted]")
			want = strings.ReplaceAll(want, strings.NewReplacer("/", `\/`, "+", `\u002b`).Replace(echoKey), "[redacted]")
			// The base64 forms keep the characters that do not depend on
			// the key alone: "k:" shifts it by two bytes, "ab" likewise.
			want = strings.ReplaceAll(want, base64.StdEncoding.EncodeToString([]byte("k:"+echoKey)), "azp[redacted]w==")
			want = strings.ReplaceAll(want, base64.RawURLEncoding.EncodeToString([]byte("ab"+echoKey)), "YWJ[redacted]w")
			if string(c.Body) != want {
				t.Errorf("%s: stored body\n%s\nwant\n%s", what, c.Body, want)
			}
			var cr struct {
				Choices []struct {
					Message struct{ Content string }
				}
			}
			if err := json.Unmarshal(c.Body, &cr); err != nil || len(cr.Choices) != 1 || cr.Choices[0].Message.Content != c.Response {
				t.Errorf("%s: the stored response is not the stored body's content (%v)", what, err)
			}
		} else if line["redacted"] != nil || line["original_body_sha256"] != nil {
			t.Errorf("%s: a clean call is marked redacted", what)
		}
	}
	if redacted != 11 || clipped == 0 {
		t.Errorf("%d redacted calls, %d redacted 503 events; want 11 and some", redacted, clipped)
	}
	// The bundle verifies as it stands: a rescore of calls.jsonl agrees
	// with decisions.parquet.
	f, err := os.Open(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	again, problems, err := analysis.Rescore(f, results.CallsFile)
	if err != nil || len(problems) > 0 {
		t.Fatalf("rescore: %v %v", err, problems)
	}
	if errs := analysis.Agree(again, rows, 5); len(errs) > 0 {
		t.Errorf("rescore disagrees with decisions.parquet: %v", errs)
	}
}
