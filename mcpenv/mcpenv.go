// Package mcpenv is the environment of the action task on the pinned
// reference MCP servers (server-memory, server-filesystem,
// server-everything): each decision starts its scenario's server in a
// fresh sandbox (a temporary directory, a fresh memory file, a fresh Node
// process), reaches it through the Go SDK client over stdio, makes the
// scenario's failing call, sends the calls the model writes, and reads
// the outcome from the server's own state (its memory file, the files of
// its allowed directory) and the calls made. It implements
// simulator.EnvFactory and simulator.Actor.
//
// Calls go only to the server the harness started itself. Every file
// path the model sees names the sandbox as /sandbox; the environment maps
// it to the real temporary directory in the calls it sends and back in
// what it shows.
package mcpenv

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/capture"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// SandboxName is how the sandbox's directory appears to the model.
const SandboxName = "/sandbox"

// Servers are the reference servers a scenario may run on, by the name
// its server field gives.
var Servers = map[string]ServerSpec{
	"memory":     {Package: "server-memory", Reset: true},
	"filesystem": {Package: "server-filesystem", Args: []string{"${files}"}, Reset: true},
	"everything": {Package: "server-everything", Args: []string{"stdio"}},
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
	// scenario). server-everything keeps state in the process
	// (subscriptions, logging level), so it is always started fresh.
	Reset bool
}

// Scenario is one act scenario on a reference server.
type Scenario struct {
	ID        string               `json:"id"`                // unique in its set
	Server    string               `json:"server"`            // a key of Servers
	Class     string               `json:"class"`             // invalid_type, missing_field, unknown_tool or invalid_value
	Task      string               `json:"task"`              // what the user asked, shown to the model
	Files     map[string]string    `json:"files,omitempty"`   // files seeded in the allowed directory, by path relative to it
	Setup     []simulator.ToolCall `json:"setup,omitempty"`   // calls made before the first (they must succeed)
	Tool      string               `json:"tool"`              // the tool of the failing call
	Args      json.RawMessage      `json:"args"`              // its arguments, /sandbox for the sandbox
	Pointer   string               `json:"pointer,omitempty"` // the argument at fault, a JSON pointer (all classes but unknown_tool)
	Preferred study.Policy         `json:"preferred_policy"`  // the preferred policy
	NonHarm   []study.Policy       `json:"non_harm"`          // policies whose execution harms nothing
	Intended  []lab.Predicate      `json:"intended"`          // all hold: the task is done, exactly once
	Harm      []lab.Predicate      `json:"harm"`              // any holds: harm
}

// Set is the scenarios of one file of mcpenv/scenarios.
type Set struct {
	Name      string
	Scenarios []*Scenario
}

// Scenario returns scenario id of the set.
func (s *Set) Scenario(id string) (*Scenario, bool) {
	for _, sc := range s.Scenarios {
		if sc.ID == id {
			return sc, true
		}
	}
	return nil, false
}

//go:embed scenarios/*.json
var builtin embed.FS

// DefaultSet is the set of the reference scenarios.
const DefaultSet = "reference"

// BuiltinSet loads the embedded set name ("" for DefaultSet).
func BuiltinSet(name string) (*Set, error) {
	if name == "" {
		name = DefaultSet
	}
	file := "scenarios/" + name + ".json"
	data, err := fs.ReadFile(builtin, file)
	if err != nil {
		return nil, fmt.Errorf("mcpenv: no scenario set %q", name)
	}
	return Parse("mcpenv/"+file, name, data)
}

// collections are the record collections of the state predicates may
// count.
var collections = map[string]bool{"/memory/entities": true, "/memory/relations": true, "/files": true, "/calls": true}

// Parse reads and checks a scenario set; errors name the file, the
// scenario and the field.
func Parse(file, name string, data []byte) (*Set, error) {
	var doc struct {
		Scenarios []*Scenario `json:"scenarios"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var errs []error
	seen := map[string]bool{}
	for i, sc := range doc.Scenarios {
		bad := func(field, format string, a ...any) {
			errs = append(errs, fmt.Errorf("%s: scenario %s (scenarios[%d]): field %s: %s", file, sc.ID, i, field, fmt.Sprintf(format, a...)))
		}
		if sc.ID == "" || seen[sc.ID] {
			bad("id", "missing or duplicate id %q", sc.ID)
		}
		seen[sc.ID] = true
		if _, ok := Servers[sc.Server]; !ok {
			bad("server", "unknown server %q (want memory, filesystem or everything)", sc.Server)
		}
		switch sc.Class {
		case "invalid_type", "missing_field", "unknown_tool", "invalid_value":
		default:
			bad("class", "unknown class %q", sc.Class)
		}
		if strings.TrimSpace(sc.Task) == "" {
			bad("task", "say what the user asked")
		}
		if sc.Tool == "" {
			bad("tool", "missing")
		}
		var args map[string]any
		if json.Unmarshal(sc.Args, &args) != nil || args == nil {
			bad("args", "want a JSON object")
		}
		if (sc.Class == "unknown_tool") != (sc.Pointer == "") || sc.Pointer != "" && !strings.HasPrefix(sc.Pointer, "/") {
			bad("pointer", "want a JSON pointer to the argument at fault for every class but unknown_tool, got %q", sc.Pointer)
		}
		if !sc.Preferred.Valid() {
			bad("preferred_policy", "unknown policy %q", sc.Preferred)
		}
		if !sc.InNonHarm(sc.Preferred) || !sc.InNonHarm(study.StopOrEscalate) {
			bad("non_harm", "want the preferred policy and stop_or_escalate in it")
		}
		if len(sc.Intended) == 0 {
			bad("intended", "want at least one predicate")
		}
		for j := range sc.Intended {
			if msg := checkPredicate(&sc.Intended[j]); msg != "" {
				bad(fmt.Sprintf("intended[%d]", j), "%s", msg)
			}
		}
		for j := range sc.Harm {
			if msg := checkPredicate(&sc.Harm[j]); msg != "" {
				bad(fmt.Sprintf("harm[%d]", j), "%s", msg)
			}
		}
		for j, c := range sc.Setup {
			if c.Tool == "" || !json.Valid(c.Arguments) {
				bad(fmt.Sprintf("setup[%d]", j), "want a tool and JSON arguments")
			}
		}
	}
	if len(doc.Scenarios) == 0 {
		errs = append(errs, fmt.Errorf("%s: no scenarios", file))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Set{Name: name, Scenarios: doc.Scenarios}, nil
}

// InNonHarm reports whether p is in the scenario's non-harm set.
func (sc *Scenario) InNonHarm(p study.Policy) bool {
	for _, x := range sc.NonHarm {
		if x == p {
			return true
		}
	}
	return false
}

// checkPredicate returns what is wrong with p, or "".
func checkPredicate(p *lab.Predicate) string {
	switch {
	case strings.TrimSpace(p.Why) == "":
		return "say what the predicate means (why)"
	case p.Lines != "" || p.Value != "":
		return "only count predicates apply to a reference server's state"
	case !collections[p.Count]:
		return fmt.Sprintf("count %q is not a collection of the state (want /memory/entities, /memory/relations, /files or /calls)", p.Count)
	case p.N == nil:
		return "a count predicate needs n"
	}
	for k, v := range p.Where {
		var x any
		if json.Unmarshal(v, &x) != nil {
			return fmt.Sprintf("where.%s is not JSON", k)
		}
		if m, ok := x.(map[string]any); ok {
			if _, not := m["not"]; !not || len(m) != 1 {
				return fmt.Sprintf("where.%s: an object must be {\"not\": value} (compare arguments through args, a JSON string)", k)
			}
		}
	}
	return ""
}

// Options configure the environments.
type Options struct {
	// Modules is the directory holding the servers' packages
	// (scripts/mcp-servers/node_modules/@modelcontextprotocol).
	Modules string
	// Node is the node executable; "" for "node" on the PATH.
	Node string
	// CallTimeout bounds each call and the start; 0 for 20 s.
	CallTimeout time.Duration
	// ExternalURL, when set, is the streamable-HTTP endpoint of a server
	// the harness did not start: every decision connects to it instead of
	// starting the scenario's server, and only read-only tools may be
	// called on it (capture.ReadOnlyAccess: annotations and the name
	// rule); the scenario's first call and setup must be read-only too.
	// There is no sandbox: the state is the calls made.
	ExternalURL string
	// Reuse lets Factory keep the process of a server whose spec has
	// Reset for the next decision on that server, its sandbox emptied,
	// instead of starting a fresh one (a server that no longer answers a
	// ping is not kept). The factory's Close stops the kept processes.
	Reuse bool
}

func (o *Options) timeout() time.Duration {
	if o.CallTimeout > 0 {
		return o.CallTimeout
	}
	return 20 * time.Second
}

// Factory returns the environment factory of set on the servers in
// o.Modules.
func Factory(set *Set, o Options) simulator.EnvFactory {
	f := &factory{set: set, o: o}
	if o.Reuse {
		f.pool = &pool{idle: map[string][]*proc{}}
	}
	return f
}

type factory struct {
	set  *Set
	o    Options
	pool *pool // nil without Options.Reuse
}

// Close stops the processes the factory kept for reuse.
func (f *factory) Close() error {
	if f.pool == nil {
		return nil
	}
	return f.pool.close()
}

// proc is a running server with its sandbox.
type proc struct {
	dir, files, memory string
	session            *mcp.ClientSession
	stderr             *boundedBuffer
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

// NewEnv makes the environment of one decision (the seed is not used: the
// reference servers are deterministic).
func (f *factory) NewEnv(ctx context.Context, scenario string, seed int64) (simulator.Environment, error) {
	sc, ok := f.set.Scenario(scenario)
	if !ok {
		return nil, fmt.Errorf("mcpenv set %s has no scenario %q", f.set.Name, scenario)
	}
	e := New(sc, f.o)
	if f.pool != nil && Servers[sc.Server].Reset && f.o.ExternalURL == "" {
		e.pool = f.pool
	}
	return e, nil
}

// Env is the environment of one decision: one server in one sandbox.
type Env struct {
	sc      *Scenario
	o       Options
	dir     string // the sandbox
	files   string // the allowed directory
	memory  string // the memory file
	session *mcp.ClientSession
	cmd     *exec.Cmd // the server's process (nil for a reused one)
	stderr  *boundedBuffer
	tools   []json.RawMessage
	calls   []callRecord
	closed  bool
	mu      sync.Mutex
	pool    *pool // where Close leaves the process for reuse, or nil
}

// callRecord is one call the server received, in the state.
type callRecord struct {
	Seq       int             `json:"seq"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Args is Arguments as compact JSON with sorted keys, for predicates
	// (a where value compares it as a string).
	Args string `json:"args"`
	OK   bool   `json:"ok"` // completed without an error
}

var _ simulator.Actor = (*Env)(nil)

// New returns the environment of sc; Start starts its server.
func New(sc *Scenario, o Options) *Env { return &Env{sc: sc, o: o} }

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
	e.stderr = &boundedBuffer{max: 4096}
	cmd.Stderr = e.stderr
	e.cmd = cmd
	client := mcp.NewClient(&mcp.Implementation{Name: "stress-act", Version: "1"}, nil)
	sctx, cancel := context.WithTimeout(ctx, e.o.timeout())
	defer cancel()
	e.session, err = client.Connect(sctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, nil)
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
	for _, p := range sortedKeys(e.sc.Files) {
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
// the pool; false when the server does not answer a ping or the sandbox
// cannot be emptied (the caller then stops it).
func (e *Env) release() bool {
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
	e.stderr.reset()
	e.pool.put(e.sc.Server, &proc{dir: e.dir, files: e.files, memory: e.memory, session: e.session, stderr: e.stderr, tools: e.tools})
	return true
}

// listTools reads the server's tools.
func (e *Env) listTools(ctx context.Context) error {
	list, err := e.session.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("scenario %s: tools/list: %w (stderr: %s)", e.sc.ID, err, e.stderr.String())
	}
	for _, t := range list.Tools {
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		e.tools = append(e.tools, e.hide(b))
	}
	return nil
}

// startExternal connects to the external server and makes the
// scenario's setup and first call, all of which must be read-only.
func (e *Env) startExternal(ctx context.Context) (json.RawMessage, error) {
	e.stderr = &boundedBuffer{max: 0}
	client := mcp.NewClient(&mcp.Implementation{Name: "stress-act", Version: "1"}, nil)
	sctx, cancel := context.WithTimeout(ctx, e.o.timeout())
	defer cancel()
	var err error
	e.session, err = client.Connect(sctx, &mcp.StreamableClientTransport{Endpoint: e.o.ExternalURL}, nil)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: connecting to the external server %s: %w", e.sc.ID, e.o.ExternalURL, err)
	}
	if err := e.listTools(sctx); err != nil {
		return nil, err
	}
	for i, c := range append(append([]simulator.ToolCall(nil), e.sc.Setup...), e.First()) {
		first := i == len(e.sc.Setup)
		if first && e.sc.Class == "unknown_tool" && !e.listed(c.Tool) {
			// Note: the failing call of an unknown-tool scenario names a
			// tool the server does not have, which it cannot run: the call
			// capture's nonexistent_tool probe makes on servers it does
			// not own.
			continue
		}
		if ok, basis := e.allowedName(c.Tool); !ok {
			return nil, fmt.Errorf("scenario %s: %s may not be called on the external server %s: %s", e.sc.ID, c.Tool, e.o.ExternalURL, basis)
		}
	}
	return e.first(ctx)
}

// first makes the setup calls and the failing first call.
func (e *Env) first(ctx context.Context) (json.RawMessage, error) {
	for i, c := range e.sc.Setup {
		obs, failed, err := e.call(ctx, c)
		if err != nil || failed {
			return nil, fmt.Errorf("scenario %s: setup[%d] %s failed: %s %v", e.sc.ID, i, c.Tool, obs, err)
		}
	}
	e.calls = nil // the setup is not the decision's
	obs, failed, err := e.call(ctx, e.First())
	if err != nil {
		return nil, fmt.Errorf("scenario %s: first call: %w", e.sc.ID, err)
	}
	if !failed {
		return nil, fmt.Errorf("scenario %s: the first call did not fail: %s", e.sc.ID, obs)
	}
	return obs, nil
}

var _ simulator.Restricter = (*Env)(nil)

// Allowed implements simulator.Restricter: on an external server only
// read-only tools, by their annotations and the capture rules
// (capture.ReadOnlyAccess); on a server the harness started, every tool.
func (e *Env) Allowed(tool json.RawMessage) (bool, string) {
	if e.o.ExternalURL == "" {
		return true, ""
	}
	var t struct {
		Name        string         `json:"name"`
		Annotations map[string]any `json:"annotations"`
	}
	if err := json.Unmarshal(tool, &t); err != nil {
		return false, "the tool is not a JSON object"
	}
	return capture.ReadOnlyAccess(t.Name, t.Annotations)
}

// allowedName is Allowed for a listed tool by name (an unlisted tool is
// not allowed on an external server).
func (e *Env) allowedName(name string) (bool, string) {
	if e.o.ExternalURL == "" {
		return true, ""
	}
	if raw, ok := e.tool(name); ok {
		return e.Allowed(raw)
	}
	return false, "the server does not list it"
}

// tool returns the definition of the tool named name as the server
// listed it, and whether it did.
func (e *Env) tool(name string) (json.RawMessage, bool) {
	for _, raw := range e.tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name == name {
			return raw, true
		}
	}
	return nil, false
}

// listed reports whether the server listed a tool named name.
func (e *Env) listed(name string) bool { _, ok := e.tool(name); return ok }

// Task returns what the user asked (simulator.Tasker).
func (e *Env) Task() string { return e.sc.Task }

// Tools returns the tools the server listed (sandbox paths hidden).
func (e *Env) Tools(ctx context.Context) ([]json.RawMessage, error) { return e.tools, nil }

// First returns the scenario's failing call, as the model sees it.
func (e *Env) First() simulator.ToolCall {
	return simulator.ToolCall{Tool: e.sc.Tool, Arguments: e.sc.Args}
}

// Send sends c (the reference servers have no clock: a wait is recorded
// by the harness, not slept) and returns its observation; more is false
// once a call succeeded. A dead server is an error.
func (e *Env) Send(ctx context.Context, t int, c simulator.ToolCall, waitMS int64) (json.RawMessage, bool, error) {
	if e.session == nil {
		return nil, false, fmt.Errorf("scenario %s: Send before Start", e.sc.ID)
	}
	if ok, basis := e.allowedName(c.Tool); !ok {
		// Note: the simulator's check refuses such a call first; this is
		// the last line of defence of a server the harness did not start.
		return nil, false, fmt.Errorf("scenario %s turn %d: %s may not be called on the external server: %s", e.sc.ID, t, c.Tool, basis)
	}
	obs, failed, err := e.call(ctx, c)
	if err != nil {
		return nil, false, fmt.Errorf("scenario %s turn %d: %w", e.sc.ID, t, err)
	}
	return obs, failed, nil
}

// Execute carries out a label-task policy: only the replays exist
// without the model's call (retry_now, retry_later repeat the first
// call); the other policies need task act.
func (e *Env) Execute(ctx context.Context, t int, a simulator.Answer) (json.RawMessage, bool, error) {
	switch a.Policy {
	case study.RetryNow, study.RetryLater:
		return e.Send(ctx, t, e.First(), 0)
	}
	return nil, false, fmt.Errorf("scenario %s: %s needs the model's call (task: act)", e.sc.ID, a.Policy)
}

// call sends one tools/call within the call timeout; failed says the call
// did not complete successfully (an error or an isError result).
func (e *Env) call(ctx context.Context, c simulator.ToolCall) (json.RawMessage, bool, error) {
	args := c.Arguments
	if e.dir != "" {
		args = bytes.ReplaceAll(args, []byte(SandboxName), []byte(e.dir))
	}
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, false, fmt.Errorf("arguments of %s: %w", c.Tool, err)
	}
	cctx, cancel := context.WithTimeout(ctx, e.o.timeout())
	defer cancel()
	res, err := e.session.CallTool(cctx, &mcp.CallToolParams{Name: c.Tool, Arguments: m})
	obs, oerr := lab.Observe(res, err)
	if oerr != nil {
		return nil, false, fmt.Errorf("%s: %w (server stderr: %s)", c.Tool, oerr, e.stderr.String())
	}
	failed := err != nil || res == nil || res.IsError
	canon, _ := json.Marshal(m) // map keys sorted
	e.calls = append(e.calls, callRecord{Seq: len(e.calls) + 1, Tool: c.Tool, Arguments: c.Arguments, Args: string(e.hide(canon)), OK: !failed})
	return e.hide(obs), failed, nil
}

// hide shows the sandbox as SandboxName.
func (e *Env) hide(b []byte) json.RawMessage {
	if e.dir == "" {
		return b
	}
	return bytes.ReplaceAll(b, []byte(e.dir), []byte(SandboxName))
}

// State is the state predicates read: the memory file's graph, the files
// of the allowed directory (paths relative to it, with a leading /) and
// the calls of the decision.
type State struct {
	Memory struct {
		Entities  []map[string]any `json:"entities"`
		Relations []map[string]any `json:"relations"`
	} `json:"memory"`
	Files []fileRecord `json:"files"`
	Calls []callRecord `json:"calls"`
}

type fileRecord struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// readState reads the sandbox.
func (e *Env) readState() (*State, error) {
	st := &State{Calls: e.calls}
	st.Memory.Entities, st.Memory.Relations = []map[string]any{}, []map[string]any{}
	st.Files = []fileRecord{}
	if st.Calls == nil {
		st.Calls = []callRecord{}
	}
	if e.dir == "" { // an external server: the calls only
		return st, nil
	}
	if f, err := os.Open(e.memory); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<22)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			switch rec["type"] {
			case "entity":
				st.Memory.Entities = append(st.Memory.Entities, rec)
			case "relation":
				st.Memory.Relations = append(st.Memory.Relations, rec)
			}
		}
		f.Close()
	}
	err := filepath.WalkDir(e.files, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(e.files, p)
		st.Files = append(st.Files, fileRecord{Path: "/" + filepath.ToSlash(rel), Content: string(b)})
		return nil
	})
	return st, err
}

// Final reads the sandbox's state and evaluates the scenario's
// predicates. ClockMS is 0: the reference servers have no clock the
// harness owns, and wall time would make the column irreproducible.
func (e *Env) Final(ctx context.Context) (simulator.EnvOutcome, error) {
	st, err := e.readState()
	if err != nil {
		return simulator.EnvOutcome{}, err
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return simulator.EnvOutcome{}, err
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return simulator.EnvOutcome{}, err
	}
	o := simulator.EnvOutcome{Recovered: true, Calls: len(e.calls), State: e.hide(raw)}
	for i := range e.sc.Intended {
		if !e.sc.Intended[i].Eval(doc) {
			o.Recovered = false
		}
	}
	for i := range e.sc.Harm {
		if e.sc.Harm[i].Eval(doc) {
			o.Harm = true
		}
	}
	return o, nil
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
	var err error
	if e.session != nil {
		e.session.Close()
	}
	if e.dir != "" {
		err = errors.Join(err, os.RemoveAll(e.dir))
	}
	return err
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.b.Len(); room > 0 {
		b.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *boundedBuffer) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.b.String())
}

var _ io.Writer = (*boundedBuffer)(nil)

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
