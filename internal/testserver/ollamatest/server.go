package ollamatest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// WantVersion is the Ollama version scripts/ollama-install.sh builds.
const WantVersion = "0.17.4"

// binaryName is the versioned name scripts/ollama-install.sh installs the
// server under, so that checkouts testing other versions can share a
// GOPATH.
const binaryName = "ollama-" + WantVersion

// installHint is appended to errors about a missing binary.
const installHint = "run scripts/ollama-install.sh (builds ollama v" + WantVersion +
	" into $(go env GOPATH)/bin/" + binaryName + ") or set OLLAMA_BIN"

// findBinary returns the path of the ollama binary: $OLLAMA_BIN, else
// binaryName in $(go env GOPATH)/bin or on PATH, else "ollama" on PATH or
// in $(go env GOPATH)/bin (of any version: the server then logs the
// version it reports).
func findBinary() (string, error) {
	if p := os.Getenv("OLLAMA_BIN"); p != "" {
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("OLLAMA_BIN=%s is not an executable file; %s", p, installHint)
	}
	for _, dir := range gopathBins() {
		if p := filepath.Join(dir, binaryName); isExecutable(p) {
			return p, nil
		}
	}
	for _, name := range []string{binaryName, "ollama"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	for _, dir := range gopathBins() {
		if p := filepath.Join(dir, "ollama"); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("ollama binary not found (OLLAMA_BIN, %s, PATH, $(go env GOPATH)/bin); %s", binaryName, installHint)
}

// Available reports whether an ollama binary can be found (see findBinary).
func Available() bool {
	_, err := findBinary()
	return err == nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// gopathBins returns the bin directories of $(go env GOPATH), falling back
// to $GOPATH and $HOME/go when the go command is unavailable.
func gopathBins() []string {
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(home, "go")
		}
	}
	var dirs []string
	for _, p := range filepath.SplitList(gopath) {
		if p != "" {
			dirs = append(dirs, filepath.Join(p, "bin"))
		}
	}
	return dirs
}

// Server is a running "ollama serve" owned by the test process.
type Server struct {
	// Host is the base URL, e.g. http://127.0.0.1:41234.
	Host string
	// Addr is host:port, the value of OLLAMA_HOST.
	Addr string
	// Bin is the ollama binary, Dir the private directory holding HOME,
	// the models directory, the server log and created model files.
	Bin, Dir string

	cmd      *exec.Cmd
	env      []string
	logPath  string
	exited   chan struct{}
	stopOnce sync.Once
}

// StartServer starts "ollama serve" on a free loopback port with HOME and
// OLLAMA_MODELS inside dir, and waits until /api/version answers.
func StartServer(ctx context.Context, dir string) (*Server, error) {
	bin, err := findBinary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // the free port may be taken meanwhile
		s, err := startOnce(ctx, bin, dir, attempt)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startOnce(ctx context.Context, bin, dir string, attempt int) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	home := filepath.Join(dir, "home")
	models := filepath.Join(dir, "models")
	for _, d := range []string{home, models} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s := &Server{
		Host:    "http://" + addr,
		Addr:    addr,
		Bin:     bin,
		Dir:     dir,
		logPath: filepath.Join(dir, fmt.Sprintf("serve-%d.log", attempt)),
		exited:  make(chan struct{}),
	}
	s.env = serverEnv(home, models, addr)

	logf, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = s.env
	cmd.Dir = dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	s.cmd = cmd
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(s.exited)
	}()

	deadline := time.Now().Add(60 * time.Second)
	for {
		if v, err := s.Version(ctx); err == nil {
			if v != WantVersion {
				// Works, but note it in the log for diagnosis.
				fmt.Fprintf(os.Stderr, "ollamatest: %s reports version %q, want %s\n", bin, v, WantVersion)
			}
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("ollama serve exited during startup: %s\n%s", cmd.ProcessState, s.LogTail(4000))
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("ollama serve on %s not ready after 60s\n%s", addr, s.LogTail(4000))
		}
	}
}

// serverEnv is the parent environment minus any OLLAMA_* settings, plus a
// private HOME/OLLAMA_MODELS and settings that keep runs reproducible.
func serverEnv(home, models, addr string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", strings.HasPrefix(k, "OLLAMA_"):
			if k == "OLLAMA_DEBUG" {
				env = append(env, kv)
			}
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home,
		"OLLAMA_HOST="+addr,
		"OLLAMA_MODELS="+models,
		"OLLAMA_NUM_PARALLEL=1", // one sequence per batch: deterministic per seed
		"OLLAMA_MAX_LOADED_MODELS=1",
		"OLLAMA_KEEP_ALIVE=10m",
		"OLLAMA_NOPRUNE=1",
		// Note: v0.17's automatic flash attention makes the CPU's prompt
		// evaluation of the study's 2,000-token prompts twice as slow
		// (1.0 s a decision against 0.44 s without it; v0.6.5: 0.28 s).
		"OLLAMA_FLASH_ATTENTION=0",
	)
}

// Start starts a server for the test and stops it on cleanup. It fails the
// test (it does not skip) when the ollama binary is missing; guard with
// Available() to make a test optional.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := findBinary(); err != nil {
		t.Fatalf("ollamatest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := StartServer(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("ollamatest: %v", err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("ollama serve log (tail):\n%s", s.LogTail(8000))
		}
	})
	return s
}

// Stop terminates the server (SIGTERM, then SIGKILL of its process group
// after 10s) and waits for it. Safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		_ = s.cmd.Process.Signal(terminateSignal)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			killProcessGroup(s.cmd)
			<-s.exited
		}
		// Runner subprocesses share the process group; make sure none
		// outlives the server.
		killProcessGroup(s.cmd)
	})
}

// Log returns the server log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// LogTail returns at most the last n bytes of the server log.
func (s *Server) LogTail(n int) string {
	l := s.Log()
	if len(l) > n {
		l = "..." + l[len(l)-n:]
	}
	return l
}

// Version returns the version /api/version reports.
func (s *Server) Version(ctx context.Context) (string, error) {
	var v struct {
		Version string `json:"version"`
	}
	if err := s.getJSON(ctx, "/api/version", &v); err != nil {
		return "", err
	}
	return v.Version, nil
}

// ModelInfo is an entry of /api/tags.
type ModelInfo struct {
	Name   string `json:"name"`
	Model  string `json:"model"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// Models lists the models the server knows (/api/tags).
func (s *Server) Models(ctx context.Context) ([]ModelInfo, error) {
	var tags struct {
		Models []ModelInfo `json:"models"`
	}
	if err := s.getJSON(ctx, "/api/tags", &tags); err != nil {
		return nil, err
	}
	return tags.Models, nil
}

func (s *Server) getJSON(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Host+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(body))
	}
	return json.Unmarshal(body, v)
}

// defaultModelName is the name CreateTinyModel uses for an empty name.
const defaultModelName = "ollamatest-tiny"

// modelfileWith returns the Modelfile that imports the tiny model from
// ggufPath (relative paths are resolved against the Modelfile's
// directory) with chat template template.
func modelfileWith(ggufPath, template string) string {
	return "FROM " + ggufPath + "\n" +
		"TEMPLATE \"\"\"" + template + "\"\"\"\n" +
		"PARAMETER num_ctx 2048\n" +
		// One thread: the model is tiny, and ggml's spinning thread
		// barrier collapses on a busy machine (seconds per call with
		// 2 threads on 2 loaded cores). Also keeps the float math
		// independent of the core count.
		"PARAMETER num_thread 1\n"
}

// CreateTinyModel writes the tiny GGUF (writeTinyGGUFFile with opts) and a
// Modelfile into a fresh directory under s.Dir and imports them with the
// real "ollama create NAME -f Modelfile" against this server. It returns
// the model as /api/tags lists it; the digest depends on the server, so
// read it from here rather than hard-coding it.
func (s *Server) CreateTinyModel(ctx context.Context, name string, opts ...TinyOption) (ModelInfo, error) {
	return s.CreateModel(ctx, name, ChatTemplate, opts...)
}

// CreateModel is CreateTinyModel with the chat template tmpl (e.g.
// ThinkingTemplate).
func (s *Server) CreateModel(ctx context.Context, name, tmpl string, opts ...TinyOption) (ModelInfo, error) {
	if name == "" {
		name = defaultModelName
	}
	dir, err := os.MkdirTemp(s.Dir, "model-")
	if err != nil {
		return ModelInfo{}, err
	}
	if err := writeTinyGGUFFile(filepath.Join(dir, "tiny.gguf"), opts...); err != nil {
		return ModelInfo{}, err
	}
	mf := filepath.Join(dir, "Modelfile")
	if err := os.WriteFile(mf, []byte(modelfileWith("./tiny.gguf", tmpl)), 0o644); err != nil {
		return ModelInfo{}, err
	}
	cmd := exec.CommandContext(ctx, s.Bin, "create", name, "-f", mf)
	cmd.Env = s.env
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return ModelInfo{}, fmt.Errorf("ollama create %s: %w\n%s\nserver log:\n%s", name, err, out, s.LogTail(4000))
	}
	models, err := s.Models(ctx)
	if err != nil {
		return ModelInfo{}, err
	}
	for _, m := range models {
		if m.Name == name || m.Model == name || m.Name == name+":latest" {
			return m, nil
		}
	}
	return ModelInfo{}, fmt.Errorf("ollama create %s succeeded but /api/tags lists %v", name, models)
}
