package capture

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/study"
)

// referenceServers returns the directory of the pinned reference MCP
// servers that scripts/test installs, failing the test with an install hint
// when they are missing. root is the repository root.
func referenceServers(t *testing.T, root string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: install Node.js (Debian: apt-get install nodejs npm), then run scripts/test")
	}
	dir, err := filepath.Abs(filepath.Join(root, "scripts", "mcp-servers", "node_modules", "@modelcontextprotocol"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"server-everything", "server-memory", "server-filesystem"} {
		if _, err := os.Stat(filepath.Join(dir, s, "dist", "index.js")); err != nil {
			t.Fatalf("reference MCP server %s is not installed: run scripts/test, or (cd scripts/mcp-servers && npm ci --ignore-scripts)", s)
		}
	}
	return dir
}

// snapshot records every file and directory under root: its mode, size,
// modification time and content hash.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String() + " " + info.ModTime().String()
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			v += " " + hex.EncodeToString(sum[:])
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReferenceServers captures from the real, pinned reference servers
// over stdio and checks the surfaces, the frames, the corpus and that
// nothing changed on the servers' side.
func TestReferenceServers(t *testing.T) {
	mods := referenceServers(t, "..")
	work := t.TempDir()
	cwd := filepath.Join(work, "cwd")       // every server's working directory
	allowed := filepath.Join(work, "files") // the filesystem server's one allowed directory
	memory := filepath.Join(work, "memory", "memory.jsonl")
	for _, d := range []string{cwd, allowed, filepath.Dir(memory)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(allowed, "notes.txt"), []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(memory, []byte(`{"type":"entity","name":"Ada","entityType":"person","observations":["wrote notes"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, work)
	node := func(label, server string, args ...string) Target {
		return Target{Label: label, Dir: cwd, Command: append([]string{"node", filepath.Join(mods, server, "dist", "index.js")}, args...)}
	}
	mem := node("memory", "server-memory")
	mem.Env = []string{"MEMORY_FILE_PATH=" + memory}
	targets := []Target{node("everything", "server-everything"), mem, node("filesystem", "server-filesystem", allowed)}
	// open_nodes claims readOnlyHint true but has no read verb: the
	// explicit -read-only override allows it.
	o := Options{
		Salt: testSalt, Interval: 20 * time.Millisecond, Timeout: 30 * time.Second, ReadOnly: []string{"open_nodes"},
		Sentinels: []SentinelSpec{
			{Tool: "get-resource-reference", Field: "resourceId", Value: []byte("-987654321")},
			{Tool: "open_nodes"}, {Tool: "read_text_file"},
		},
	}
	servers, err := Run(context.Background(), targets, o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[study.Probe]study.Surface{
		"everything": {study.NonexistentTool: study.ToolError, study.WrongType: study.ToolError, study.MissingRequired: study.ToolError, study.Sentinel: study.ToolError},
		"memory":     {study.NonexistentTool: study.ToolError, study.WrongType: study.ToolError, study.MissingRequired: study.ToolError, study.Sentinel: study.Silent},
		"filesystem": {study.NonexistentTool: study.ToolError, study.WrongType: study.ToolError, study.MissingRequired: study.ToolError, study.Sentinel: study.ToolError},
	}
	for _, s := range servers {
		if s.Err != nil {
			t.Fatalf("%s: %v\nstderr: %s", s.Target.Label, s.Err, s.Stderr)
		}
		if s.ProtocolVersion != "2025-11-25" || s.Exit != exitClean {
			t.Errorf("%s: protocol %s, exit %s", s.Target.Label, s.ProtocolVersion, s.Exit)
		}
		w := want[s.Target.Label]
		if len(s.Outcomes) != len(w) {
			t.Errorf("%s: %d probes, want %d (notes %q)", s.Target.Label, len(s.Outcomes), len(w), s.Notes)
		}
		for _, out := range s.Outcomes {
			if out.Request == nil || out.Response == nil {
				for _, f := range s.Frames {
					t.Logf("frame %d %s %.200s", f.Seq, f.Dir, f.Bytes())
				}
				t.Fatalf("%s %s: request or response frame missing (%s)", s.Target.Label, out.Kind, out.Note)
			}
			if out.Surface != w[out.Kind] || out.Wire != w[out.Kind] || out.Status != statusFailure {
				t.Errorf("%s %s %s: surface %s, wire %s, status %s; want %s", s.Target.Label, out.Kind, out.Tool, out.Surface, out.Wire, out.Status, w[out.Kind])
			}
			// TypeScript SDK servers answer an unknown tool and bad
			// arguments with an isError result quoting -32602.
			if out.Kind != study.Sentinel {
				if n, ok := wireTextCode(out.Response); !ok || n != -32602 {
					t.Errorf("%s %s: text code %d, %v; want -32602", s.Target.Label, out.Kind, n, ok)
				}
			}
			if _, err := out.Request.Message(); err != nil {
				t.Errorf("%s %s: request frame: %v", s.Target.Label, out.Kind, err)
			}
			if _, err := out.Response.Message(); err != nil {
				t.Errorf("%s %s: response frame: %v", s.Target.Label, out.Kind, err)
			}
		}
		for _, tl := range s.Tools {
			if !tl.ReadOnly {
				for _, out := range s.Outcomes {
					if out.Tool == tl.Name {
						t.Errorf("%s: probed %s, which is not read-only (%s)", s.Target.Label, tl.Name, tl.Basis)
					}
				}
			}
		}
	}

	dir := filepath.Join(t.TempDir(), "out")
	w, err := Write(dir, servers, o)
	if err != nil {
		t.Fatal(err)
	}
	if w.Scenarios != 12 || w.Servers != 3 {
		t.Errorf("wrote %d records from %d servers, want 12 from 3", w.Scenarios, w.Servers)
	}
	c, err := study.LoadCorpus(os.DirFS(dir), CorpusDir)
	if err != nil {
		t.Fatal(err)
	}
	counts := study.CountCorpus(c.Scenarios)
	if counts.Causes[study.UnknownTool] != 3 || counts.Causes[study.InvalidType] != 6 || counts.Causes[study.InvalidValue] != 3 ||
		counts.Surfaces[study.ToolError] != 11 || counts.Surfaces[study.Silent] != 1 || counts.TextCodes[-32602] != 9 {
		t.Errorf("counts %+v", counts)
	}
	for _, sc := range c.Scenarios {
		frames, err := os.Open(filepath.Join(dir, CorpusDir, sc.Capture.Frames))
		if err != nil {
			t.Fatalf("%s: frames file: %v", sc.ID, err)
		}
		fr, err := readFrames(frames.Name(), frames)
		frames.Close()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range fr {
			if _, err := f.Message(); err != nil {
				t.Errorf("%s: frame %d does not parse: %v", sc.ID, f.Seq, err)
			}
			found = found || f.Dir == dirSend && string(f.RequestID()) == string(sc.Capture.RequestID)
		}
		if !found {
			t.Errorf("%s: request %s not in %s", sc.ID, sc.Capture.RequestID, sc.Capture.Frames)
		}
		// Real tool and server names stay out of the corpus.
		for _, real := range []string{"echo", "search_nodes", "read_file", "open_nodes", "read_text_file", "get-resource-reference", "everything", "memory-server", "secure-filesystem"} {
			if strings.Contains(string(sc.Observation), real) || strings.Contains(string(sc.ControlEnvelope), real) {
				t.Errorf("%s: %q in the observation or envelope", sc.ID, real)
			}
		}
	}
	// Nothing changed on the servers' side (the output went elsewhere).
	after := snapshot(t, work)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed: %q -> %q", p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was created", p)
		}
	}
}

// TestLockHasNoRegistryURLs keeps the reference servers' lock file free of
// download locations (npm writes none with omit-lockfile-registry-resolved).
func TestLockHasNoRegistryURLs(t *testing.T) {
	data, err := os.ReadFile("../scripts/mcp-servers/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`"resolved"`, ".tgz"} {
		if strings.Contains(string(data), bad) {
			t.Errorf("package-lock.json contains %s: regenerate it with omit-lockfile-registry-resolved (scripts/mcp-servers/.npmrc)", bad)
		}
	}
	for _, pin := range []string{"server-everything", "server-memory", "server-filesystem"} {
		if !strings.Contains(string(data), `"node_modules/@modelcontextprotocol/`+pin+`": {`+"\n"+`      "version": "2026.8.31"`) {
			t.Errorf("package-lock.json does not pin @modelcontextprotocol/%s 2026.8.31", pin)
		}
	}
}

// TestReferenceServerOverHTTP captures from server-everything over
// streamable HTTP on the loopback: the frames arrive as server-sent events.
func TestReferenceServerOverHTTP(t *testing.T) {
	mods := referenceServers(t, "..")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", filepath.Join(mods, "server-everything", "dist", "index.js"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.Dir = t.TempDir()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(60 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	o := Options{Salt: testSalt, Interval: 20 * time.Millisecond, ProtocolVersion: "2025-06-18",
		Sentinels: []SentinelSpec{{Tool: "get-resource-reference", Field: "resourceId", Value: []byte("-987654321")}}}
	servers, err := Run(context.Background(), []Target{{Label: "everything-http", URL: "http://" + addr + "/mcp"}}, o)
	if err != nil {
		t.Fatal(err)
	}
	s := servers[0]
	if s.Err != nil || s.ProtocolVersion != "2025-06-18" || len(s.Outcomes) != 4 {
		t.Fatalf("err %v, protocol %s, %d probes", s.Err, s.ProtocolVersion, len(s.Outcomes))
	}
	for _, out := range s.Outcomes {
		if out.Surface != study.ToolError || out.Wire != study.ToolError {
			t.Errorf("%s: surface %s, wire %s", out.Kind, out.Surface, out.Wire)
		}
		if out.Response == nil || out.Response.HTTP == nil || out.Response.HTTP.ContentType != "text/event-stream" {
			t.Errorf("%s: response frame %+v", out.Kind, out.Response)
		}
	}
	for _, f := range s.Frames {
		if _, err := f.Message(); err != nil {
			t.Errorf("frame %d (%s) does not parse: %v: %q", f.Seq, f.Dir, err, f.Bytes())
		}
	}
}
