// Package exec is the backend for a model served by any program: stress
// starts the program once per endpoint and speaks a line protocol with it
// (Protocol: one JSON request per line on its stdin, one JSON reply per
// line on its stdout, matched by id, up to parallel requests in flight).
// A model reachable only from Python, Node or a vendor SDK is studied
// through a small program, without recompiling stress. The program is
// pinned like an Ollama model: the manifest's digest is the sha256 of the
// executable and options.script_digest that of the script it runs, both
// checked before any call and again whenever the program is started. Its
// stderr is kept (the last 64 KiB, quoted in faults; all of it in
// options.stderr_file). A program that cannot start, exits, hangs past
// the per-call deadline, writes a line that is not a reply or an
// oversized one is a transport fault naming the program: the program is
// stopped, the call retried with backoff on a fresh one, and never turned
// into an answer. models/README.md documents the protocol.
package exec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/transport"
)

// backend is the registry name of this backend.
const backend = "exec"

func init() {
	models.Register(backend, models.Backend{Pinned: true, Waits: true, New: func(s models.Spec) (models.Model, error) { return newModel(s, transport.FromSpec(s)) }})
}

// The backend's own options; the others go to the program in each call.
const (
	optCommand      = "command"       // the executable: a path, or a name looked up on PATH (required)
	optScript       = "script"        // a script file the executable runs, passed as its first argument
	optArgs         = "args"          // further arguments, a list of strings
	optScriptDigest = "script_digest" // the script's sha256, 64 hex digits (required with a digest and a script)
	optStderrFile   = "stderr_file"   // a file the program's stderr is appended to
)

// model is one program serving one model at one endpoint.
type model struct {
	spec   models.Spec
	name   string // the program as messages name it: its command (and script)
	path   string // the executable, absolute, symbolic links resolved
	script string // the script, absolute, or ""
	argv   []string
	env    []string
	opt    transport.Options
	scrub  *transport.Scrubber
	format json.RawMessage
	pass   map[string]any // the options the program receives
	stderr string         // optStderrFile, or ""

	id atomic.Int64

	mu    sync.Mutex
	proc  *proc          // the running program, nil when none
	last  *proc          // the last program started
	hello map[string]any // the meta of the last hello reply
	hmu   sync.Mutex
}

var (
	_ models.Model       = (*model)(nil)
	_ models.Verifier    = (*model)(nil)
	_ models.SeedChecker = (*model)(nil)
)

// newModel builds a model from its manifest spec. Relative paths in options are
// relative to the working directory of stress. opt's Timeout is the
// per-call deadline (default 120 s), MaxAttempts, BaseDelay, MaxDelay,
// Jitter and Sleep its retries, MaxBody the longest reply line (default
// 16 MiB).
func newModel(spec models.Spec, opt transport.Options) (*model, error) {
	errf := func(format string, a ...any) error {
		return fmt.Errorf("model %q: "+format, append([]any{spec.Name}, a...)...)
	}
	m := &model{spec: spec, opt: opt.WithDefaults(), pass: map[string]any{}}
	command, _ := spec.Options[optCommand].(string)
	if command == "" {
		return nil, errf("options.command: missing: the program to run, e.g. command: node and script: backend.js")
	}
	var err error
	if m.path, err = resolve(command); err != nil {
		return nil, errf("options.command: %w%s", err, fromWorkDir(command, err))
	}
	m.name = command
	m.argv = []string{command}
	if s, ok := spec.Options[optScript]; ok {
		script, _ := s.(string)
		if script == "" {
			return nil, errf("options.script: want a file name, got %#v", s)
		}
		if m.script, err = filepath.Abs(script); err != nil {
			return nil, errf("options.script: %w", err)
		}
		if _, err := os.Stat(m.script); err != nil {
			return nil, errf("options.script: %w%s", err, fromWorkDir(script, err))
		}
		m.name += " " + script
		m.argv = append(m.argv, m.script)
	}
	if a, ok := spec.Options[optArgs]; ok {
		list, ok := a.([]any)
		if !ok {
			return nil, errf("options.args: want a list of strings, got %T", a)
		}
		for i, x := range list {
			s, ok := x.(string)
			if !ok {
				return nil, errf("options.args[%d]: want a string, got %T", i, x)
			}
			m.argv = append(m.argv, s)
		}
	}
	if d, ok := spec.Options[optScriptDigest]; ok {
		s, _ := d.(string)
		if !isDigest(strings.TrimPrefix(s, "sha256:")) {
			return nil, errf("options.script_digest: want 64 hex digits, got %#v", d)
		}
		if m.script == "" {
			return nil, errf("options.script_digest: set, but options.script is not")
		}
	}
	if spec.Digest != "" && !isDigest(strings.TrimPrefix(spec.Digest, "sha256:")) {
		return nil, errf("digest: want the executable's sha256, 64 hex digits, got %q", spec.Digest)
	}
	if spec.Digest != "" && m.script != "" && spec.Options[optScriptDigest] == nil {
		return nil, errf("options.script_digest: missing: a pinned program that runs a script pins the script too (sha256sum %s)", m.script)
	}
	if f, ok := spec.Options[optStderrFile]; ok {
		if m.stderr, _ = f.(string); m.stderr == "" {
			return nil, errf("options.stderr_file: want a file name, got %#v", f)
		}
	}
	if _, _, err := models.Think(spec.Options); err != nil {
		return nil, errf("%w", err)
	}
	if m.format, err = models.WireFormat(spec.Format); err != nil {
		return nil, errf("format: %w", err)
	}
	for k, v := range spec.Options {
		if !own(k) {
			m.pass[k] = v
		}
	}
	var secrets []string
	if spec.APIKeyEnv != "" {
		key := os.Getenv(spec.APIKeyEnv)
		if key == "" {
			return nil, errf("api_key_env: environment variable %s is empty or unset", spec.APIKeyEnv)
		}
		// Note: the program reads the key from its environment, which it
		// inherits; stress only scrubs it from what the program says.
		secrets = append(secrets, key)
	}
	m.scrub = transport.NewScrubber(slices.Concat(opt.Secrets, secrets)...)
	m.env = append(os.Environ(), "STRESS_EXEC_PROTOCOL="+Protocol, "STRESS_EXEC_MODEL="+spec.Model, "STRESS_EXEC_ENDPOINT="+spec.Host)
	return m, nil
}

// own reports whether k is one of the backend's own options.
func own(k string) bool {
	switch k {
	case optCommand, optScript, optArgs, optScriptDigest, optStderrFile:
		return true
	}
	return false
}

func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// fromWorkDir says why a relative path that is not there was looked for
// where it was: "" for another error or an absolute path.
func fromWorkDir(p string, err error) string {
	if filepath.IsAbs(p) || !errors.Is(err, os.ErrNotExist) {
		return ""
	}
	return " (a relative path is taken from the working directory of stress, not from the manifest's directory)"
}

// resolve finds the executable: a name without a slash on PATH, a path as
// given; symbolic links are resolved, so the file hashed is the file run.
func resolve(command string) (string, error) {
	p := command
	if !strings.ContainsRune(command, filepath.Separator) && !strings.ContainsRune(command, '/') {
		lp, err := osexec.LookPath(command)
		if err != nil {
			return "", fmt.Errorf("%s: not found on PATH", command)
		}
		p = lp
	}
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return "", fmt.Errorf("%s: %w", command, err)
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", command, err)
	}
	if !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s (%s): not an executable file", command, p)
	}
	return p, nil
}

// identity is what pins a program: the sha256 of its executable and of
// its script.
type identity struct {
	Path         string // the executable run, absolute
	SHA256       string // its hex sha256
	Script       string // the script, absolute, or ""
	ScriptSHA256 string // its hex sha256, or ""
}

// Identify hashes the program's executable and script as they are now.
func (m *model) Identify() (identity, error) {
	id := identity{Path: m.path, Script: m.script}
	var err error
	if id.SHA256, err = hashFile(m.path); err != nil {
		return id, fmt.Errorf("model %q: executable: %w", m.spec.Name, err)
	}
	if m.script != "" {
		if id.ScriptSHA256, err = hashFile(m.script); err != nil {
			return id, fmt.Errorf("model %q: options.script: %w", m.spec.Name, err)
		}
	}
	return id, nil
}

// check compares the program's identity with the pins: a mismatch names
// the file, the expected and the actual sha256.
func (m *model) check(id identity) error {
	var errs []error
	if want := strings.TrimPrefix(m.spec.Digest, "sha256:"); want != "" && want != id.SHA256 {
		errs = append(errs, fmt.Errorf("model %q: digest mismatch: manifest expects %s, executable %s has %s", m.spec.Name, want, id.Path, id.SHA256))
	}
	if d, _ := m.spec.Options[optScriptDigest].(string); d != "" {
		if want := strings.TrimPrefix(d, "sha256:"); want != id.ScriptSHA256 {
			errs = append(errs, fmt.Errorf("model %q: options.script_digest mismatch: manifest expects %s, script %s has %s", m.spec.Name, want, id.Script, id.ScriptSHA256))
		}
	}
	return errors.Join(errs...)
}

// hashes caches file hashes by path, size and modification time, so that a
// restarted program does not rehash a large interpreter.
var hashes sync.Map // string -> string

func hashFile(file string) (string, error) {
	st, err := os.Stat(file)
	if err != nil {
		return "", err
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", file, st.Size(), st.ModTime().UnixNano())
	if s, ok := hashes.Load(key); ok {
		return s.(string), nil
	}
	// A named pipe or a device as the program or its script is refused,
	// not waited on or hashed without end.
	f, err := input.OpenStream(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	hashes.Store(key, sum)
	return sum, nil
}

// process returns the running program, starting it (pins checked, hello
// answered) when there is none or the last one is gone.
func (m *model) process(ctx context.Context) (*proc, *fault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil && m.proc.gone() == nil {
		return m.proc, nil
	}
	m.proc = nil
	id, err := m.Identify()
	if err == nil {
		err = m.check(id)
	}
	if err != nil {
		return nil, &fault{kindStart, err.Error()}
	}
	var errFile io.Writer
	if m.stderr != "" {
		f, err := os.OpenFile(m.stderr, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, &fault{kindStart, fmt.Sprintf("model %q: options.stderr_file: %v", m.spec.Name, err)}
		}
		errFile = f // closed when the program has exited
	}
	p, err := start(m.name, m.path, m.argv, m.env, m.opt.MaxBody, errFile)
	if err != nil {
		return nil, &fault{kindStart, fmt.Sprintf("program %s: %v", m.name, err)}
	}
	hid := m.id.Add(1)
	line, _ := json.Marshal(Hello{ID: hid, Protocol: Protocol, Type: TypeHello, Model: m.spec.Model, Endpoint: m.spec.Host, Parallel: max(1, m.spec.Parallel)})
	hctx, cancel := context.WithTimeout(ctx, m.opt.Timeout)
	defer cancel()
	r := p.call(hctx, hid, append(line, '\n'))
	if r.err != nil {
		p.kill(r.err)
		f := *r.err
		f.msg = "hello: " + f.msg
		return nil, &f
	}
	if r.reply.Error != "" {
		p.kill(&fault{kindProgram, fmt.Sprintf("program %s: hello answered with an error; stopped", m.name)})
		msg, _ := m.scrub.String(r.reply.Error)
		return nil, &fault{kindProgram, fmt.Sprintf("program %s: hello: %s", m.name, msg)}
	}
	meta, _ := m.scrub.Value(r.reply.Meta)
	m.hmu.Lock()
	m.hello, _ = meta.(map[string]any)
	m.hmu.Unlock()
	m.proc, m.last = p, p
	return p, nil
}

// Generate sends one call to the program and waits for its reply,
// retrying transport faults with backoff on a fresh program.
func (m *model) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	opts := make(map[string]any, len(req.Options))
	for k, v := range req.Options {
		if !own(k) {
			opts[k] = v
		}
	}
	if _, _, err := models.Think(opts); err != nil {
		return models.Reply{}, fmt.Errorf("model %q: %w", m.spec.Name, err)
	}
	tools, err := models.WireTools(req.Tools)
	if err != nil {
		return models.Reply{}, fmt.Errorf("model %q: %w", m.spec.Name, err)
	}
	if len(opts) == 0 {
		opts = nil
	}
	var events []models.TransportEvent
	fail := func(err error) (models.Reply, error) {
		return models.Reply{Events: events}, &models.CallError{Err: err, Events: events}
	}
	for attempt := 1; ; attempt++ {
		reply, f := m.attempt(ctx, Call{ID: m.id.Add(1), Protocol: Protocol, Type: TypeGenerate, Model: m.spec.Model,
			Messages: req.Messages, Seed: req.Seed, Temperature: req.Temperature, Options: opts, Format: m.format, Tools: tools})
		if f == nil {
			reply.Events = events
			return reply, nil
		}
		msg, _ := m.scrub.String(f.msg)
		ev := models.TransportEvent{Attempt: attempt, Kind: f.kind, Error: msg, At: m.opt.Now()}
		if ctx.Err() != nil {
			events = append(events, ev)
			return fail(fmt.Errorf("%s: %w", msg, ctx.Err()))
		}
		if f.kind == kindProtocol || f.kind == kindStart || attempt >= m.opt.MaxAttempts {
			events = append(events, ev)
			if f.kind == kindProtocol || f.kind == kindStart {
				return fail(errors.New(msg))
			}
			return fail(fmt.Errorf("giving up after %d attempts: %s", attempt, msg))
		}
		ceil := m.opt.BaseDelay << min(attempt-1, 30)
		if ceil <= 0 || ceil > m.opt.MaxDelay {
			ceil = m.opt.MaxDelay
		}
		wait := time.Duration(m.opt.Jitter() * float64(ceil))
		ev.WaitMS = float64(wait.Microseconds()) / 1000
		events = append(events, ev)
		if err := m.opt.Sleep(ctx, wait); err != nil {
			return fail(err)
		}
	}
}

// attempt makes one try of call c within the per-call deadline.
func (m *model) attempt(ctx context.Context, c Call) (models.Reply, *fault) {
	actx, cancel := context.WithTimeout(ctx, m.opt.Timeout)
	defer cancel()
	p, f := m.process(actx)
	if f != nil {
		return models.Reply{}, f
	}
	line, err := json.Marshal(c)
	if err != nil {
		return models.Reply{}, &fault{kindProtocol, fmt.Sprintf("model %q: encoding the request: %v", m.spec.Name, err)}
	}
	r := p.call(actx, c.ID, append(line, '\n'))
	if r.err != nil {
		return models.Reply{}, r.err
	}
	if r.reply.Error != "" {
		return models.Reply{}, &fault{kindProgram, fmt.Sprintf("program %s: %s", m.name, r.reply.Error)}
	}
	if r.reply.Text == nil {
		p.kill(&fault{kindMalformed, fmt.Sprintf("program %s: reply %d has neither text nor error: %s; stopped", m.name, c.ID, clip(r.line, 200))})
		return models.Reply{}, p.gone()
	}
	body, scrubbed := m.scrub.Bytes(r.line)
	text, a := m.scrub.String(*r.reply.Text)
	thinking, b := m.scrub.String(r.reply.Thinking)
	meta, d := m.scrub.Value(r.reply.Meta)
	out := models.Reply{Text: text, Thinking: thinking, Body: body, PromptTokens: r.reply.PromptTokens, OutputTokens: r.reply.OutputTokens}
	out.Meta, _ = meta.(map[string]any)
	if len(r.reply.ToolCalls) > 0 && string(r.reply.ToolCalls) != "null" {
		tc, e := m.scrub.Bytes(r.reply.ToolCalls)
		out.ToolCalls = json.RawMessage(tc)
		d = d || e
	}
	out.Redacted = scrubbed || a || b || d
	if scrubbed {
		sum := sha256.Sum256(r.line)
		out.OriginalBodySHA256 = hex.EncodeToString(sum[:])
	}
	return out, nil
}

// Verify checks the program's executable and script against the pins,
// then starts it and records what its hello reply says. A mismatch or a
// program that does not answer is an error.
func (m *model) Verify(ctx context.Context) (models.Facts, error) {
	facts := models.Facts{"backend": backend, "model": m.spec.Model, "command": m.name, "executable": m.path, "protocol": Protocol}
	if m.spec.Host != "" {
		facts["host"] = m.spec.Host
	}
	if think, set, _ := models.Think(m.spec.Options); set {
		facts["think"] = think
	}
	id, err := m.Identify()
	// The digest is what stress verify shows as the identity.
	facts["executable_sha256"], facts["digest"] = id.SHA256, id.SHA256
	if m.script != "" {
		facts["script"], facts["script_sha256"] = id.Script, id.ScriptSHA256
	}
	if err != nil {
		return facts, err
	}
	if err := m.check(id); err != nil {
		return facts, err
	}
	facts["pinned"] = m.spec.Digest != ""
	if _, f := m.process(ctx); f != nil {
		return facts, fmt.Errorf("model %q: %s", m.spec.Name, f.msg)
	}
	m.hmu.Lock()
	if m.hello != nil {
		facts["program"] = m.hello
		if v, ok := m.hello["version"].(string); ok {
			facts["server_version"] = v
		}
	}
	m.hmu.Unlock()
	return facts, nil
}

// SeedCheck sends one probe twice with the same seed and compares answers.
func (m *model) SeedCheck(ctx context.Context) (bool, string, error) {
	return models.ProbeSeed(ctx, m, m.spec.Options, nil)
}

// Close stops the program: its stdin is closed and, if it has not exited
// within 2 s, its process group is killed. A later call starts it again.
func (m *model) Close() error {
	m.mu.Lock()
	p := m.proc
	m.proc = nil
	m.mu.Unlock()
	if p != nil {
		p.stop(2 * time.Second)
	}
	return nil
}

// Stderr returns the last n bytes (at most 64 KiB) the program last
// started wrote to stderr.
func (m *model) Stderr(n int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		return ""
	}
	return m.last.stderr.Last(n)
}
