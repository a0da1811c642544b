package mcpenv

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/statediff"
)

// modules returns the reference servers' directory, failing the test
// with an install hint when they are missing.
// reusingFactory returns the servers' modules, the built-in set and a
// factory of it that reuses processes, closed when the test ends.
func reusingFactory(t testing.TB) (string, *Set, simulator.EnvFactory) {
	t.Helper()
	mods := modules(t)
	set, err := BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	f := Factory(set, Options{Modules: mods, Reuse: true, CallTimeout: loadedTimeout})
	t.Cleanup(func() { f.(io.Closer).Close() })
	return mods, set, f
}

func modules(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: install Node.js, then run scripts/test")
	}
	dir, err := filepath.Abs("../../scripts/mcp-servers/node_modules/@modelcontextprotocol")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Servers {
		if _, err := os.Stat(filepath.Join(dir, s.Package, "dist", "index.js")); err != nil {
			t.Fatalf("reference MCP server %s is not installed: run scripts/test, or (cd scripts/mcp-servers && npm ci --ignore-scripts)", s.Package)
		}
	}
	return dir
}

// good are calls that do each scenario's task.
var good = map[string]string{
	"R01": `create_entities {"entities":[{"name":"Alice","entityType":"person","observations":["works at Acme"]}]}`,
	"R02": `create_entities {"entities":[{"name":"Bob","entityType":"person","observations":["likes tea"]}]}`,
	"R03": `create_entities {"entities":[{"name":"Carol","entityType":"person","observations":["plays chess"]}]}`,
	"R04": `add_observations {"observations":[{"entityName":"Dana","contents":["met us at the conference"]}]}`,
	"R05": `create_relations {"relations":[{"from":"Alice","to":"Acme","relationType":"works_at"}]}`,
	"R06": `open_nodes {"names":["Alice"]}`,
	"R07": `search_nodes {"query":"tea"}`,
	"R08": `write_file {"path":"/sandbox/files/notes/todo.md","content":"buy milk"}`,
	"R09": `write_file {"path":"/sandbox/files/notes/todo.md","content":"call Ana"}`,
	"R10": `write_file {"path":"/sandbox/files/notes/plan.md","content":"ship v2"}`,
	"R11": `read_text_file {"path":"/sandbox/files/notes/readme.md","head":1}`,
	"R12": `read_text_file {"path":"/sandbox/files/notes/readme.md","head":1}`,
	"R13": `list_directory {"path":"/sandbox/files/notes"}`,
	"R14": `create_directory {"path":"/sandbox/files/archive"}`,
	"R15": `get-sum {"a":2,"b":3}`,
	"R16": `get-sum {"a":4,"b":5}`,
	"R17": `get-sum {"a":6,"b":7}`,
	"R18": `get-structured-content {"location":"Chicago"}`,
	"R19": `echo {"message":"hello"}`,
	"R20": `echo {"message":"hello"}`,
}

// TestScenarios starts every scenario's server in its sandbox: the first
// call fails, no tool path shows the real sandbox, the good call
// recovers without harm, and replaying the failing call neither recovers
// nor leaves anything in the state but the calls.
func TestScenarios(t *testing.T) {
	mods := modules(t)
	set, err := BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Scenarios) < 20 || len(good) != len(set.Scenarios) {
		t.Fatalf("%d scenarios, %d good calls", len(set.Scenarios), len(good))
	}
	ctx := context.Background()
	for _, sc := range set.Scenarios {
		t.Run(sc.ID, func(t *testing.T) {
			t.Parallel()
			e := New(sc, Options{Modules: mods, CallTimeout: loadedTimeout})
			defer e.Close()
			obs, err := e.Start(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(obs), os.TempDir()) {
				t.Errorf("the observation shows the sandbox: %s", obs)
			}
			tools, _ := e.Tools(ctx)
			tb, err := simulator.NewToolbox(tools)
			if err != nil {
				t.Fatal(err)
			}
			tool, args, _ := strings.Cut(good[sc.ID], " ")
			c := simulator.ToolCall{Tool: tool, Arguments: json.RawMessage(args)}
			if r, d := tb.Check(c); r != "" {
				t.Fatalf("the good call fails the client's check: %s %s", r, d)
			}
			got, more, err := e.Send(ctx, 0, c, 0)
			if err != nil || more {
				t.Fatalf("good call: %s more %v err %v", got, more, err)
			}
			o, err := e.Final(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !o.Recovered || o.Harm || o.Calls != 2 {
				t.Errorf("outcome %+v\nstate %s", o, o.State)
			}
			dir := e.dir
			if err := e.Close(); err != nil {
				t.Error(err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the sandbox %s is still there", dir)
			}
		})
	}
}

// TestBadScenarios: a set is refused at load time, naming the file, the
// scenario and the field.
func TestBadScenarios(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"scenarios":[{"id":"Z1","server":"nope","class":"invalid_type","task":"t","tool":"x","args":{},"preferred_policies":["revise_arguments"],"non_harm":["revise_arguments","stop_or_escalate"],"policies":{"revise_arguments":[{"tool":"x","arguments":{}}],"select_tool":[{"tool":"y","arguments":{}}]},"goal":[{"call":"x","why":"w"}]}]}`, "scenario 1 (Z1): field server"},
		{`{"scenarios":[{"id":"Z1","server":"memory","class":"fault","task":"t","tool":"x","args":{},"preferred_policies":["revise_arguments"],"non_harm":["revise_arguments","stop_or_escalate"],"policies":{"revise_arguments":[{"tool":"x","arguments":{}}],"select_tool":[{"tool":"y","arguments":{}}]},"goal":[{"call":"x","why":"w"}]}]}`, "field class"},
		{`{"scenarios":[{"id":"Z1","server":"memory","class":"invalid_type","task":"t","tool":"x","args":[],"preferred_policies":["revise_arguments"],"non_harm":["revise_arguments","stop_or_escalate"],"policies":{"revise_arguments":[{"tool":"x","arguments":{}}],"select_tool":[{"tool":"y","arguments":{}}]},"goal":[{"call":"x","why":"w"}]}]}`, "field args"},
		{`{"scenarios":[{"id":"Z1","server":"memory","class":"invalid_type","task":"t","tool":"x","args":{},"preferred_policies":["revise_arguments"],"non_harm":["revise_arguments","stop_or_escalate"],"policies":{"revise_arguments":[{"tool":"x","arguments":{}}],"select_tool":[{"tool":"y","arguments":{}}]},"goal":[{"create":"/nowhere","values":{"a":1},"why":"w"}]}]}`, "field goal[0].create"},
		{`{"scenarios":[{"id":"Z1","server":"memory","class":"invalid_type","task":"t","tool":"x","args":{},"preferred_policies":["revise_arguments"],"non_harm":["revise_arguments","stop_or_escalate"],"policies":{"revise_arguments":[{"tool":"x","arguments":{}}],"select_tool":[{"tool":"y","arguments":{}}]},"goal":[{"update":"/memory/entities","key":"Zed","values":{"entityType":"p"},"why":"w"}]}]}`, "field goal[0].key: the initial state has no record \"Zed\""},
		{`{"scenarios":[{"id":"Z1","server":"memory","class":"invalid_type","task":"t","tool":"x","args":{},"preferred_policies":["revise_arguments"],"non_harm":["revise_arguments","stop_or_escalate"],"policies":{"revise_arguments":[{"tool":"x","arguments":{}}],"select_tool":[{"tool":"y","arguments":{}}]},"goal":[{"call":"x","why":"w"}],"harm":[{"count":"/calls","n":0,"op":"gt","why":"w","kind":"mess"}]}]}`, "field harm[0].kind: unknown kind of harm"},
		{`{"scenarios":[{"id":"Z1","server":"memory","class":"invalid_type","task":"t","tool":"x","args":{},"preferred_policies":["revise_arguments"],"non_harm":["revise_arguments","stop_or_escalate"],"policies":{"revise_arguments":[],"select_tool":[{"tool":"y","arguments":{}}]},"goal":[{"call":"x","why":"w"}]}]}`, "field policies.revise_arguments"},
		{`{"scenarios":[{"id":"Z1","server":"memory","class":"invalid_type","task":"t","tool":"x","args":{},"preferred_policies":["revise_arguments"],"non_harm":["stop_or_escalate"],"policies":{"revise_arguments":[{"tool":"x","arguments":{}}],"select_tool":[{"tool":"y","arguments":{}}]},"goal":[{"call":"x","why":"w"}]}]}`, "field non_harm"},
		{`{"scenarios":[],"extra":1}`, "unknown field"},
		{`{"scenarios":[]} xx`, "f.json: data after the JSON object at byte 16"},
		{`{"scenarios":[]}]]`, "f.json: data after the JSON object at byte 16"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := Parse("f.json", "f", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "f.json") {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestServerFailsToStart: a server that does not start is an error
// naming the command and its stderr.
func TestServerFailsToStart(t *testing.T) {
	set, err := BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	e := New(set.Scenarios[0], Options{Modules: t.TempDir()})
	defer e.Close()
	_, err = e.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "server-memory/dist/index.js") || !strings.Contains(err.Error(), "stderr: ") || !strings.Contains(err.Error(), "Cannot find module") {
		t.Errorf("err %v", err)
	}
}

// TestDeadServer: a server that dies during a decision makes the next
// call an error of the environment (a transport error decision, kept out
// of the counts), within the call deadline, never a hang.
func TestDeadServer(t *testing.T) {
	mods := modules(t)
	set, _ := BuiltinSet("")
	sc, _ := set.Scenario("R15")
	// The deadline bounds the start too, which a loaded machine may take
	// seconds for.
	const deadline = 30 * time.Second
	e := New(sc, Options{Modules: mods, CallTimeout: deadline})
	defer e.Close()
	ctx := context.Background()
	if _, err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err := e.Send(ctx, 0, simulator.ToolCall{Tool: "get-sum", Arguments: json.RawMessage(`{"a":2,"b":3}`)}, 0)
	if err == nil || time.Since(start) > deadline+5*time.Second {
		t.Errorf("send to a dead server: %v after %v", err, time.Since(start))
	}
}

// BenchmarkStart measures the per-decision sandbox start of each
// reference server: temporary directory, Node process, initialize,
// tools/list, the failing call, and Close.
func BenchmarkStart(b *testing.B) {
	mods := modules(b)
	set, _ := BuiltinSet("")
	for _, id := range []string{"R01", "R08", "R15"} {
		sc, _ := set.Scenario(id)
		b.Run(sc.Server, func(b *testing.B) {
			for b.Loop() {
				e := New(sc, Options{Modules: mods, CallTimeout: loadedTimeout})
				if _, err := e.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				e.Close()
			}
		})
	}
}

// BenchmarkSend measures one executed call on a started server-memory
// (the server's own time included).
func BenchmarkSend(b *testing.B) {
	mods := modules(b)
	set, _ := BuiltinSet("")
	sc, _ := set.Scenario("R07")
	e := New(sc, Options{Modules: mods, CallTimeout: loadedTimeout})
	defer e.Close()
	if _, err := e.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	c := simulator.ToolCall{Tool: "search_nodes", Arguments: json.RawMessage(`{"query":"tea"}`)}
	for b.Loop() {
		if _, _, err := e.Send(context.Background(), 0, c, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSafeState: the state reader never follows a symbolic link (one to a
// file outside the sandbox and one to a directory are recorded with their
// targets, no content), never opens a FIFO (no hang), and caps a large
// file (recorded in capped); what it finds is a change like any other.
func TestSafeState(t *testing.T) {
	mods := modules(t)
	set, _ := BuiltinSet("")
	sc, _ := set.Scenario("R08")
	e := New(sc, Options{Modules: mods, CallTimeout: loadedTimeout})
	defer e.Close()
	ctx := context.Background()
	if _, err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(secret, filepath.Join(e.files, "notes", "link.txt")))
	must(os.Symlink(filepath.Dir(secret), filepath.Join(e.files, "dirlink")))
	must(syscall.Mkfifo(filepath.Join(e.files, "pipe"), 0o644))
	must(os.WriteFile(filepath.Join(e.files, "big.bin"), bytes.Repeat([]byte("x"), maxFileBytes+10), 0o644))
	done := make(chan struct{})
	var o simulator.EnvOutcome
	var err error
	go func() { o, err = e.Final(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Final hangs (a FIFO opened?)")
	}
	if err != nil {
		t.Fatal(err)
	}
	state := string(o.State)
	if strings.Contains(state, "TOP SECRET") {
		t.Errorf("the state holds the link target's content: %s", state)
	}
	var st sandboxState
	if err := json.Unmarshal(o.State, &st); err != nil {
		t.Fatal(err)
	}
	got := map[string]fileRecord{}
	for _, f := range st.Files {
		got[f.Path] = f
	}
	if f := got["/notes/link.txt"]; f.Link != secret || f.Content != "" {
		t.Errorf("link to a file: %+v", f)
	}
	if f := got["/dirlink"]; f.Link != filepath.Dir(secret) {
		t.Errorf("link to a directory: %+v", f)
	}
	if f := got["/pipe"]; f.Kind != "fifo" {
		t.Errorf("FIFO: %+v", f)
	}
	if f := got["/big.bin"]; !f.Truncated || f.Size != maxFileBytes+10 || len(f.Content) != maxFileBytes {
		t.Errorf("big file: truncated %v size %d, %d bytes kept", f.Truncated, f.Size, len(f.Content))
	}
	if len(st.Capped) != 1 || !strings.Contains(st.Capped[0], "/big.bin") {
		t.Errorf("capped %q", st.Capped)
	}
	if !o.Harm || o.Recovered {
		t.Errorf("four entries the task did not ask for: outcome %+v", o)
	}
	kinds := statediff.KindsOf(o.Harms)
	if !kinds.Has(statediff.Collateral) {
		t.Errorf("harms %+v", o.Harms)
	}
	// A memory file that is not a regular file cannot be read: an error
	// naming it, never a crash or a silent empty graph.
	os.Remove(e.memory) // R08 writes no memory
	must(os.Symlink(secret, e.memory))
	if _, err := e.Final(ctx); err == nil || !strings.Contains(err.Error(), "memory file") || !strings.Contains(err.Error(), "R08") {
		t.Errorf("a memory file that is a link: %v", err)
	}
}

// loadedTimeout bounds the start and each call of a reference server in
// the tests that expect them to work: a node server's start took over the
// default 20 s on a 2-core machine at load 19.
const loadedTimeout = 2 * time.Minute
