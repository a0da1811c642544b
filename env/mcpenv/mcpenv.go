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
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/internal/capture"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/statediff/readers"
	"github.com/mcpstress/stress/study"
)

// SandboxName is how the sandbox's directory appears to the model.
const SandboxName = "/sandbox"

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

// Scenario is one act scenario on a reference server.
type Scenario struct {
	ID      string               `json:"id"`                // unique in its set
	Server  string               `json:"server"`            // a key of Servers
	Class   string               `json:"class"`             // invalid_type, missing_field, unknown_tool or invalid_value
	Task    string               `json:"task"`              // what the user asked, shown to the model
	Files   map[string]string    `json:"files,omitempty"`   // files seeded in the allowed directory, by path relative to it
	Setup   []simulator.ToolCall `json:"setup,omitempty"`   // calls made before the first (they must succeed)
	Tool    string               `json:"tool"`              // the tool of the failing call
	Args    json.RawMessage      `json:"args"`              // its arguments, /sandbox for the sandbox
	Pointer string               `json:"pointer,omitempty"` // the argument at fault, a JSON pointer (all classes but unknown_tool)
	// PreferredSet are the preferred policies: those whose canonical
	// repair, executed on a fresh sandbox, recovers without harm, the one
	// Strict credits first (TestExecutionTable holds the set to it).
	PreferredSet []study.Policy `json:"preferred_policies"`
	Preferred    study.Policy   `json:"-"`        // PreferredSet's first
	NonHarm      []study.Policy `json:"non_harm"` // policies whose execution harms nothing
	// Policies are the canonical repairs of the policies that need the
	// model's call (Repair).
	Policies Repairs `json:"policies"`
	// Spec is the goal effect (the change to the state after the setup
	// that doing the task once makes, or the call that answers a read)
	// and the tolerated changes.
	statediff.Spec
	// Harm are extra checks, on the calls (a tool whose effect the state
	// does not show): any that holds adds harm of its kind. They can only
	// add harm to what the diff finds.
	Harm []lab.Predicate `json:"harm,omitempty"`
}

// Repairs are a scenario's canonical calls for the policies that need
// one: the corrected call, the right tool.
type Repairs struct {
	ReviseArguments []simulator.ToolCall `json:"revise_arguments"`
	SelectTool      []simulator.ToolCall `json:"select_tool"`
}

// Repair returns the calls that carry out policy p in the scenario: its
// repair for revise_arguments and select_tool; the failing call again for
// retry_now, retry_later and authenticate (the reference servers have no
// credentials to obtain, so authenticating changes nothing and the call
// is replayed); none for stop_or_escalate.
func (sc *Scenario) Repair(p study.Policy) []simulator.ToolCall {
	switch p {
	case study.ReviseArguments:
		return sc.Policies.ReviseArguments
	case study.SelectTool:
		return sc.Policies.SelectTool
	case study.RetryNow, study.RetryLater, study.Authenticate:
		return []simulator.ToolCall{{Tool: sc.Tool, Arguments: sc.Args}}
	}
	return nil
}

// Set is the scenarios of one file of env/mcpenv/scenarios.
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
	return Parse("env/mcpenv/"+file, name, data)
}

// StateSchema is what the outcome's diff reads of a sandbox's state
// (State): the memory graph's entities (by name) and relations, the files
// and directories of the allowed directory (by path); the calls are a
// log, and so is capped (what the reader left out at its caps). A new
// file is a regular file read whole (no link, no kind, not truncated),
// its size what its content makes it; a new entity or relation has the
// type server-memory writes.
var StateSchema = statediff.Schema{
	Collections: []statediff.Collection{
		{Path: "/memory/entities", Key: []string{"name"}, Fields: []string{"type", "name", "entityType", "observations"}, Defaults: map[string]any{"type": "entity"}},
		{Path: "/memory/relations", Key: []string{"from", "relationType", "to"}, Fields: []string{"type", "from", "to", "relationType"}, Defaults: map[string]any{"type": "relation"}},
		{Path: "/files", Key: []string{"path"}, Fields: []string{"path", "content", "size", "truncated", "link", "kind"},
			Defaults: map[string]any{"truncated": nil, "link": nil, "kind": nil}, Free: []string{"size"}},
		{Path: "/directories", Key: []string{"path"}, Fields: []string{"path"}},
	},
	Logs: []string{"/calls", "/capped"},
}

// collections are the record collections of the state the extra checks
// may count.
var collections = map[string]bool{"/memory/entities": true, "/memory/relations": true, "/files": true, "/directories": true, "/calls": true}

// Parse reads and checks a scenario set; errors name the file, the
// scenario and the field.
func Parse(file, name string, data []byte) (*Set, error) {
	if err := input.CheckJSON(data); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var doc struct {
		Scenarios []*Scenario `json:"scenarios"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if at := dec.InputOffset(); input.Trailing(dec) {
		return nil, fmt.Errorf("%s: data after the JSON object at byte %d", file, at)
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
		if !statediff.IsObject(sc.Args) {
			bad("args", "want a JSON object")
		}
		if (sc.Class == "unknown_tool") != (sc.Pointer == "") || sc.Pointer != "" && !strings.HasPrefix(sc.Pointer, "/") {
			bad("pointer", "want a JSON pointer to the argument at fault for every class but unknown_tool, got %q", sc.Pointer)
		}
		if len(sc.PreferredSet) == 0 {
			bad("preferred_policies", "name the preferred policies, the one Strict credits first")
		} else {
			sc.Preferred = sc.PreferredSet[0]
		}
		for j, p := range sc.PreferredSet {
			if !p.Valid() {
				bad(fmt.Sprintf("preferred_policies[%d]", j), "unknown policy %q", p)
			} else if !sc.InNonHarm(p) {
				bad("non_harm", "want every preferred policy in it (%s is missing)", p)
			}
		}
		if !sc.InNonHarm(study.StopOrEscalate) {
			bad("non_harm", "want stop_or_escalate in it")
		}
		for _, r := range []struct {
			name  string
			calls []simulator.ToolCall
		}{{"revise_arguments", sc.Policies.ReviseArguments}, {"select_tool", sc.Policies.SelectTool}} {
			if len(r.calls) == 0 {
				bad("policies."+r.name, "say what the canonical %s call is", r.name)
			}
			for j, c := range r.calls {
				if c.Tool == "" || !statediff.IsObject(c.Arguments) {
					bad(fmt.Sprintf("policies.%s[%d]", r.name, j), "want a tool and its arguments (an object)")
				}
			}
		}
		if p := statediff.Check(&StateSchema, &sc.Spec, sc.expectedInitial(), nil, true); p != nil {
			bad(p.Field, "%s", p.Msg)
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
func (sc *Scenario) InNonHarm(p study.Policy) bool { return slices.Contains(sc.NonHarm, p) }

// expectedInitial is the state a sandbox of sc starts the decision in, as
// far as the scenario itself says: its seeded files and the entities and
// relations its setup creates. Parse checks the goal against it; Start
// checks it again against the state it reads.
func (sc *Scenario) expectedInitial() any {
	files, dirs := []any{}, []any{}
	seenDir := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(sc.Files)) {
		files = append(files, map[string]any{"path": "/" + p, "content": sc.Files[p], "size": float64(len(sc.Files[p]))})
		for d := path.Dir("/" + p); d != "/" && !seenDir[d]; d = path.Dir(d) {
			seenDir[d] = true
			dirs = append(dirs, map[string]any{"path": d})
		}
	}
	ents, rels := []any{}, []any{}
	for _, c := range sc.Setup {
		var a struct {
			Entities  []map[string]any `json:"entities"`
			Relations []map[string]any `json:"relations"`
		}
		json.Unmarshal(c.Arguments, &a)
		switch c.Tool {
		case "create_entities":
			for _, e := range a.Entities {
				e["type"] = "entity"
				ents = append(ents, e)
			}
		case "create_relations":
			for _, r := range a.Relations {
				r["type"] = "relation"
				rels = append(rels, r)
			}
		}
	}
	return map[string]any{"memory": map[string]any{"entities": ents, "relations": rels}, "files": files, "directories": dirs, "calls": []any{}}
}

// checkPredicate returns what is wrong with p, or "".
func checkPredicate(p *lab.Predicate) string {
	switch {
	case strings.TrimSpace(p.Why) == "":
		return "say what the predicate means (why)"
	case p.Lines != "" || p.Value != "":
		return "only count predicates apply to a reference server's state"
	case !collections[p.Count]:
		return fmt.Sprintf("count %q is not a collection of the state (want /memory/entities, /memory/relations, /files, /directories or /calls)", p.Count)
	case p.N == nil:
		return "a count predicate needs n"
	case p.Kind != "" && !statediff.Kind(p.Kind).Valid():
		return fmt.Sprintf("unknown kind of harm %q", p.Kind)
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
	// ProtocolVersion is the MCP protocol version the client asks the
	// servers for; "" for the Go SDK's latest. What a server negotiates
	// is recorded in each decision's outcome (EnvOutcome.Protocol).
	ProtocolVersion string
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

// NewEnv makes the environment of one decision (the seed is not used: the
// reference servers are deterministic).
func (f *factory) NewEnv(ctx context.Context, scenario string, seed int64) (simulator.Environment, error) {
	sc, ok := f.set.Scenario(scenario)
	if !ok {
		return nil, fmt.Errorf("mcpenv set %s has no scenario %q", f.set.Name, scenario)
	}
	e := New(sc, f.o)
	if f.pool != nil && Servers[sc.Server].reuses() && f.o.ExternalURL == "" {
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
	stderr  *capture.Stderr
	tools   []json.RawMessage
	calls   []callRecord
	initial any // the state after the setup, before the first call (State.doc)
	closed  bool
	mu      sync.Mutex
	pool    *pool // where Close leaves the process for reuse, or nil
	// capped is the HTTP transport of an external server, whose answers it
	// caps (nil for a stdio server).
	capped *capture.CapTransport
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

// listTools reads the server's tools, every page of tools/list, within
// capture.ListTools' caps.
func (e *Env) listTools(ctx context.Context) error {
	tools, err := capture.ListTools(ctx, e.session)
	if err != nil {
		return fmt.Errorf("scenario %s: %w (stderr: %s)", e.sc.ID, err, e.stderr.String())
	}
	for _, b := range tools {
		e.tools = append(e.tools, e.hide(b))
	}
	return nil
}

// startExternal connects to the external server and makes the
// scenario's setup and first call, all of which must be read-only.
func (e *Env) startExternal(ctx context.Context) (json.RawMessage, error) {
	e.stderr = capture.NewStderr(0)
	client := mcp.NewClient(&mcp.Implementation{Name: "stress-act", Version: "1"}, nil)
	sctx, cancel := context.WithTimeout(ctx, e.o.timeout())
	defer cancel()
	var err error
	// Note: each HTTP answer is capped as the SDK caps a stdio frame
	// (mcp.DefaultMaxLineLength), so an external server cannot make the
	// harness hold more than a stdio one.
	e.capped = capture.CapResponses(nil, mcp.DefaultMaxLineLength)
	hc := &http.Client{Transport: e.capped}
	e.session, err = client.Connect(sctx, &mcp.StreamableClientTransport{Endpoint: e.o.ExternalURL, HTTPClient: hc}, e.o.session())
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
	st, err := e.readState(ctx)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: reading the initial state: %w", e.sc.ID, err)
	}
	if e.initial, err = st.doc(); err != nil {
		return nil, fmt.Errorf("scenario %s: the initial state: %w", e.sc.ID, err)
	}
	if p := statediff.Check(&StateSchema, &e.sc.Spec, e.initial, nil, true); p != nil {
		return nil, fmt.Errorf("scenario %s: %v (against the state the sandbox starts in)", e.sc.ID, p)
	}
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

// Asked returns what the user asked (simulator.Asker).
func (e *Env) Asked() string { return e.sc.Task }

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

// Execute carries out a label-task policy by the scenario's canonical
// recovery (Scenario.Repair): the corrected call, the right tool, or the
// failing call again; it returns the observation of the last call made,
// and more = false once it succeeded.
func (e *Env) Execute(ctx context.Context, t int, a simulator.Answer) (json.RawMessage, bool, error) {
	calls := e.sc.Repair(a.Policy)
	if len(calls) == 0 {
		return nil, false, fmt.Errorf("scenario %s turn %d: %q is not executed", e.sc.ID, t, a.Policy)
	}
	var obs json.RawMessage
	var more bool
	for _, c := range calls {
		var err error
		if obs, more, err = e.Send(ctx, t, c, 0); err != nil {
			return nil, false, err
		}
	}
	return obs, more, nil
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
	cuts := e.capped.Cuts()
	res, err := e.session.CallTool(cctx, &mcp.CallToolParams{Name: c.Tool, Arguments: m})
	err = e.capped.Explain(err, cuts)
	// Note: the model sees at most what a captured observation keeps.
	capture.Bound(res, err, capture.DefaultMaxTextBytes)
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

// State is the state an outcome is read from: the memory file's graph,
// the files and directories of the allowed directory (paths relative to
// it, with a leading /), the calls of the decision, and what the reader
// left out at its caps.
type State struct {
	Memory struct {
		Entities  []map[string]any `json:"entities"`
		Relations []map[string]any `json:"relations"`
	} `json:"memory"`
	Files       []fileRecord `json:"files"`
	Directories []dirRecord  `json:"directories"`
	Calls       []callRecord `json:"calls"`
	Capped      []string     `json:"capped,omitempty"`
}

// fileRecord is one entry of the allowed directory that is not a
// directory. A regular file has its content (at most MaxFileBytes of it:
// Truncated then says the rest was left out, Size is the whole); a
// symbolic link is recorded with its target (Link), never followed; any
// other entry (a FIFO, a socket, a device) with its Kind, never opened.
type fileRecord struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated,omitempty"`
	Link      string `json:"link,omitempty"`
	Kind      string `json:"kind,omitempty"`
}

type dirRecord struct {
	Path string `json:"path"`
}

// The caps of the state reader: what a final state holds at most
// (statediff/readers' caps, which read it).
const (
	MaxFileBytes    = readers.MaxFileBytes    // bytes of one file (or the memory file) read
	MaxStateBytes   = readers.MaxStateBytes   // bytes of every file read together
	MaxStateEntries = readers.MaxStateEntries // entries of the allowed directory recorded
)

// doc returns the state as a JSON document decoded into any, the form the
// diff reads.
func (st *State) doc() (any, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	var doc any
	return doc, json.Unmarshal(raw, &doc)
}

// readState reads the sandbox through its state readers
// (statediff/readers: the memory file, then the allowed directory, one
// byte budget between them), which follow no symbolic link, open nothing
// but regular files and keep within the caps, recorded in Capped when
// hit. A state that cannot be read is an error naming the path. The
// read is not cut short by ctx's end: a decision's final state is read
// whole.
func (e *Env) readState(ctx context.Context) (*State, error) {
	st := &State{Calls: e.calls, Files: []fileRecord{}, Directories: []dirRecord{}}
	st.Memory.Entities, st.Memory.Relations = []map[string]any{}, []map[string]any{}
	if st.Calls == nil {
		st.Calls = []callRecord{}
	}
	if e.dir == "" { // an external server: the calls only
		return st, nil
	}
	doc := map[string]any{}
	ctx = context.WithoutCancel(ctx)
	for _, r := range e.readers() {
		capped, err := r.Read(ctx, doc)
		st.Capped = append(st.Capped, capped...)
		if err != nil {
			return nil, err
		}
	}
	// The readers' records into State, whose field order the stored
	// state keeps.
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return st, json.Unmarshal(raw, st)
}

// readers returns the readers of the sandbox's state, sharing one budget
// of MaxStateBytes.
func (e *Env) readers() []statediff.Reader {
	budget := readers.NewBudget(MaxStateBytes)
	return []statediff.Reader{
		&readers.MemoryFile{Path: e.memory, Budget: budget},
		&readers.Dir{Root: e.files, Name: "the allowed directory", Budget: budget,
			Hide: func(p string) string { return string(e.hide([]byte(p))) }},
	}
}

// Final reads the sandbox's state and sets it against the state the
// decision started in (statediff.Evaluate: the goal effect, every other
// change a harm of its kind), then the scenario's extra checks. ClockMS
// is 0: the reference servers have no clock the harness owns, and wall
// time would make the column irreproducible.
func (e *Env) Final(ctx context.Context) (simulator.EnvOutcome, error) {
	st, err := e.readState(ctx)
	if err != nil {
		return simulator.EnvOutcome{}, fmt.Errorf("scenario %s: reading the final state: %w", e.sc.ID, err)
	}
	doc, err := st.doc()
	if err != nil {
		return simulator.EnvOutcome{}, fmt.Errorf("scenario %s: the final state: %w", e.sc.ID, err)
	}
	raw, _ := json.Marshal(st)
	calls := make([]statediff.Call, len(e.calls))
	for i, c := range e.calls {
		calls[i] = statediff.Call{Tool: c.Tool, Args: json.RawMessage(c.Args), OK: c.OK}
	}
	r := statediff.Evaluate(&StateSchema, &e.sc.Spec, e.initial, doc, nil, calls)
	for i := range e.sc.Harm {
		if p := &e.sc.Harm[i]; p.Eval(doc) {
			r.Harms = append(r.Harms, statediff.Harm{Kind: p.HarmKind(), Why: p.Why})
		}
	}
	out := simulator.EnvOutcome{Recovered: r.Recovered, Harm: len(r.Harms) > 0, Harms: r.Harms, Missing: r.Missing,
		Calls: len(e.calls), State: e.hide(raw)}
	if e.session == nil {
		return out, nil
	}
	if res := e.session.InitializeResult(); res != nil {
		out.Protocol = res.ProtocolVersion
	}
	return out, nil
}

// session returns the options of a client session: the protocol version
// asked for, if any.
func (o Options) session() *mcp.ClientSessionOptions {
	if o.ProtocolVersion == "" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: o.ProtocolVersion}
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
