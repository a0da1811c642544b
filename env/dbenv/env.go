package dbenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/capture"
	"github.com/mcpstress/stress/env/proxy"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/models/transport"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/statediff/readers"
	"github.com/mcpstress/stress/study"
)

// Options configure the environments of a set.
type Options struct {
	// Engine is sqlite (the default) or postgres.
	Engine string
	// Node is the Node.js (22.5 or later) that runs DBHub; DBHub is its
	// script (dist/index.js). FindDBHub finds both.
	Node, DBHub string
	// Postgres configures the cluster the postgres engine starts.
	Postgres PostgresOptions
	// CallTimeout bounds each call and the server's start; 0 for 20 s.
	CallTimeout time.Duration
	// ProtocolVersion is the MCP protocol version the client asks for;
	// "" for the Go SDK's latest.
	ProtocolVersion string
	// Reuse keeps a server and its database for the next decision, the
	// database reset to the seeded rows in place (TestReuseEquivalent
	// proves the reset equivalent to a fresh database), instead of
	// starting both anew.
	Reuse bool
}

func (o *Options) timeout() time.Duration {
	if o.CallTimeout > 0 {
		return o.CallTimeout
	}
	return 20 * time.Second
}

// Factory makes the environments of a set's decisions; it implements
// simulator.EnvFactory. Close removes its databases and stops the
// servers it kept.
type Factory struct {
	set    *Set
	o      Options
	engine engine
	mu     sync.Mutex
	idle   []*server
	schema string // the seeded database's schema fingerprint
}

// NewFactory seeds the set's template database on o's engine.
func NewFactory(ctx context.Context, set *Set, o Options) (*Factory, error) {
	var e engine
	var err error
	switch {
	case set.Files != nil && o.Engine == Postgres:
		return nil, fmt.Errorf("scenario set %s keeps its state in a directory, not a database: database postgres does not apply", set.Name)
	case set.Files != nil:
		e, err = newDir(set)
	case o.Engine == "" || o.Engine == SQLite:
		e, err = newSQLite(ctx, set)
	case o.Engine == Postgres:
		e, err = newPostgres(ctx, set, o.Postgres)
	default:
		return nil, fmt.Errorf("unknown database engine %q (want sqlite or postgres)", o.Engine)
	}
	if err != nil {
		return nil, err
	}
	f := &Factory{set: set, o: o, engine: e}
	if err := f.checkGoals(ctx); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkGoals checks every scenario's goal against the seeded state (the
// records it updates or removes exist, its values name real columns):
// errors name the set and the scenario.
func (f *Factory) checkGoals(ctx context.Context) error {
	db, err := f.engine.create(ctx)
	if err != nil {
		return fmt.Errorf("scenario set %s: making a database: %w", f.set.Name, err)
	}
	defer db.drop()
	if f.schema, err = f.engine.schema(ctx, db); err != nil {
		return fmt.Errorf("scenario set %s: reading the seeded schema: %w", f.set.Name, err)
	}
	doc, _, err := f.readStore(ctx, db, nil)
	if err != nil {
		return fmt.Errorf("scenario set %s: reading the seeded state: %w", f.set.Name, err)
	}
	doc["calls"] = []any{}
	var errs []error
	for _, sc := range f.set.Scenarios {
		if p := statediff.Check(&f.set.schema, &sc.Spec, any(doc), nil, true); p != nil {
			errs = append(errs, fmt.Errorf("scenario set %s: scenario %s: field %s: %s (against the seeded database)", f.set.Name, sc.ID, p.Field, p.Msg))
		}
	}
	return errors.Join(errs...)
}

// Close stops the kept servers and removes every database.
func (f *Factory) Close() error {
	f.mu.Lock()
	idle := f.idle
	f.idle = nil
	f.mu.Unlock()
	var err error
	for _, s := range idle {
		err = errors.Join(err, s.stop())
	}
	return errors.Join(err, f.engine.close())
}

// NewEnv makes the environment of one decision (the seed is not used:
// the faults are deterministic on the scenario's clock).
func (f *Factory) NewEnv(ctx context.Context, scenario string, seed int64) (simulator.Environment, error) {
	return f.Actor(scenario)
}

// Actor returns the environment of scenario id, not started.
func (f *Factory) Actor(id string) (*Env, error) {
	sc, ok := f.set.Scenario(id)
	if !ok {
		return nil, fmt.Errorf("dbenv set %s has no scenario %q", f.set.Name, id)
	}
	return &Env{f: f, sc: sc}, nil
}

// server is a running MCP server with its database and the proxy in
// front of it.
type server struct {
	db      *database
	dir     string // its configuration
	session *mcp.ClientSession
	stderr  *capture.Stderr
	tools   []json.RawMessage
	in      *proxy.Injector // the proxy's; a kept server's is reset per decision
}

func (s *server) stop() error {
	if s.session != nil {
		s.session.Close()
	}
	err := s.db.drop()
	return errors.Join(err, os.RemoveAll(s.dir))
}

// start starts a server on a fresh database, behind a proxy applying in.
func (f *Factory) start(ctx context.Context, in *proxy.Injector) (*server, error) {
	db, err := f.engine.create(ctx)
	if err != nil {
		return nil, fmt.Errorf("making the database: %w", err)
	}
	s := &server{db: db, stderr: capture.NewStderr(4096), in: in}
	if s.dir, err = os.MkdirTemp("", "stress-dbhub-"); err != nil {
		db.drop()
		return nil, err
	}
	cmd, err := f.command(s)
	if err != nil {
		s.stop()
		return nil, err
	}
	cmd.Stderr = s.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "stress-act", Version: "1"}, nil)
	sctx, cancel := context.WithTimeout(ctx, f.o.timeout())
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if f.o.ProtocolVersion != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: f.o.ProtocolVersion}
	}
	if s.session, err = client.Connect(sctx, proxy.Command(cmd, in), opts); err != nil {
		s.stop()
		return nil, fmt.Errorf("starting the database server %s: %w (stderr: %s)", cmd.Path, err, f.scrub(s.stderr.String()))
	}
	if s.tools, err = capture.ListTools(sctx, s.session); err != nil {
		s.stop()
		return nil, fmt.Errorf("%w (stderr: %s)", err, f.scrub(s.stderr.String()))
	}
	if s.db.dir != "" {
		for i, b := range s.tools {
			s.tools[i] = bytes.ReplaceAll(b, []byte(s.db.dir), []byte(sandboxName))
		}
	}
	return s, nil
}

// command returns the server's command line: DBHub with the set's tools
// in a configuration file, or the set's own server.
func (f *Factory) command(s *server) (*exec.Cmd, error) {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.dir}
	if len(f.set.Server) > 0 {
		args := make([]string, len(f.set.Server))
		for i, a := range f.set.Server {
			args[i] = strings.NewReplacer("${dsn}", s.db.url, "${db}", s.db.file, "${node}", f.o.Node, "${set}", f.set.dir, "${dir}", s.db.dir).Replace(a)
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = s.dir, env
		return cmd, nil
	}
	config := filepath.Join(s.dir, "dbhub.toml")
	if err := os.WriteFile(config, dbhubConfig(f.set, s.db.url), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(f.o.Node, f.o.DBHub, "--transport", "stdio", "--config", config)
	cmd.Dir, cmd.Env = s.dir, env
	return cmd, nil
}

// scrub removes the database URL's password from text a server wrote.
func (f *Factory) scrub(text string) string {
	pw := f.o.Postgres.secret()
	if pw == "" {
		return text
	}
	out, _ := transport.NewScrubber(pw).String(text)
	return out
}

// take returns a kept server, its database reset, or nil.
func (f *Factory) take() *server {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.idle) == 0 {
		return nil
	}
	s := f.idle[len(f.idle)-1]
	f.idle = f.idle[:len(f.idle)-1]
	return s
}

// Env is the environment of one decision.
type Env struct {
	f       *Factory
	sc      *Scenario
	srv     *server
	in      *proxy.Injector
	clock   time.Duration // the scenario's clock
	calls   []callRecord
	initial any
	wait    time.Duration // the wait the last observation announced
	closed  bool
	owned   bool            // Close closes the factory too (an Actor made alone)
	shape   study.Condition // the error shape every failure is served in ("" for none)
	mu      sync.Mutex
}

// callRecord is one call the harness sent, in the state.
type callRecord struct {
	Seq       int             `json:"seq"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Args      string          `json:"args"` // Arguments as compact JSON with sorted keys
	OK        bool            `json:"ok"`
	Injected  string          `json:"injected,omitempty"` // what the proxy did to it
}

var _ simulator.Actor = (*Env)(nil)

// Start starts (or takes) a server on a fresh database behind the
// scenario's fault, reads the initial state and makes the failing first
// call. A server or database that does not start is an error naming the
// scenario.
func (e *Env) Start(ctx context.Context) (json.RawMessage, error) {
	if e.srv != nil || e.closed {
		return nil, fmt.Errorf("scenario %s: Start called twice", e.sc.ID)
	}
	fault := e.sc.Fault
	if fault == nil {
		fault = &proxy.Fault{} // passes everything through
	}
	clock := func() time.Duration { e.mu.Lock(); defer e.mu.Unlock(); return e.clock }
	if e.f.o.Reuse {
		e.srv = e.f.take()
	}
	if e.srv != nil {
		e.srv.in.Reset(fault, clock)
	} else {
		srv, err := e.f.start(ctx, proxy.NewInjector(fault, clock))
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", e.sc.ID, err)
		}
		e.srv = srv
	}
	e.in = e.srv.in
	st, err := e.readState(ctx)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: reading the initial state: %w", e.sc.ID, err)
	}
	e.initial = st
	if p := statediff.Check(e.f.set.StateSchema(), &e.sc.Spec, e.initial, nil, true); p != nil {
		return nil, fmt.Errorf("scenario %s: %v (against the state the database starts in)", e.sc.ID, p)
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

// Asked returns what the user asked (simulator.Asker).
func (e *Env) Asked() string { return e.sc.Task }

// Tools returns the tools the server listed through the proxy.
func (e *Env) Tools(ctx context.Context) ([]json.RawMessage, error) {
	if e.srv == nil {
		return nil, fmt.Errorf("scenario %s: Tools before Start", e.sc.ID)
	}
	return e.srv.tools, nil
}

// First returns the scenario's failing call.
func (e *Env) First() simulator.ToolCall {
	return simulator.ToolCall{Tool: e.sc.Tool, Arguments: e.sc.Args}
}

// Send waits waitMS on the scenario's clock (simulator.DefaultWait: the
// wait the last observation announced, else simulator.DefaultRetryDelayMS),
// then sends c through the proxy; more is false once a call succeeded.
func (e *Env) Send(ctx context.Context, t int, c simulator.ToolCall, waitMS int64) (json.RawMessage, bool, error) {
	if e.srv == nil {
		return nil, false, fmt.Errorf("scenario %s: Send before Start", e.sc.ID)
	}
	switch {
	case waitMS == simulator.DefaultWait && e.wait > 0:
		e.advance(e.wait)
	case waitMS == simulator.DefaultWait:
		e.advance(simulator.DefaultRetryDelayMS * time.Millisecond)
	case waitMS > 0:
		e.advance(time.Duration(waitMS) * time.Millisecond)
	}
	obs, failed, err := e.call(ctx, c)
	if err != nil {
		return nil, false, fmt.Errorf("scenario %s turn %d: %w", e.sc.ID, t, err)
	}
	return obs, failed, nil
}

func (e *Env) advance(d time.Duration) {
	e.mu.Lock()
	e.clock += d
	e.mu.Unlock()
}

// Execute carries out a label-task policy by the scenario's canonical
// recovery (Scenario.Repair); retry_later waits the answer's delay, else
// the announced wait, else simulator.DefaultRetryDelayMS.
func (e *Env) Execute(ctx context.Context, t int, a simulator.Answer) (json.RawMessage, bool, error) {
	calls := e.sc.Repair(a.Policy)
	if len(calls) == 0 {
		return nil, false, fmt.Errorf("scenario %s turn %d: %q is not executed", e.sc.ID, t, a.Policy)
	}
	var obs json.RawMessage
	var more bool
	for i, c := range calls {
		wait := int64(0)
		if i == 0 && a.Policy == study.RetryLater {
			wait = simulator.DefaultWait
			if a.DelayMS > 0 {
				wait = a.DelayMS
			}
		}
		var err error
		if obs, more, err = e.Send(ctx, t, c, wait); err != nil {
			return nil, false, err
		}
	}
	return obs, more, nil
}

// call sends one tools/call; failed says it did not complete successfully
// (an error, an isError result, or an answer the proxy made up: a silent
// no-op is a failure however it looks).
func (e *Env) call(ctx context.Context, c simulator.ToolCall) (json.RawMessage, bool, error) {
	args := []byte(c.Arguments)
	if d := e.srv.db.dir; d != "" {
		args = bytes.ReplaceAll(args, []byte(sandboxName), []byte(d))
	}
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, false, fmt.Errorf("arguments of %s: %w", c.Tool, err)
	}
	before := len(e.in.Calls())
	cctx, cancel := context.WithTimeout(ctx, e.f.o.timeout())
	defer cancel()
	res, err := e.srv.session.CallTool(cctx, &mcp.CallToolParams{Name: c.Tool, Arguments: m})
	if err != nil && cctx.Err() != nil {
		// Note: the harness's own deadline is not the server's answer; a
		// loaded machine would otherwise change an outcome.
		return nil, false, fmt.Errorf("%s: no answer within the environment's deadline of %s (env_timeout); the decision is an error, not an observation", c.Tool, e.f.o.timeout())
	}
	capture.Bound(res, err, capture.DefaultMaxTextBytes)
	if proxy.IsServerGone(err) {
		return nil, false, fmt.Errorf("%s: the database server died: %v (server stderr: %s)", c.Tool, err, e.f.scrub(e.srv.stderr.String()))
	}
	obs, oerr := lab.Observe(res, err)
	if oerr != nil {
		return nil, false, fmt.Errorf("%s: %w (server stderr: %s)", c.Tool, oerr, e.f.scrub(e.srv.stderr.String()))
	}
	injected := ""
	if calls := e.in.Calls(); len(calls) > before {
		injected = calls[len(calls)-1].Injected // a lost answer moved the injector's clock (Advanced)
	}
	failed := err != nil || res == nil || res.IsError || injected != ""
	canon, _ := json.Marshal(m)
	e.calls = append(e.calls, callRecord{Seq: len(e.calls) + 1, Tool: c.Tool, Arguments: c.Arguments, Args: string(e.hide(canon)), OK: !failed, Injected: injected})
	obs = e.hide(obs)
	if e.shape != "" && failed {
		if obs, err = e.reshape(obs, c, injected); err != nil {
			return nil, false, fmt.Errorf("%s: serving the failure in shape %s: %w", c.Tool, e.shape, err)
		}
	}
	e.wait, _ = lab.RetryAfter(obs)
	return obs, failed, nil
}

// readState reads the database (or directory) and the calls as the
// document the diff reads.
func (e *Env) readState(ctx context.Context) (map[string]any, error) {
	doc, capped, err := e.f.readStore(ctx, e.srv.db, func(p string) string { return string(e.hide([]byte(p))) })
	if err != nil {
		return nil, err
	}
	return e.withCalls(doc, capped)
}

// readStore reads the state of db: a directory's files and directories
// (hide shows a path outside), or the declared tables. A table a
// decision dropped (execute_sql takes any SQL) reads as empty, its rows
// lost; any other failure is the error.
func (f *Factory) readStore(ctx context.Context, db *database, hide func(string) string) (map[string]any, []string, error) {
	doc := map[string]any{}
	if db.dir != "" {
		capped, err := (&readers.Dir{Root: db.dir, Name: "the sandbox", Hide: hide}).Read(ctx, doc)
		return doc, capped, err
	}
	tables := f.set.readerTables()
	capped, err := (&readers.SQL{DB: db.db, Tables: tables}).Read(ctx, doc)
	if err == nil {
		return doc, capped, nil
	}
	var present []readers.Table
	var gone []string
	for _, t := range tables {
		ok, herr := f.engine.hasTable(ctx, db, t.Name)
		if herr != nil {
			return nil, nil, err
		}
		if ok {
			present = append(present, t)
		} else {
			gone = append(gone, t.Name)
		}
	}
	if len(gone) == 0 {
		return nil, nil, err
	}
	doc = map[string]any{}
	if capped, err = (&readers.SQL{DB: db.db, Tables: present}).Read(ctx, doc); err != nil {
		return nil, nil, err
	}
	all, _ := doc["tables"].(map[string]any)
	if all == nil {
		all = map[string]any{}
		doc["tables"] = all
	}
	for _, name := range gone {
		all[name] = []any{}
		capped = append(capped, fmt.Sprintf("table %s no longer exists: read as empty", name))
	}
	return doc, capped, nil
}

// withCalls adds the calls and what the readers left out to doc.
func (e *Env) withCalls(doc map[string]any, capped []string) (map[string]any, error) {
	raw, err := json.Marshal(e.calls)
	if err != nil {
		return nil, err
	}
	var calls any = []any{}
	if len(e.calls) > 0 {
		if err := json.Unmarshal(raw, &calls); err != nil {
			return nil, err
		}
	}
	doc["calls"] = calls
	if len(capped) > 0 {
		doc["capped"] = capped
	}
	return doc, nil
}

// hide shows a directory state's real path as sandboxName.
func (e *Env) hide(b []byte) []byte {
	if e.srv == nil || e.srv.db.dir == "" {
		return b
	}
	return bytes.ReplaceAll(b, []byte(e.srv.db.dir), []byte(sandboxName))
}

// readerTables are the set's tables as the SQL reader reads them: the
// ignored columns are not read at all, so a timestamp the database
// stamps (updated_at) reaches neither the diff nor the stored state, and
// a decision's outcome is the same on every run.
func (s *Set) readerTables() []readers.Table {
	out := make([]readers.Table, len(s.Tables))
	for i, t := range s.Tables {
		cols := slices.DeleteFunc(slices.Clone(t.Fields), func(c string) bool { return slices.Contains(t.Ignore, c) })
		out[i] = readers.Table{Name: t.Name, Key: t.Key, Columns: cols}
	}
	return out
}

// Final reads the database and sets it against the state the decision
// started in. ClockMS is the scenario's clock.
func (e *Env) Final(ctx context.Context) (simulator.EnvOutcome, error) {
	if e.srv == nil {
		return simulator.EnvOutcome{}, fmt.Errorf("scenario %s: Final before Start", e.sc.ID)
	}
	doc, err := e.readState(ctx)
	if err != nil {
		return simulator.EnvOutcome{}, fmt.Errorf("scenario %s: reading the final state: %w", e.sc.ID, err)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return simulator.EnvOutcome{}, err
	}
	calls := make([]statediff.Call, len(e.calls))
	for i, c := range e.calls {
		calls[i] = statediff.Call{Tool: c.Tool, Args: json.RawMessage(c.Args), OK: c.OK}
	}
	r := statediff.Evaluate(e.f.set.StateSchema(), &e.sc.Spec, e.initial, doc, nil, calls)
	e.mu.Lock()
	clock := e.clock + e.in.Advanced()
	e.mu.Unlock()
	out := simulator.EnvOutcome{Recovered: r.Recovered, Harm: len(r.Harms) > 0, Harms: r.Harms, Missing: r.Missing,
		Calls: len(e.calls), ClockMS: clock.Milliseconds(), State: raw, Compact: true}
	if res := e.srv.session.InitializeResult(); res != nil {
		out.Protocol = res.ProtocolVersion
	}
	return out, nil
}

// Close gives the server back for reuse, its database reset (or stops it
// and removes the database when it cannot be reset or reuse is off).
func (e *Env) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.srv == nil {
		if e.owned {
			return e.f.Close()
		}
		return nil
	}
	if e.f.o.Reuse && e.release() {
		return nil
	}
	err := e.srv.stop()
	if e.owned {
		err = errors.Join(err, e.f.Close())
	}
	return err
}

// release resets the database and keeps the server; false when the
// server does not answer a ping (an error answer will do), the decision
// changed the schema, or the reset fails.
func (e *Env) release() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.session.Ping(ctx, nil); err != nil {
		// Note: DBHub answers ping with "Method not found": an answer is
		// all a liveness check needs.
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || proxy.IsServerGone(err) {
			return false
		}
	}
	if fp, err := e.f.engine.schema(ctx, e.srv.db); err != nil || fp != e.f.schema {
		return false
	}
	if e.f.engine.reset(ctx, e.srv.db) != nil {
		return false
	}
	e.srv.stderr.Reset()
	e.f.mu.Lock()
	e.f.idle = append(e.f.idle, e.srv)
	e.f.mu.Unlock()
	return true
}
