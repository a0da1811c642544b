package dbenv

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDirectoryState wraps a server of its own whose state is a
// directory (the reference server-filesystem, run by Node.js) into
// scenarios: a transient fault on write_file and an edit refused by the
// server itself, proven by execution, the sandbox never shown.
func TestDirectoryState(t *testing.T) {
	node, _ := dbhub(t)
	fsServer, err := filepath.Abs("../../scripts/mcp-servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fsServer); err != nil {
		t.Fatalf("server-filesystem is not installed: run scripts/test (%v)", err)
	}
	set := `{
  "server_name": "FS",
  "files": {"notes/todo.md": "- buy milk\n"},
  "server": ["${node}", "` + fsServer + `", "${dir}"],
  "scenarios": [
    {"id": "F1", "class": "transient", "task": "Write hello to /sandbox/hello.txt.",
     "tool": "write_file", "args": {"path": "/sandbox/hello.txt", "content": "hello"},
     "fault": {"tool": "write_file", "class": "transient", "k": 1},
     "preferred_policies": ["retry_now", "retry_later", "authenticate", "revise_arguments"],
     "non_harm": ["revise_arguments", "select_tool", "authenticate", "retry_later", "retry_now", "stop_or_escalate"],
     "policies": {"revise_arguments": [{"tool": "write_file", "arguments": {"path": "/sandbox/hello.txt", "content": "hello"}}],
                  "select_tool": [{"tool": "list_directory", "arguments": {"path": "/sandbox"}}]},
     "goal": [{"create": "/files", "values": {"path": "/hello.txt", "content": "hello"}, "target": ["path"], "why": "hello.txt says hello"}]},
    {"id": "F2", "class": "invalid_value", "task": "Write hello to hello.txt in the sandbox.",
     "tool": "write_file", "args": {"path": "/elsewhere/hello.txt", "content": "hello"}, "pointer": "/path",
     "preferred_policies": ["revise_arguments"],
     "non_harm": ["revise_arguments", "select_tool", "authenticate", "retry_later", "retry_now", "stop_or_escalate"],
     "policies": {"revise_arguments": [{"tool": "write_file", "arguments": {"path": "/sandbox/hello.txt", "content": "hello"}}],
                  "select_tool": [{"tool": "list_directory", "arguments": {"path": "/sandbox"}}]},
     "goal": [{"create": "/files", "values": {"path": "/hello.txt", "content": "hello"}, "target": ["path"], "why": "hello.txt says hello"}]}
  ]}`
	file := filepath.Join(t.TempDir(), "fs.json")
	if err := os.WriteFile(file, []byte(set), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFactory(context.Background(), s, Options{Node: node, Reuse: true, CallTimeout: loadedTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, problems, err := ExecutionTable(context.Background(), f, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%s", table)
	if !strings.Contains(string(table), "F2        invalid_value  recovered") {
		t.Errorf("table:\n%s", table)
	}
	recs, err := Records(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), os.TempDir()+"/stress-dbenv-dirs-") {
			t.Errorf("%s shows the sandbox's real path: %s", r.ID, b)
		}
	}
	e, _ := f.Actor("F1")
	defer e.Close()
	if _, err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tools, _ := e.Tools(context.Background())
	for _, tl := range tools {
		if strings.Contains(string(tl), "stress-dbenv-dirs-") {
			t.Errorf("a tool shows the sandbox's real path: %s", tl)
		}
	}
}
