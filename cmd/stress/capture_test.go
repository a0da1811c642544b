package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/capture"
	"github.com/mcpstress/stress/capture/checkmatrix"
	"github.com/mcpstress/stress/internal/testserver/hostilemcp"
)

// referenceServers returns the pinned reference MCP servers' directory, or
// fails with an install hint.
func referenceServers(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: install Node.js (Debian: apt-get install nodejs npm), then run scripts/test")
	}
	dir, err := filepath.Abs("../../scripts/mcp-servers/node_modules/@modelcontextprotocol")
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

// TestCaptureEndToEnd captures from the three pinned reference servers,
// then counts the corpus and runs the baselines on it with `stress run`.
func TestCaptureEndToEnd(t *testing.T) {
	mods := referenceServers(t)
	work := t.TempDir()
	files := filepath.Join(work, "files")
	memory := filepath.Join(work, "memory.jsonl")
	if err := os.MkdirAll(files, 0o755); err != nil {
		t.Fatal(err)
	}
	memText := `{"type":"entity","name":"Ada","entityType":"person","observations":[]}` + "\n"
	if err := os.WriteFile(memory, []byte(memText), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "captured")
	server := func(name string) string { return filepath.Join(mods, name, "dist", "index.js") }
	stdout, log, err := runCmd(t, "capture", "-out", out, "-salt-file", "testdata/capture.salt", "-interval", "20ms",
		"-stdio", "everything=node "+server("server-everything"),
		"-stdio", "memory=MEMORY_FILE_PATH='"+memory+"' node "+server("server-memory"),
		"-stdio", "filesystem=node "+server("server-filesystem")+" '"+files+"'",
		"-sentinel", "get-resource-reference:resourceId=-987654321", "-sentinel", "open_nodes", "-sentinel", "read_text_file",
		"-read-only", "open_nodes")
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "capture-reference.golden", stdout)
	if !strings.Contains(log, "wrote "+out+": 12 records from 3 servers") {
		t.Errorf("log: %s", log)
	}
	if data, err := os.ReadFile(memory); err != nil || string(data) != memText {
		t.Errorf("the memory file changed: %q, %v", data, err)
	}
	if entries, err := os.ReadDir(files); err != nil || len(entries) != 0 {
		t.Errorf("the filesystem server's directory changed: %v, %v", entries, err)
	}
	for _, f := range []string{capture.ManifestFile, capture.PromptFile, capture.LogFile, "private/README.txt"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "private", "salt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a given salt file must not be copied into the output: %v", err)
	}

	sum, _, err := runCmd(t, "summary", "-corpus", filepath.Join(out, capture.CorpusDir))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "summary-captured.golden", sum)

	// 3 baselines x 4 conditions x 12 records x 1 replicate.
	runOut, runLog, err := runCmd(t, "run", "-allow-proposed", "-out", filepath.Join(t.TempDir(), "bundle"), filepath.Join(out, capture.ManifestFile))
	if err != nil {
		t.Fatalf("%v\n%s", err, runLog)
	}
	if !strings.Contains(runLog, "144 decisions") {
		t.Errorf("run log: %s", runLog)
	}
	// The code registry knows every captured cause from its code.
	if !regexp.MustCompile(`(?m)^code_registry\s+default\s+code_only\s+12\s+12\s`).MatchString(runOut) {
		t.Errorf("run table:\n%s", runOut)
	}
}

// TestCaptureQuarantine captures, from a hostile server, a record the corpus
// loader rejects (isError true with no content) beside good ones: the
// capture writes everything else, exits with status 1 naming the
// quarantined record, and the generated manifest runs.
func TestCaptureQuarantine(t *testing.T) {
	srv := hostilemcp.New(nil, "")
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	out := filepath.Join(t.TempDir(), "captured")
	stdout, log, err := runCmd(t, "capture", "-out", out, "-interval", "1ms", "-max-calls", "20", "-http", "hostile="+ts.URL+"/mcp",
		"-probe-tool", hostilemcp.ToolGetItem, "-sentinel", hostilemcp.ToolReadBlob, "-sentinel", hostilemcp.ToolFindAccount)
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "1 record quarantined") {
		t.Fatalf("want exit status 1 for a quarantined record, got %v\n%s", err, log)
	}
	q, qerr := os.ReadDir(filepath.Join(out, capture.PrivateDir, "quarantine"))
	if qerr != nil || len(q) != 1 {
		t.Fatalf("quarantine: %v, %v", q, qerr)
	}
	if id := strings.TrimSuffix(q[0].Name(), ".json"); !strings.Contains(err.Error(), id) {
		t.Errorf("the error does not name the quarantined record %s: %v", id, err)
	}
	if !strings.Contains(stdout, "out_of_domain_sentinel") || !strings.Contains(log, "wrote "+out+": 4 records from 1 server") {
		t.Errorf("stdout:\n%s\nlog:\n%s", stdout, log)
	}
	// 3 baselines x 4 conditions x 4 records x 1 replicate.
	_, runLog, err := runCmd(t, "run", "-allow-proposed", "-out", filepath.Join(t.TempDir(), "bundle"), filepath.Join(out, capture.ManifestFile))
	if err != nil || !strings.Contains(runLog, "48 decisions") {
		t.Errorf("run on the captured manifest: %v\n%s", err, runLog)
	}
}

func TestCaptureUsage(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "o")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-stdio", "a=true"}, "flag -out is required"},
		{[]string{"-out", out}, "name at least one server"},
		{[]string{"-out", out, "-stdio", "true"}, `flag -stdio "true": want LABEL=COMMAND`},
		{[]string{"-out", out, "-stdio", "a='x"}, "unclosed ' quote"},
		{[]string{"-out", out, "-http", "a=http://example.com/mcp"}, "-allow-host"},
		{[]string{"-out", out, "-stdio", "a=true", "-sentinel", "t:f=nope"}, "flag -sentinel"},
		{[]string{"-out", out, "-stdio", "a=true", "-max-calls", "0"}, "flag -max-calls: want 1 to 100"},
		{[]string{"-out", out, "-stdio", "a=true", "-interval", "0s"}, "flag -interval: want a positive duration"},
		{[]string{"-out", out, "-stdio", "a=true", "-protocol", "latest"}, `protocol version "latest"`},
		{[]string{"-out", full, "-stdio", "a=true"}, "flag -out: output directory " + full + " is not empty"},
		{[]string{"-out", out, "-stdio", "a=true", "-stdio", "a=false"}, "duplicate label"},
		{[]string{"-out", out, "-stdio", "a=true", "extra"}, "unexpected arguments"},
	}
	for _, tc := range cases {
		t.Run(argsName(tc.args), func(t *testing.T) {
			_, _, err := runCmd(t, append([]string{"capture"}, tc.args...)...)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("capture %q: %v, want a usage error containing %q", tc.args, err, tc.want)
			}
		})
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused capture created %s", out)
	}
}

func TestCaptureNoFailures(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o")
	_, log, err := runCmd(t, "capture", "-out", out, "-interval", "1ms", "-stdio", "broken=sh -c 'echo oops >&2; exit 3'")
	if err == nil || !strings.Contains(err.Error(), "no failures captured") || !strings.Contains(log, "server M") {
		t.Errorf("err %v, log %s", err, log)
	}
	if data, err := os.ReadFile(filepath.Join(out, capture.LogFile)); err != nil || !strings.Contains(string(data), `"error"`) {
		t.Errorf("private log: %s, %v", data, err)
	}
	// Without -salt-file the new salt is kept, privately, for a rerun.
	if info, err := os.Stat(filepath.Join(out, capture.PrivateDir, "salt")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("salt: %v, %v", info, err)
	}
	if info, err := os.Stat(filepath.Join(out, capture.PrivateDir)); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("private directory: %v, %v", info, err)
	}
}

func TestSplitCommand(t *testing.T) {
	env, argv, err := splitCommand(`A=1 B='two words' node "my dir/x.js" a\ b 'c"d' ""`)
	if err != nil || !slices.Equal(env, []string{"A=1", "B=two words"}) || !slices.Equal(argv, []string{"node", "my dir/x.js", "a b", `c"d`, ""}) {
		t.Errorf("env %q, argv %q, err %v", env, argv, err)
	}
	for _, bad := range []string{"", "A=1", `"open`} {
		t.Run(fmt.Sprintf("refuses %q", bad), func(t *testing.T) {
			if _, _, err := splitCommand(bad); err == nil {
				t.Errorf("splitCommand(%q): want an error", bad)
			}
		})
	}
}

func TestSummaryPaper(t *testing.T) {
	out, _, err := runCmd(t, "summary")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "summary-paper.golden", out)
	js, _, err := runCmd(t, "summary", "-json", "-manifest", "../../manifests/paper.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js, `"unknown_tool": 10`) || !strings.Contains(js, `"2025-11-25": 4`) {
		t.Errorf("json: %s", js)
	}
	if _, _, err := runCmd(t, "summary", "-corpus", "x", "-manifest", "y"); !errors.Is(err, errUsage) {
		t.Errorf("both flags: %v", err)
	}
	if _, _, err := runCmd(t, "summary", "-corpus", "testdata/no-such-corpus"); err == nil || !strings.Contains(err.Error(), "no-such-corpus") {
		t.Errorf("missing corpus: %v", err)
	}
}

// nodeVersion matches the Node.js version clientcheck prints, which
// depends on the machine; the goldens have vN.
var nodeVersion = regexp.MustCompile(`(node |"node": ")v\d+\.\d+\.\d+`)

// TestClientCheck runs the Go and the real TypeScript clients (scripts/test
// installs them; the test fails when they are missing).
func TestClientCheck(t *testing.T) {
	out, log, err := runCmd(t, "clientcheck")
	if err != nil {
		t.Fatal(err)
	}
	if log != "" {
		t.Fatalf("stderr: %s", log)
	}
	golden(t, "clientcheck.golden", nodeVersion.ReplaceAllString(out, "${1}vN"))
	js, _, err := runCmd(t, "clientcheck", "-json")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "clientcheck-json.golden", nodeVersion.ReplaceAllString(js, "${1}vN"))
	js, _, err = runCmd(t, "clientcheck", "-json", "-protocol", "2025-06-18")
	if err != nil {
		t.Fatal(err)
	}
	var m checkmatrix.Matrix
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatal(err)
	}
	if m.ProtocolVersion != "2025-06-18" {
		t.Errorf("protocol %s, want 2025-06-18 pinned", m.ProtocolVersion)
	}
	n := map[string]int{}
	for _, c := range m.Cells {
		n[c.Client]++
	}
	if want := map[string]int{"go-sdk": 12, "validating": 12, "ts-v1": 12, "ts-v2": 12}; !maps.Equal(n, want) {
		t.Errorf("cells per client %v, want %v", n, want)
	}
}

// TestClientCheckWithoutTSClients checks that clientcheck says why the
// TypeScript clients did not run and still prints the Go columns.
func TestClientCheckWithoutTSClients(t *testing.T) {
	dir := t.TempDir()
	out, log, err := runCmd(t, "clientcheck", "-ts-clients", dir)
	if err != nil {
		t.Fatal(err)
	}
	why := filepath.Join(dir, "check.mjs") + " is missing"
	if log != "clientcheck: TypeScript clients not run: "+why+"\n" {
		t.Errorf("stderr: %q", log)
	}
	if !strings.Contains(out, "TypeScript clients (ts-v1, ts-v2) not run: "+why+"\n") ||
		!regexp.MustCompile(`(?m)^result shape +tools/list +go-sdk +validating$`).MatchString(out) {
		t.Errorf("stdout:\n%s", out)
	}
}
