package scan

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// counts renders counts as "class/language n" lines.
func counts(cs []Count) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s/%s %d\n", c.Class, c.Language, c.N)
	}
	return b.String()
}

// goSDKDir returns the directory of the Go SDK module this module
// requires, in the module cache.
func goSDKDir(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/modelcontextprotocol/go-sdk").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Fatalf("the Go SDK module is not in the module cache (run go mod download): %v", err)
	}
	return dir
}

// TestRealGoSDK scans the real source of the MCP Go SDK (v1.8.0, the
// version go.mod requires; the pins change with it), with its examples
// and tests: the counts per class and language are pinned, and a few
// matches are checked by file and line. The SDK's own calls of SetError
// (in package mcp, which does not import itself) are wrapper calls:
// SetError's definition is the match.
func TestRealGoSDK(t *testing.T) {
	r, err := Scan(context.Background(), []Repo{{Name: "github.com/modelcontextprotocol/go-sdk", Dir: goSDKDir(t)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := counts(r.Files), "production/go 60\ntest/go 62\nexample/go 23\n"; got != want {
		t.Errorf("files:\n%swant:\n%s", got, want)
	}
	if got, want := counts(r.Matches()), "production/go 1\ntest/go 5\nexample/go 1\n"; got != want {
		t.Errorf("matches:\n%swant:\n%s", got, want)
	}
	all := list(r.Candidates)
	for _, want := range []string{
		"mcp/protocol.go:341:4 production assignment .IsError = true in SetError\n",
		"examples/server/toolschemas/main.go:51:4 example property IsError: true in errf\n",
		"mcp/mcp_test.go:261:5 test property IsError: true in TestEndToEnd\n",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no match %s among\n%s", want, all)
		}
	}
	wantWrappers := `mcp/mcp_test.go:2464:8 test wrapper_call .SetError(…) in TestSetErrorPreservesContent
mcp/server.go:405:11 production wrapper_call .SetError(…) in th
mcp/server.go:414:12 production wrapper_call .SetError(…) in th
mcp/server.go:432:11 production wrapper_call .SetError(…) in th
`
	if got := list(r.WrapperCalls); got != wantWrappers {
		t.Errorf("wrapper calls:\n%swant:\n%s", got, wantWrappers)
	}
	if len(r.Skipped) != 0 || r.Repos[0].Commit != "" {
		t.Errorf("skipped %v, commit %q (the module cache holds no .git)", r.Skipped, r.Repos[0].Commit)
	}
}

// nodePackages returns the published MCP packages the tests install
// (scripts/test: the reference servers and the SDK in
// scripts/mcp-servers, the v2 client and core in scripts/ts-clients),
// failing with an install hint when they are missing.
func nodePackages(t testing.TB) []Repo {
	t.Helper()
	var repos []Repo
	for _, p := range []string{"mcp-servers/sdk", "mcp-servers/server-everything", "mcp-servers/server-filesystem", "mcp-servers/server-memory",
		"ts-clients/client", "ts-clients/core"} {
		set, name, _ := strings.Cut(p, "/")
		dir := filepath.Join("..", "..", "scripts", set, "node_modules", "@modelcontextprotocol", name)
		if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
			t.Fatalf("@modelcontextprotocol/%s is not installed: run scripts/test, or (cd scripts/%s && npm ci --ignore-scripts)", name, set)
		}
		repos = append(repos, Repo{Name: "@modelcontextprotocol/" + name, Dir: dir})
	}
	return repos
}

// TestRealNodePackages scans the published packages the tests install
// (TypeScript SDK 1.32.2, the reference servers 2026.8.31, client and core
// 2.4.0). They ship only build output: without -include-build nothing is
// read; with it, every file is classed build (never production) and the
// SDK's tool-error constructions are found, in its ESM and CommonJS
// builds alike.
func TestRealNodePackages(t *testing.T) {
	repos := nodePackages(t)
	r, err := Scan(context.Background(), repos, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Candidates) != 0 || len(r.Files) != 0 || r.ExcludedDirs != 6 {
		t.Errorf("without -include-build: %d matches, files %v, %d directories not entered; want none, none, 6 (dist)", len(r.Candidates), r.Files, r.ExcludedDirs)
	}
	r, err = Scan(context.Background(), repos, Options{IncludeBuild: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := counts(r.Files), "build/typescript 210\nbuild/javascript 261\n"; got != want {
		t.Errorf("files:\n%swant:\n%s", got, want)
	}
	if got, want := counts(r.Matches()), "build/javascript 14\n"; got != want {
		t.Errorf("matches:\n%swant:\n%s", got, want)
	}
	var files []string
	for _, rr := range r.Repos {
		files = append(files, fmt.Sprintf("%s %d", rr.Name, rr.Files))
	}
	if got, want := strings.Join(files, ", "), "@modelcontextprotocol/sdk 348, @modelcontextprotocol/server-everything 43, "+
		"@modelcontextprotocol/server-filesystem 5, @modelcontextprotocol/server-memory 1, @modelcontextprotocol/client 54, @modelcontextprotocol/core 20"; got != want {
		t.Errorf("files per package: %s\nwant %s", got, want)
	}
	all := list(r.Candidates)
	for _, want := range []string{
		"dist/esm/server/mcp.js:210:13 build property isError: true in createToolError\n",
		"dist/cjs/server/mcp.js:213:13 build property isError: true in createToolError\n",
		"dist/esm/examples/server/progressExample.js:21:78 build property isError: true\n",
		"dist/esm/examples/server/simpleStreamableHttp.js:304:25 build property isError: true in createTask\n",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no match %s among\n%s", want, all)
		}
	}
}
