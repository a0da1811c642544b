package exec_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/exec"
	"github.com/mcpstress/stress/models/transport"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		helper(mode)
		return
	}
	os.Exit(m.Run())
}

// fast are transport settings for fault tests: quick retries, and a
// per-call deadline that a loaded machine does not miss (it bounds starting
// the program and its hello too). A test whose fault is a deadline passing
// sets a short one of its own.
var fast = transport.Options{Timeout: 30 * time.Second, MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}

// helperModel is the test binary run as a program in mode.
func helperModel(t *testing.T, mode string, opt transport.Options) *exec.Model {
	t.Helper()
	t.Setenv(helperEnv, mode)
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m, err := exec.New(models.Spec{Name: "h", Backend: exec.Backend, Model: "helper-" + mode, Parallel: 4,
		Options: map[string]any{"command": bin}}, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func call(seed int64) models.Request {
	return models.Request{Messages: []models.Message{{Role: "user", Content: "Tool x failed: HTTP 401"}}, Seed: seed, Temperature: 0.7}
}

func sha(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestParallelRepliesMatchedByID sends 8 calls at once to a program that
// answers in batches of 4, last first: each call gets its own reply.
func TestParallelRepliesMatchedByID(t *testing.T) {
	m := helperModel(t, "reverse", fast)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	texts := make([]string, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := m.Generate(context.Background(), call(int64(100+i)))
			errs[i], texts[i] = err, r.Text
		}()
	}
	wg.Wait()
	for i := range 8 {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if want := `"seed":` + string(rune('0'+1)) + "0" + string(rune('0'+i)); !strings.Contains(texts[i], want) {
			t.Errorf("call %d got %q, want its own seed (%s)", i, texts[i], want)
		}
	}
}

// TestReplyFields reads every reply field, an id given as a string, and
// keeps the exact line as the body.
func TestReplyFields(t *testing.T) {
	m := helperModel(t, "string-id", fast)
	r, err := m.Generate(context.Background(), call(1))
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "{}" || r.Thinking != "t" || r.PromptTokens != 3 || r.OutputTokens != 4 || !bytes.HasPrefix(r.Body, []byte(`{"id":"`)) {
		t.Errorf("reply %+v", r)
	}
	tc, err := models.ParseToolCalls(r.ToolCalls)
	if err != nil || len(tc) != 1 || tc[0].Name != "f" || string(tc[0].Arguments) != `{"a":1}` {
		t.Errorf("tool calls %s: %+v, %v", r.ToolCalls, tc, err)
	}
}

// faultCase is a misbehaving program and what its fault must say.
type faultCase struct {
	mode string
	kind string // the transport event kind
	say  string // in the error
}

// TestFaults runs each misbehaving program: the call fails with a
// transport fault naming the program, within the per-call deadlines of its
// attempts, and is never an answer.
// Note: only the program that hangs gets a short deadline (0.5 s): the
// others fail on what they write or do, which a deadline passed first on
// a loaded machine would hide. The hang's fault reads the same whether the
// deadline passes on the call or on the hello before it.
func TestFaults(t *testing.T) {
	opt := fast
	opt.MaxBody = 1 << 20
	for _, c := range []faultCase{
		{"exit", exec.KindExit, "exited with status 3; stderr: helper: no API key in $VENDOR_KEY"},
		{"garbage-hello", exec.KindMalformed, `wrote a line that is not a reply`},
		{"garbage", exec.KindMalformed, `"Traceback (most recent call last): not JSON"`},
		{"unknown-id", exec.KindMalformed, "which no request in flight has"},
		{"flood", exec.KindTooLarge, "a stdout line over 1048576 bytes"},
		{"flood-lines", exec.KindMalformed, "which no request in flight has"},
		{"hang", exec.KindTimeout, "sent no reply to request"},
		{"error", exec.KindProgram, "vendor API: HTTP 503 overloaded"},
		{"no-text", exec.KindMalformed, "has neither text nor error"},
		{"protocol", exec.KindProtocol, `reply speaks protocol "stress-exec/9"`},
	} {
		t.Run(c.mode, func(t *testing.T) {
			opt := opt
			if c.mode == "hang" {
				opt.Timeout = 500 * time.Millisecond
			}
			m := helperModel(t, c.mode, opt)
			start := time.Now()
			r, err := m.Generate(context.Background(), call(1))
			took := time.Since(start)
			if err == nil {
				t.Fatalf("no error; reply %+v", r)
			}
			if r.Text != "" {
				t.Errorf("a fault became answer text %q", r.Text)
			}
			var ce *models.CallError
			if !errors.As(err, &ce) || len(ce.Events) == 0 {
				t.Fatalf("error %v is not a CallError with events", err)
			}
			last := ce.Events[len(ce.Events)-1]
			bin, _ := os.Executable()
			if last.Kind != c.kind || !strings.Contains(err.Error(), c.say) || !strings.Contains(err.Error(), "program "+bin) {
				t.Errorf("kind %s, error:\n%v\nwant kind %s, saying %q and naming the program", last.Kind, err, c.kind, c.say)
			}
			attempts := len(ce.Events)
			if c.kind == exec.KindProtocol && attempts != 1 {
				t.Errorf("a protocol mismatch was retried (%d attempts)", attempts)
			}
			// Each attempt is bounded by the deadline (hello and call share
			// it), plus starting and stopping the program, which a loaded
			// machine may take seconds for; the program that hangs would
			// take an hour.
			if bound := time.Duration(attempts) * (opt.Timeout + 30*time.Second); took > bound {
				t.Errorf("took %v, over %v", took, bound)
			}
			t.Logf("%d attempts in %v: %v", attempts, took.Round(time.Millisecond), err)
		})
	}
}

// TestNotReadingStdin: a program that stops reading its stdin cannot block
// a call past its deadline.
// Note: the deadline also bounds starting the program (its hello) and
// encoding the 4 MiB request before the write, which a loaded machine may
// spend all of a short deadline on: the call is then not sent, and the
// stdin never tried. Such a try is made again with the deadline doubled,
// so the test does not depend on the machine's speed; the program, which
// reads nothing for an hour, would block a write without a deadline far
// longer.
func TestNotReadingStdin(t *testing.T) {
	req := call(1)
	req.Messages[0].Content = strings.Repeat("x", 4<<20) // more than any pipe buffer
	for timeout := 500 * time.Millisecond; ; timeout *= 2 {
		opt := fast
		opt.Timeout, opt.MaxAttempts = timeout, 1
		m := helperModel(t, "noread", opt)
		start := time.Now()
		_, err := m.Verify(context.Background())
		if err == nil {
			_, err = m.Generate(context.Background(), req)
		}
		took := time.Since(start)
		m.Close()
		missed := err != nil && (strings.Contains(err.Error(), " not sent: ") ||
			strings.Contains(err.Error(), "hello: ") && strings.Contains(err.Error(), "sent no reply"))
		if missed && timeout < 30*time.Second {
			t.Logf("deadline %v passed before the write: %v", timeout, err)
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "did not read its stdin within the per-call deadline") {
			t.Fatalf("deadline %v: error %v", timeout, err)
		}
		if bound := 2*timeout + 30*time.Second; took > bound {
			t.Errorf("deadline %v: took %v, over %v", timeout, took, bound)
		}
		return
	}
}

// TestCrashRetried: a program that crashes mid-call is restarted and the
// call retried on the fresh one; the crash is a transport event with its
// exit status and stderr.
func TestCrashRetried(t *testing.T) {
	t.Setenv("HELPER_MARKER", filepath.Join(t.TempDir(), "crashed"))
	m := helperModel(t, "crash-once", fast)
	r, err := m.Generate(context.Background(), call(5))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Events) != 1 || r.Events[0].Kind != exec.KindExit || !strings.Contains(r.Events[0].Error, "exited with status 11; stderr: helper: segmentation fault (simulated)") {
		t.Errorf("events %+v", r.Events)
	}
	if !strings.Contains(r.Text, `"seed":5`) {
		t.Errorf("text %q", r.Text)
	}
}

// TestAbandonedCallLeavesProgram: a caller that gives up (not a deadline)
// leaves the program running, and its late reply is dropped.
// Note: the program holds each answer until the test lets it go, so that
// the caller gives up while the call is in flight, and the late reply
// comes before the next call's, whatever the machine's speed.
func TestAbandonedCallLeavesProgram(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "call")
	t.Setenv("HELPER_MARKER", marker)
	release := func(seed int) {
		if err := os.WriteFile(fmt.Sprintf("%s.%d", marker, seed), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := helperModel(t, "held", fast)
	release(1)
	if _, err := m.Generate(context.Background(), call(1)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // give up once the program has the call
		for ctx.Err() == nil {
			if _, err := os.Stat(marker + ".2.seen"); err == nil {
				cancel()
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, err := m.Generate(ctx, call(2))
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	release(2) // the program answers 2, late, before it reads 3
	release(3)
	r, err := m.Generate(context.Background(), call(3))
	if err != nil || !strings.Contains(r.Text, `"seed":3`) || len(r.Events) != 0 {
		t.Fatalf("after an abandoned call: %+v, %v", r, err)
	}
}

// TestStartErrors: a missing or non-executable program is an error of New
// naming the option (and, for a relative path, where it was looked for
// and why); a changed executable is refused before any call.
func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "backend.py")
	os.WriteFile(notExec, []byte("print('hi')\n"), 0o644)
	for _, c := range []struct {
		opts map[string]any
		say  string
	}{
		{map[string]any{}, "options.command: missing"},
		{map[string]any{"command": "no-such-program-xyz"}, "options.command: no-such-program-xyz: not found on PATH"},
		{map[string]any{"command": filepath.Join(dir, "missing")}, "no such file"},
		{map[string]any{"command": notExec}, "not an executable file"},
		{map[string]any{"command": "sh", "script": filepath.Join(dir, "nope.sh")}, "options.script"},
		{map[string]any{"command": "sh", "script": "examples/nope.sh"}, "options.script: stat " + abs(t, "examples/nope.sh") + ": no such file or directory (a relative path is taken from the working directory of stress, not from the manifest's directory)"},
		{map[string]any{"command": "./examples/nope"}, "options.command: ./examples/nope: lstat " + abs(t, "examples/nope") + ": no such file or directory (a relative path is taken from the working directory"},
		{map[string]any{"command": "sh", "args": "x"}, "options.args: want a list of strings"},
		{map[string]any{"command": "sh", "think": "maybe"}, `options.think: want false, true, "low", "medium" or "high"`},
	} {
		t.Run(c.say, func(t *testing.T) {
			_, err := exec.New(models.Spec{Name: "p", Model: "m", Options: c.opts}, fast)
			if err == nil || !strings.Contains(err.Error(), c.say) || !strings.Contains(err.Error(), `model "p"`) {
				t.Errorf("options %v: error %v, want %q", c.opts, err, c.say)
			}
		})
	}
	// A pinned program with a script must pin the script too.
	script := filepath.Join(dir, "b.sh")
	os.WriteFile(script, []byte("cat\n"), 0o644)
	if _, err := exec.New(models.Spec{Name: "p", Digest: strings.Repeat("a", 64), Options: map[string]any{"command": "sh", "script": script}}, fast); err == nil || !strings.Contains(err.Error(), "options.script_digest: missing") {
		t.Errorf("error %v", err)
	}
}

// TestDigest: Verify checks the executable's and the script's sha256; a
// mismatch names the file, the expected and the actual hash, and a call
// is refused without starting the program.
func TestDigest(t *testing.T) {
	sh, err := osexec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	shReal, _ := filepath.EvalSymlinks(sh)
	script, _ := filepath.Abs("examples/always_stop.sh")
	good := models.Spec{Name: "stop", Model: "always_stop", Digest: "sha256:" + sha(t, shReal),
		Options: map[string]any{"command": "sh", "script": script, "script_digest": sha(t, script)}}
	m, err := exec.New(good, fast)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	facts, err := m.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	prog, _ := facts["program"].(map[string]any)
	if facts["pinned"] != true || facts["script_sha256"] != sha(t, script) || prog["name"] != "always_stop.sh" {
		t.Errorf("facts %v", facts)
	}
	bad := good
	bad.Options = map[string]any{"command": "sh", "script": script, "script_digest": strings.Repeat("0", 64)}
	m2, err := exec.New(bad, fast)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if _, err := m2.Verify(context.Background()); err == nil || !strings.Contains(err.Error(), "options.script_digest mismatch: manifest expects "+strings.Repeat("0", 64)+", script "+script+" has "+sha(t, script)) {
		t.Errorf("verify: %v", err)
	}
	_, err = m2.Generate(context.Background(), call(1))
	var ce *models.CallError
	if !errors.As(err, &ce) || len(ce.Events) != 1 || ce.Events[0].Kind != exec.KindStart {
		t.Errorf("generate with a wrong pin: %v", err)
	}
}

// TestSecretScrubbed: the key named by api_key_env never reaches the reply.
func TestSecretScrubbed(t *testing.T) {
	key := "sk-test-0123456789abcdef"
	t.Setenv("HELPER_KEY", key)
	t.Setenv("VENDOR_KEY", key)
	t.Setenv(helperEnv, "secret")
	bin, _ := os.Executable()
	m, err := exec.New(models.Spec{Name: "s", Model: "m", APIKeyEnv: "VENDOR_KEY", Options: map[string]any{"command": bin}}, fast)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r, err := m.Generate(context.Background(), call(1))
	if err != nil {
		t.Fatal(err)
	}
	all := r.Text + r.Thinking + string(r.Body)
	b, _ := json.Marshal(r.Meta)
	if strings.Contains(all+string(b), key) || !r.Redacted || r.OriginalBodySHA256 == "" {
		t.Errorf("key leaked or not marked: %+v", r)
	}
}

// TestStderrKept: the program's stderr is kept, in memory and in
// options.stderr_file.
func TestStderrKept(t *testing.T) {
	t.Setenv(helperEnv, "stderr")
	bin, _ := os.Executable()
	file := filepath.Join(t.TempDir(), "stderr.log")
	m, err := exec.New(models.Spec{Name: "s", Model: "m", Options: map[string]any{"command": bin, "stderr_file": file}}, fast)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := m.Generate(context.Background(), call(int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	m.Close() // the program has exited: its stderr is all read
	if got := m.Stderr(1000); !strings.Contains(got, "helper: call 3 seen") {
		t.Errorf("stderr kept: %q", got)
	}
	b, _ := os.ReadFile(file)
	if !strings.Contains(string(b), "helper: call 1 seen\nhelper: call 2 seen\nhelper: call 3 seen\n") {
		t.Errorf("stderr file: %q", b)
	}
}

// examplePath returns the absolute path of an example backend.
func examplePath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// nodeModel is the Node example backend as a manifest model, pinned.
func nodeModel(t *testing.T, name string, think any) manifests.Model {
	t.Helper()
	node, err := osexec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: install Node.js (Debian: apt-get install nodejs npm), then run scripts/test")
	}
	node, _ = filepath.EvalSymlinks(node)
	script := examplePath(t, "keyword.js")
	opts := map[string]any{"command": "node", "script": script, "script_digest": sha(t, script)}
	if think != nil {
		opts["think"] = think
	}
	return manifests.Model{Name: name, Backend: exec.Backend, Model: "keyword", Digest: sha(t, node), Options: opts, Parallel: 4, SeedCheck: "error"}
}

// runStudy runs the default study's corpus under two conditions with md.
func runStudy(t *testing.T, md ...manifests.Model) (string, *results.Summary) {
	t.Helper()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	m.Name = "exec"
	m.Models = md
	m.Conditions = []study.Condition{study.Normalized, study.Structured}
	m.Replicates = 2
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	dir, sum, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "run"), Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	return dir, sum
}

// TestExampleBackendsRunAStudy runs the two example programs (Node and
// POSIX sh) through the whole pipeline, with the Node one as two arms,
// thinking off and on: the answers are the same, only the thinking arm
// stores thinking, apart from the answer.
func TestExampleBackendsRunAStudy(t *testing.T) {
	script := examplePath(t, "always_stop.sh")
	stop := manifests.Model{Name: "sh-stop", Backend: exec.Backend, Model: "always_stop", Digest: sha(t, script),
		Options: map[string]any{"command": script}}
	dir, sum := runStudy(t, nodeModel(t, "kw-off", false), nodeModel(t, "kw-on", true), stop)
	if sum.Decisions != 3*2*21*2 || sum.Errors != 0 || sum.TransportEvents != 0 {
		t.Fatalf("summary %+v", sum)
	}
	cells := map[string][]results.Cell{}
	for _, c := range sum.Cells {
		cells[c.Model] = append(cells[c.Model], c)
		if c.Count(simulator.Invalid) != 0 {
			t.Errorf("cell %+v has invalid answers", c)
		}
	}
	for i := range cells["kw-off"] {
		a, b := cells["kw-off"][i], cells["kw-on"][i]
		a.Model, b.Model = "", ""
		if a != b {
			t.Errorf("thinking changed the keyword model's counts: %+v vs %+v", a, b)
		}
	}
	stopPreferred := 0
	m, _ := manifests.LoadBuiltin(manifests.DefaultName)
	for _, s := range m.Corpus.Scenarios {
		if s.Preferred == study.StopOrEscalate {
			stopPreferred++
		}
	}
	for _, c := range cells["sh-stop"] {
		if c.Count(simulator.Strict) != 2*stopPreferred || c.Count(simulator.Cover) != 0 {
			t.Errorf("always_stop.sh cell %+v, want strict %d, cover 0", c, 2*stopPreferred)
		}
	}
	if c := cells["kw-off"][0]; c.Count(simulator.Strict) == 0 || c.Count(simulator.Cover) == 0 {
		t.Errorf("keyword cell %+v: the keywords match nothing", c)
	}
	calls, err := results.ReadCalls(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		switch think := c.Request.Options["think"]; c.Key.Model {
		case "kw-on":
			if think != true || !strings.HasPrefix(c.Thinking, "The call failed and ") || strings.Contains(c.Response, "call failed") {
				t.Fatalf("kw-on call: think %v, thinking %q, response %q", think, c.Thinking, c.Response)
			}
		case "kw-off":
			if think != false || c.Thinking != "" {
				t.Fatalf("kw-off call: think %v, thinking %q", think, c.Thinking)
			}
		}
		if !bytes.HasPrefix(c.Body, []byte(`{"id":`)) || c.BodySHA256 != results.SHA256(c.Body) {
			t.Fatalf("call %s: body %q", c.Key, c.Body)
		}
		if _, ok := c.Request.Options["command"]; !ok {
			t.Fatalf("call %s: the request record lacks the manifest's options", c.Key)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, results.ManifestFile))
	for _, want := range []string{`"executable_sha256"`, `"script_sha256"`, `"name": "keyword.js"`, `"name": "always_stop.sh"`, `"seed_honoured": true`, `"think": true`} {
		t.Run(want, func(t *testing.T) {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("manifest.json lacks %s", want)
			}
		})
	}
}

// TestVerifyExitsAtOnce: a program that exits at once fails Verify (the
// run's preflight, before any call) with its exit status and stderr.
func TestVerifyExitsAtOnce(t *testing.T) {
	m := helperModel(t, "exit", fast)
	start := time.Now()
	_, err := m.Verify(context.Background())
	if err == nil || !strings.Contains(err.Error(), "hello: program ") || !strings.Contains(err.Error(), "exited with status 3; stderr: helper: no API key in $VENDOR_KEY") {
		t.Errorf("verify: %v", err)
	}
	if took := time.Since(start); took > fast.Timeout {
		t.Errorf("took %v", took)
	}
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
