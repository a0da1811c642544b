package mcpenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/capture"
)

// Servers are the reference servers a scenario may run on, by the name
// its server field gives.
var Servers = map[string]ServerSpec{
	"memory":     {Package: "server-memory", Reset: true},
	"filesystem": {Package: "server-filesystem", Args: []string{"${files}"}, Reset: true},
	"everything": {Package: "server-everything", Args: []string{"stdio"}, Stateless: []string{
		"echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
		"get-structured-content", "get-sum", "get-tiny-image"}},
}

// ServerSpec says how to start a reference server: node runs
// Modules/Package/dist/index.js with Args, in which ${files} is the
// sandbox's allowed directory; MEMORY_FILE_PATH is the sandbox's memory
// file.
type ServerSpec struct {
	Package string   // directory under node_modules/@modelcontextprotocol
	Args    []string // after the script
	// Reset says the server keeps no state of its own between calls: it
	// reads the memory file (server-memory) or the allowed directory
	// (server-filesystem) anew on every call, so once its sandbox is
	// emptied a process can serve another decision exactly as a fresh
	// one would (Options.Reuse; TestReuseEquivalent checks it on every
	// scenario).
	Reset bool
	// Stateless, for a server that keeps state in its process
	// (server-everything: simulated logging, subscriber updates, the
	// resources gzip-file-as-resource adds, tasks), are the tools that
	// leave none: a process is reused after a decision whose every call
	// named one of them or a tool the server does not list (which it
	// refuses without running anything), and stopped after any other.
	Stateless []string
}

// reuses says a process of the server may serve more than one decision.
func (s ServerSpec) reuses() bool { return s.Reset || len(s.Stateless) > 0 }

// reusable says a process of the server can serve another decision
// after one that made calls (listed says which tools it lists).
func (s ServerSpec) reusable(calls []callRecord, listed func(tool string) bool) bool {
	if s.Reset {
		return true
	}
	if len(s.Stateless) == 0 {
		return false
	}
	for _, c := range calls {
		if !slices.Contains(s.Stateless, c.Tool) && listed(c.Tool) {
			return false
		}
	}
	return true
}

// proc is a running server with its sandbox.
type proc struct {
	dir, files, memory string
	session            *mcp.ClientSession
	stderr             *capture.Stderr
	tools              []json.RawMessage
}

// pool keeps idle processes by server, for reuse.
type pool struct {
	mu   sync.Mutex
	idle map[string][]*proc
}

func (p *pool) take(server string) *proc {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.idle[server]
	if len(q) == 0 {
		return nil
	}
	pr := q[len(q)-1]
	p.idle[server] = q[:len(q)-1]
	return pr
}

func (p *pool) put(server string, pr *proc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle[server] = append(p.idle[server], pr)
}

func (p *pool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	for _, q := range p.idle {
		for _, pr := range q {
			pr.session.Close()
			err = errors.Join(err, os.RemoveAll(pr.dir))
		}
	}
	p.idle = map[string][]*proc{}
	return err
}

// Start makes the sandbox, starts the server, makes the setup calls and
// the failing call, and returns its observation. A server that does not
// start is an error naming the command and its stderr.
func (e *Env) Start(ctx context.Context) (json.RawMessage, error) {
	if e.session != nil || e.closed {
		return nil, fmt.Errorf("scenario %s: Start called twice", e.sc.ID)
	}
	if e.o.ExternalURL != "" {
		return e.startExternal(ctx)
	}
	if e.pool != nil {
		if pr := e.pool.take(e.sc.Server); pr != nil {
			e.dir, e.files, e.memory, e.session, e.stderr, e.tools = pr.dir, pr.files, pr.memory, pr.session, pr.stderr, pr.tools
			if err := e.seed(); err != nil {
				return nil, err
			}
			return e.first(ctx)
		}
	}
	dir, err := os.MkdirTemp("", "stress-mcpenv-")
	if err != nil {
		return nil, err
	}
	e.dir = dir
	e.files = filepath.Join(dir, "files")
	e.memory = filepath.Join(dir, "memory.jsonl")
	if err := e.seed(); err != nil {
		return nil, err
	}
	spec := Servers[e.sc.Server]
	node := e.o.Node
	if node == "" {
		node = "node"
	}
	mods, err := filepath.Abs(e.o.Modules) // the server runs in the sandbox
	if err != nil {
		return nil, err
	}
	script := filepath.Join(mods, spec.Package, "dist", "index.js")
	args := []string{script}
	for _, a := range spec.Args {
		args = append(args, strings.ReplaceAll(a, "${files}", e.files))
	}
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "MEMORY_FILE_PATH=" + e.memory}
	e.stderr = capture.NewStderr(4096)
	cmd.Stderr = e.stderr
	e.cmd = cmd
	client := mcp.NewClient(&mcp.Implementation{Name: "stress-act", Version: "1"}, nil)
	sctx, cancel := context.WithTimeout(ctx, e.o.timeout())
	defer cancel()
	e.session, err = client.Connect(sctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, e.o.session())
	if err != nil {
		return nil, fmt.Errorf("scenario %s: starting %s: %w (stderr: %s)", e.sc.ID, strings.Join(cmd.Args, " "), err, e.stderr.String())
	}
	if err := e.listTools(sctx); err != nil {
		return nil, err
	}
	return e.first(ctx)
}

// seed makes the allowed directory with the scenario's files.
func (e *Env) seed() error {
	if err := os.MkdirAll(e.files, 0o755); err != nil {
		return err
	}
	for _, p := range slices.Sorted(maps.Keys(e.sc.Files)) {
		f := filepath.Join(e.files, filepath.FromSlash(p))
		if !strings.HasPrefix(f, e.files+string(filepath.Separator)) {
			return fmt.Errorf("scenario %s: field files: %q leaves the sandbox", e.sc.ID, p)
		}
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f, []byte(e.sc.Files[p]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// release empties the sandbox of a live server and leaves the process in
// the pool; false when a call may have left state in the process
// (ServerSpec.Stateless), the server does not answer a ping or the
// sandbox cannot be emptied (the caller then stops it).
func (e *Env) release() bool {
	if !Servers[e.sc.Server].reusable(e.calls, e.listed) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if e.session.Ping(ctx, nil) != nil {
		return false
	}
	if err := os.Remove(e.memory); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	entries, err := os.ReadDir(e.files)
	if err != nil {
		return false
	}
	for _, d := range entries {
		if os.RemoveAll(filepath.Join(e.files, d.Name())) != nil {
			return false
		}
	}
	e.stderr.Reset()
	e.pool.put(e.sc.Server, &proc{dir: e.dir, files: e.files, memory: e.memory, session: e.session, stderr: e.stderr, tools: e.tools})
	return true
}

// terminateAfter is how long Close waits for a server to exit once its
// stdin is closed before it sends SIGTERM (server-everything does not exit
// on its own).
const terminateAfter = 200 * time.Millisecond

// Close stops the server and removes the sandbox. A server's exit status
// is not an error: it is stopped on purpose.
func (e *Env) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if e.pool != nil && e.session != nil && e.dir != "" && e.release() {
		return nil
	}
	if e.session != nil {
		e.session.Close()
	}
	if e.dir != "" {
		return os.RemoveAll(e.dir)
	}
	return nil
}
