package mcpenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/capture"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/statediff/readers"
)

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
	if p := statediff.Check(&stateSchema, &e.sc.Spec, e.initial, nil, true); p != nil {
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
func (e *Env) First() simulator.ToolCall { return e.sc.First() }

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
		args = bytes.ReplaceAll(args, []byte(sandboxName), []byte(e.dir))
	}
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, false, fmt.Errorf("arguments of %s: %w", c.Tool, err)
	}
	cctx, cancel := context.WithTimeout(ctx, e.o.timeout())
	defer cancel()
	cuts := e.capped.Cuts()
	res, err := e.session.CallTool(cctx, &mcp.CallToolParams{Name: c.Tool, Arguments: m})
	if err != nil && cctx.Err() != nil {
		// Note: the harness's own deadline is not the server's answer; a
		// loaded machine would otherwise change an outcome.
		return nil, false, fmt.Errorf("%s: no answer within the environment's deadline of %s (env_timeout); the decision is an error, not an observation", c.Tool, e.o.timeout())
	}
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

// hide shows the sandbox as sandboxName.
func (e *Env) hide(b []byte) json.RawMessage {
	if e.dir == "" {
		return b
	}
	return bytes.ReplaceAll(b, []byte(e.dir), []byte(sandboxName))
}

// sandboxState is the state an outcome is read from: the memory file's graph,
// the files and directories of the allowed directory (paths relative to
// it, with a leading /), the calls of the decision, and what the reader
// left out at its caps.
type sandboxState struct {
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
// directory. A regular file has its content (at most maxFileBytes of it:
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
	maxFileBytes    = readers.MaxFileBytes    // bytes of one file (or the memory file) read
	maxStateBytes   = readers.MaxStateBytes   // bytes of every file read together
	maxStateEntries = readers.MaxStateEntries // entries of the allowed directory recorded
)

// doc returns the state as a JSON document decoded into any, the form the
// diff reads.
func (st *sandboxState) doc() (any, error) {
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
func (e *Env) readState(ctx context.Context) (*sandboxState, error) {
	st := &sandboxState{Calls: e.calls, Files: []fileRecord{}, Directories: []dirRecord{}}
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
// of maxStateBytes.
func (e *Env) readers() []statediff.Reader {
	budget := readers.NewBudget(maxStateBytes)
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
	r := statediff.Evaluate(&stateSchema, &e.sc.Spec, e.initial, doc, nil, calls)
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
