package scan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"
)

// list renders candidates one a line: file:line:column class construct
// match [in function].
func list(cands []Candidate) string {
	var b strings.Builder
	for _, c := range cands {
		fmt.Fprintf(&b, "%s:%d:%d %s %s %s", c.File, c.Line, c.Column, c.Class, c.Construct, c.Match)
		if c.Function != "" {
			b.WriteString(" in " + c.Function)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// treeMatches are the matches of testdata/tree, a small repository with a
// file of each language and path class. Its traps do not match: a key in
// a comment, a docstring, a string, a template's text, a regexp, a Go
// struct tag or raw string, a Rust raw string, a Kotlin raw string, a C#
// verbatim string; a TypeScript interface, type alias and .d.ts
// declaration; isError: false, isError: !1, isError: cond, a ternary
// (ok ? isError : true), a Python default parameter (def f(is_error=True)),
// a Python case clause's pattern (case CallToolResult(is_error=True) |
// {"isError": True}:) and a Java .isError(false); node_modules/ is never
// entered. A helper counts only where its SDK is imported: mcpgo/server.go
// imports mcp-go as m; handler.go's mcp.NewToolResultError names the Go
// SDK's package, which has none, and pkg/tools calls the repository's own
// utils.NewToolResultError, whose definition (pkg/utils) is the match:
// those calls are treeWrapperCalls, as is rust/src/own.rs's
// CallToolResult::error in a file that does not name rmcp.
const treeMatches = `csharp/Server.cs:7:90 production initializer IsError = true in Fail
csharp/Server.cs:10:58 production named_argument isError: true
examples/demo.go:4:25 example property IsError: true in main
gen/client.pb.go:3:21 generated property IsError: true
handler.go:13:30 production property IsError: true in Call
handler.go:20:7 production helper .SetError(…) in Call
handler.go:23:6 production assignment .IsError = true in Call
handler.go:26:21 production property "isError": true in Call
handler_test.go:6:30 test property IsError: true in TestCall
internal/codegen.go:5:21 generated property IsError: true
java/Server.java:8:14 production builder .isError(true) in fail
kotlin/Server.kt:4:67 production named_argument isError=true in fail
mcpgo/server.go:14:11 production helper NewToolResultErrorFromErr(…) in fail
pkg/utils/result.go:11:3 production property IsError: true in NewToolResultError
public/app.js:1:57 generated property isError: !0 in a
rust/src/lib.rs:15:19 production helper CallToolResult::error(…) in fail
rust/src/lib.rs:20:9 production property is_error: Some(true) in fail
server/app.py:17:17 production named_argument isError=True in call_tool
server/app.py:20:36 production property "isError": True in call_tool
server/app.py:22:16 production index_assignment ["isError"] = True in call_tool
server/app.py:28:64 production property "is_error": True in anthropic_block
src/server.test.ts:4:71 test property isError: true
src/server.ts:17:56 production property isError: true in fail
src/server.ts:22:10 production assignment .isError = true in notFound
src/server.ts:31:9 production property isError: true in call
src/tools.js:5:7 production index_assignment ["isError"] = true in toolError
src/tools.js:9:34 production property "isError": true
tests/fixtures/response.py:1:60 fixture property "isError": True
tests/test_app.py:5:59 test property "isError": True in test_unknown
`

// treeWrapperCalls are the calls of testdata/tree that are named like an
// SDK's helper but do not resolve to the SDK: listed apart, not matches.
const treeWrapperCalls = `handler.go:31:13 production wrapper_call mcp.NewToolResultError(…) in toolError
mcpgo/server.go:12:16 production wrapper_call utils.NewToolResultError(…) in fail
pkg/tools/issues.go:10:16 production wrapper_call utils.NewToolResultError(…) in GetIssue
pkg/tools/issues.go:12:15 production wrapper_call utils.NewToolResultError(…) in GetIssue
rust/src/own.rs:5:5 production wrapper_call CallToolResult::error(…) in fail
`

// TestTree pins the matches of testdata/tree, without and with
// -include-build (dist/ is then entered and its match classed build).
func TestTree(t *testing.T) {
	r, err := Scan(context.Background(), []Repo{{Name: "tree", Dir: "testdata/tree"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := list(r.Candidates); got != treeMatches {
		t.Errorf("matches:\n%s\nwant:\n%s", got, treeMatches)
	}
	if got := list(r.WrapperCalls); got != treeWrapperCalls {
		t.Errorf("wrapper calls:\n%s\nwant:\n%s", got, treeWrapperCalls)
	}
	if r.ExcludedDirs != 2 || len(r.Skipped) != 0 || r.Repos[0].Files != 21 {
		t.Errorf("excluded %d directories, skipped %v, read %d files; want 2 (dist, node_modules), none, 21", r.ExcludedDirs, r.Skipped, r.Repos[0].Files)
	}
	r, _ = Scan(context.Background(), []Repo{{Name: "tree", Dir: "testdata/tree"}}, Options{IncludeBuild: true})
	want := strings.Replace(treeMatches, "examples/demo.go", "dist/index.js:2:47 build property isError: true in fail\nexamples/demo.go", 1)
	if got := list(r.Candidates); got != want {
		t.Errorf("-include-build matches:\n%s\nwant:\n%s", got, want)
	}
	if r.ExcludedDirs != 1 {
		t.Errorf("-include-build: %d directories not entered, want 1 (node_modules)", r.ExcludedDirs)
	}
}

// TestClassOf checks the path class rules, in their order.
func TestClassOf(t *testing.T) {
	goGen := []byte("// Code generated by protoc-gen-go. DO NOT EDIT.\n\npackage x\n")
	minified := []byte(strings.Repeat("var a=1;", 200))
	for _, tc := range []struct {
		rel        string
		underBuild bool
		head       []byte
		want       Class
	}{
		{"src/index.ts", false, nil, Production},
		{"src/index.ts", true, nil, Build},
		{"tests/gen/x.go", true, nil, Build},
		{"api/x.pb.go", false, nil, Generated},
		{"api/x_pb2.py", false, nil, Generated},
		{"src/__generated__/schema.ts", false, nil, Generated},
		{"internal/x.go", false, goGen, Generated},
		{"src/x.ts", false, []byte("/* @generated by tool */"), Generated},
		{"src/Api.cs", false, []byte("// <auto-generated>\n"), Generated},
		{"public/app.js", false, minified, Generated},
		{"public/app.py", false, minified, Production}, // only JavaScript and TypeScript are minified
		{"lib/vendor.min.js", false, nil, Generated},
		{"tests/fixtures/a.py", false, nil, Fixture},
		{"pkg/testdata/a.go", false, nil, Fixture},
		{"src/__mocks__/api.ts", false, nil, Fixture},
		{"src/api.mock.ts", false, nil, Fixture},
		{"tests/test_api.py", false, nil, Test},
		{"api/api_test.go", false, nil, Test},
		{"src/api.test.ts", false, nil, Test},
		{"src/api.spec.js", false, nil, Test},
		{"e2e/flow.ts", false, nil, Test},
		{"src/main/java/ServerTest.java", false, nil, Test},
		{"conftest.py", false, nil, Test},
		{"examples/server.py", false, nil, Example},
		{"examples/tests/server.py", false, nil, Test},
		{"Examples/Demo/Program.cs", false, nil, Example},
		{"src/latest.ts", false, nil, Production}, // "test" only as a whole name
		{"src/contest_test.txt.py", false, nil, Production},
	} {
		t.Run(tc.rel, func(t *testing.T) {
			if got := classOf(tc.rel, tc.underBuild, tc.head); got != tc.want {
				t.Errorf("ClassOf(%q, %v) = %s, want %s", tc.rel, tc.underBuild, got, tc.want)
			}
		})
	}
	for name, want := range map[string][2]bool{
		"node_modules": {true, false}, "vendor": {true, false}, ".venv": {true, false}, "site-packages": {true, false},
		"foo.egg-info": {true, false}, ".git": {true, false}, "dist": {true, true}, "Build": {true, true}, "target": {true, true},
		"src": {false, false}, "lib": {false, false},
	} {
		t.Run(name, func(t *testing.T) {
			if s, b := skipDir(name, false); s != want[0] || b != want[1] {
				t.Errorf("SkipDir(%q) = %v, %v; want %v", name, s, b, want)
			}
		})
	}
	if s, b := skipDir("dist", true); s || !b {
		t.Errorf("SkipDir(dist, include build) = %v, %v; want false, true", s, b)
	}
}

// failFS is an os.DirFS whose directory bad cannot be listed and whose
// file badFile cannot be opened, as if their permissions denied it.
type failFS struct {
	fs.FS
	bad, badFile string
}

func (f failFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == f.bad {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return fs.ReadDir(f.FS, name)
}

func (f failFS) Open(name string) (fs.File, error) {
	if name == f.badFile {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f.FS.Open(name)
}

// TestSkips: binary and oversized source files, symbolic links (a loop to
// the repository itself, one to its parent, one to a file), an unreadable
// directory and an unreadable file are skipped and listed, the unreadable
// ones as failures; the rest is scanned. Excluded directories are not
// entered: the link and the binary file inside node_modules are not
// listed.
func TestSkips(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("src/ok.ts", "export const r = { isError: true };\n")
	write("src/blob.ts", "const a = 1;\x00\x01\x02 isError: true")
	write("src/huge.go", "package x\n\nvar r = R{IsError: true}\n"+strings.Repeat("// padding\n", 200))
	write("secret/a.py", "x = {'isError': True}\n")
	write("src/locked.js", "module.exports = { isError: true };\n")
	write("node_modules/dep/blob.js", "\x00\x00")
	for link, target := range map[string]string{"loop": ".", "src/up": "..", "src/alias.ts": "ok.ts", "node_modules/dep/self": "."} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	repo := Repo{Name: "r", Dir: dir, FS: failFS{FS: os.DirFS(dir), bad: "secret", badFile: "src/locked.js"}}
	r, err := Scan(context.Background(), []Repo{repo}, Options{MaxFileSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range r.Skipped {
		got = append(got, fmt.Sprintf("%s: %s (failed %v)", s.Path, s.Reason, s.Failed))
	}
	want := []string{
		"loop: symbolic link (not followed) (failed false)",
		"secret: unreadable: permission denied (failed true)",
		"src/alias.ts: symbolic link (not followed) (failed false)",
		"src/blob.ts: binary (a NUL byte in its first 8000 bytes) (failed false)",
		"src/huge.go: too large (2236 bytes; the limit is 1000) (failed false)",
		"src/locked.js: unreadable: permission denied (failed true)",
		"src/up: symbolic link (not followed) (failed false)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Failed() != 2 || list(r.Candidates) != "src/ok.ts:1:20 production property isError: true\n" || r.ExcludedDirs != 1 {
		t.Errorf("failed %d, excluded %d, matches:\n%s", r.Failed(), r.ExcludedDirs, list(r.Candidates))
	}
}

// TestCommit reads the commit of fake checkouts, as git lays them out: a
// loose ref, a packed ref, a detached HEAD, and a worktree whose .git is
// a file pointing to its git directory (refs in the common directory);
// and the origin remote's GitHub name.
func TestCommit(t *testing.T) {
	const a, b = "0123456789abcdef0123456789abcdef01234567", "89abcdef0123456789abcdef0123456789abcdef"
	root := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(text), 0o644)
	}
	write("loose/.git/HEAD", "ref: refs/heads/main\n")
	write("loose/.git/refs/heads/main", a+"\n")
	write("loose/.git/config", "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = git@github.com:Acme/Weather-MCP.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n")
	write("packed/.git/HEAD", "ref: refs/heads/main\n")
	write("packed/.git/packed-refs", "# pack-refs with: peeled fully-peeled sorted\n"+b+" refs/heads/main\n")
	write("detached/.git/HEAD", b+"\n")
	write("main/.git/worktrees/wt/HEAD", "ref: refs/heads/wt\n")
	write("main/.git/worktrees/wt/commondir", "../..\n")
	write("main/.git/refs/heads/wt", a+"\n")
	write("wt/.git", "gitdir: ../main/.git/worktrees/wt\n")
	write("unborn/.git/HEAD", "ref: refs/heads/main\n")
	write("plain/x.go", "package x\n")
	for dir, want := range map[string]string{"loose": a, "packed": b, "detached": b, "wt": a, "plain": ""} {
		t.Run(dir, func(t *testing.T) {
			if got, err := commit(filepath.Join(root, dir)); got != want || err != nil {
				t.Errorf("Commit(%s) = %q, %v; want %q", dir, got, err, want)
			}
		})
	}
	if _, err := commit(filepath.Join(root, "unborn")); err == nil || !strings.Contains(err.Error(), "refs/heads/main, which has no commit yet") {
		t.Errorf("Commit(unborn): %v", err)
	}
	if got := Origin(filepath.Join(root, "loose")); got != "github.com/acme/weather-mcp" {
		t.Errorf("Origin(loose) = %q", got)
	}
	if got := Origin(filepath.Join(root, "packed")); got != "" {
		t.Errorf("Origin(packed) = %q, want none", got)
	}
}

// TestWrite writes a scan of testdata/tree: the projection holds no
// source text (the hashes recompute from the file), the ledger holds the
// production matches, and two writes are byte-identical.
func TestWrite(t *testing.T) {
	r, err := Scan(context.Background(), []Repo{{Name: "tree", Dir: "testdata/tree"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	for _, d := range dirs {
		if err := r.Write(d, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{CandidatesFile, ProjectionFile, LedgerFile, WrapperCallsFile, ManifestFile} {
		t.Run(f, func(t *testing.T) {
			a, _ := os.ReadFile(filepath.Join(dirs[0], f))
			b, _ := os.ReadFile(filepath.Join(dirs[1], f))
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("%s: empty or differs between two writes", f)
			}
		})
	}
	proj, _ := os.ReadFile(filepath.Join(dirs[0], ProjectionFile))
	lines := strings.Split(strings.TrimSpace(string(proj)), "\n")
	if len(lines) != len(r.Candidates) {
		t.Fatalf("%d projection rows for %d candidates", len(lines), len(r.Candidates))
	}
	for i, l := range lines {
		var p map[string]any
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{"text", "match", "function"} {
			if _, ok := p[field]; ok {
				t.Errorf("projection row %d has source text %q", i+1, field)
			}
		}
		c := r.Candidates[i]
		if strings.Contains(l, c.Text) {
			t.Errorf("projection row %d quotes the source: %s", i+1, l)
		}
		// The hashes recompute from the file: the line, and lines
		// line-3..line+3 with CRLF as LF joined by LF.
		data, _ := os.ReadFile(filepath.Join("testdata/tree", c.File))
		text := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
		sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
		ctx := strings.Join(text[max(0, c.Line-4):min(len(text), c.Line+3)], "\n")
		if p["line_sha256"] != sum(text[c.Line-1]) || p["context_sha256"] != sum(ctx) {
			t.Errorf("%s:%d: the hashes do not recompute from the file", c.File, c.Line)
		}
	}
	ledger, _ := os.ReadFile(filepath.Join(dirs[0], LedgerFile))
	rows := strings.Split(strings.TrimSpace(string(ledger)), "\n")
	if rows[0] != strings.Join(ledgerColumns, ",") || len(rows) != 1+21 {
		t.Errorf("ledger.csv: header %q, %d rows, want 21 production matches", rows[0], len(rows)-1)
	}
	if want := r.Candidates[4].ID + ",tree,,handler.go,13,30,go,property,IsError,,,"; rows[1+2] != want {
		t.Errorf("ledger row 3: %s, want %s", rows[3], want)
	}
	if err := r.Write(dirs[0], Options{}); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("writing into a full directory: %v", err)
	}
}

// paperLedger is an adjudicated ledger with the paper's funnel: 16
// production matches, 2 of them embedded test strings, 14 constructions
// on 12 semantic paths in 10 repositories.
func paperLedger() string {
	var b strings.Builder
	b.WriteString(strings.Join(ledgerColumns, ",") + "\n")
	row := 0
	add := func(repo, decision, path string) {
		row++
		fmt.Fprintf(&b, "c%011d,github.com/o/r%02s,%040d,src/server.ts,%d,5,typescript,property,isError,%s,%s,\n", row, repo, 0, 10*row, decision, path)
	}
	for r := 1; r <= 10; r++ {
		add(fmt.Sprint(r), construction, "p1")
	}
	add("1", construction, "p1") // the same path as the row above: one semantic path
	add("1", construction, "p2")
	add("2", construction, "p1")
	add("3", construction, "p2")
	add("4", testString, "")
	add("5", testString, "")
	return b.String()
}

// TestSummarize reproduces the paper's funnel from a ledger, and reports
// every bad row with its line.
func TestSummarize(t *testing.T) {
	f, errs := Summarize("ledger.csv", strings.NewReader(paperLedger()))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if *f != (Funnel{Matches: 16, TestStrings: 2, Constructions: 14, SemanticPaths: 12, Repositories: 10}) {
		t.Errorf("funnel %+v", *f)
	}
	bad := "id,repository,decision,semantic_path\n" +
		"c1,github.com/a/b,construction,p1\n" +
		"c2,github.com/a/b,constructed,p1\n" +
		"c3,github.com/a/b,construction,\n" +
		"c1,github.com/a/b,test_string,\n" +
		",github.com/a/b,test_string,\n" +
		"c4,github.com/a/b,,\n"
	f, errs = Summarize("l.csv", strings.NewReader(bad))
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	want := []string{
		`l.csv:3: row "c2": decision "constructed": want construction, test_string, not_an_error_result, or empty for undecided`,
		`l.csv:4: row "c3": a construction needs its semantic_path`,
		`l.csv:5: row "c1": id already on line 2`,
		`l.csv:6: row "": no id`,
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	if f.Matches != 2 || f.Constructions != 1 || f.Undecided != 1 {
		t.Errorf("funnel of the good rows: %+v", *f)
	}
	if _, errs := Summarize("x.csv", strings.NewReader("id,decision\n")); len(errs) != 1 || !strings.Contains(errs[0].Error(), "the header lacks the column(s) repository, semantic_path") {
		t.Errorf("a ledger without columns: %v", errs)
	}
}

// TestLexer checks the tokens of the literals each language has, which
// is where a lexer goes wrong.
func TestLexer(t *testing.T) {
	for _, tc := range []struct {
		lang Language
		src  string
		want string // the tokens, | separated, strings as S
	}{
		{TypeScript, "a = `x ${ {b: `y${c}`} } z` / 2", "a|=|S|{|b|:|S|c|S|}|S|/|2"},
		{TypeScript, "x = a / b / c; r = /[/]isError: true/gi.test(s)", "x|=|a|/|b|/|c|;|r|=|S|.|test|(|s|)"},
		{TypeScript, "return /x/.test(y) ? a?.b : c ?? d === e", "return|S|.|test|(|y|)|?|a|?.|b|:|c|??|d|===|e"},
		{JavaScript, "{isError:!0,b:!1}", "{|isError|:|!|0|,|b|:|!|1|}"},
		{JavaScript, "s = 'it\\'s'; t = \"a\\\nb\"", "s|=|S|;|t|=|S"},
		{Python, "f(r'\\d', b\"x\", f'''{a}\n''', rb'y') # c", "f|(|S|,|S|,|S|,|S|)"},
		{Python, "x = '''a\n'b'\n''' + \"c\"", "x|=|S|+|S"},
		{Go, "s := `a\n\"b` + 'c' + '\\''", "s|:=|S|+|S|+|S"},
		{Rust, "fn f<'a>(x: &'a str) -> char { let r = r#\"a\"b\"#; '\\n' }", "fn|f|<|'|a|>|(|x|:|&|'|a|str|)|->|char|{|let|r|=|S|;|S|}"},
		{Rust, "/* a /* b */ c */ d", "d"},
		{CSharp, "var a = @\"x\"\"y\"; var b = $\"{c}\"; var d = \"\"\"\nq\"\"\n\"\"\";", "var|a|=|S|;|var|b|=|S|;|var|d|=|S|;"},
		{Kotlin, "val s = \"\"\"a\"b\"\"\" + c", "val|s|=|S|+|c"},
		{Java, "String s = \"a\\\"b\"; char c = 'x';", "String|s|=|S|;|char|c|=|S|;"},
	} {
		t.Run(string(tc.lang)+": "+tc.src, func(t *testing.T) {
			src := []byte(tc.src)
			var got []string
			for _, tok := range lex(src, syntaxes[tc.lang], nil) {
				if tok.kind == kString {
					got = append(got, "S")
				} else {
					got = append(got, string(src[tok.s:tok.e]))
				}
			}
			if g := strings.Join(got, "|"); g != tc.want {
				t.Errorf("%s %q:\n got %s\nwant %s", tc.lang, tc.src, g, tc.want)
			}
		})
	}
}

// matchLine is the line matcher the fuzz target drives: the matches of a
// snippet in a language, as candidates.
func matchLine(lang Language, src []byte) []Candidate {
	toks := lex(src, syntaxes[lang], nil)
	var out []Candidate
	var cur lineOf
	for _, h := range findMatches(src, toks, lang) {
		out = append(out, candidate(src, toks[h.tok], h, "r", "", job{rel: "f", lang: lang}, Production, &cur))
	}
	return out
}

// TestMatchLine checks single constructs of each language, and near
// misses.
func TestMatchLine(t *testing.T) {
	for _, tc := range []struct {
		lang Language
		src  string
		want string // construct and match, "" for none
	}{
		{TypeScript, "return { content, isError: true };", "property isError: true"},
		{TypeScript, "return { ...base, 'isError': true as const }", "property 'isError': true"},
		{TypeScript, "const r: { isError: true } = x;", "property isError: true"}, // an annotation: not told from a value
		{TypeScript, "type R = {\n  isError: true\n}\nconst x = { isError: true }", "property isError: true"},
		{TypeScript, "let x = { isError: true ? a : b }", ""},
		{TypeScript, "res.isError = true\nnext()", "assignment .isError = true"},
		{TypeScript, "res.isError = true && other", ""},
		{TypeScript, "if (res.isError === true) {}", ""},
		{TypeScript, "f({ isError })", ""},
		{JavaScript, "a={isError:!0}", "property isError: !0"},
		{JavaScript, "a={isError:! 0}", ""},
		{Python, "return CallToolResult(content=c, isError=True)", "named_argument isError=True"},
		{Python, "def f(a, isError=True): pass", ""},
		{Python, "x = lambda isError=True: x", ""},
		{Python, "r[\"is_error\"] = True", "index_assignment [\"is_error\"] = True"},
		{Python, "r[key] = True", ""},
		{Python, "if x.isError == True: pass", ""},
		// A case clause's pattern tests a result, it does not build one.
		{Python, "match result:\n    case CallToolResult(is_error=True) | {\"isError\": True}:\n        pass", ""},
		{Python, "match r:\n    case {\"isError\": True} if ok(isError=True):\n        return {\"isError\": True}", "property \"isError\": True"},
		{Python, "match r:\n    case [\n        {\"isError\": True},\n    ]:\n        r[\"isError\"] = True", "index_assignment [\"isError\"] = True"},
		{Python, "case = dict(isError=True)", "named_argument isError=True"},
		{Python, "case(isError=True)", "named_argument isError=True"},
		{Go, "return mcp.CallToolResult{IsError: true}", "property IsError: true"},
		{Go, "pdf.SetError(err)", ""}, // SetError in a file that names no CallToolResult
		{Go, "import \"github.com/modelcontextprotocol/go-sdk/mcp\"\nvar r mcp.CallToolResult\nr.SetError(err)", "helper .SetError(…)"},
		{Go, "var r CallToolResult\nr.SetError(err)", "wrapper_call .SetError(…)"}, // the Go SDK is not imported
		{Go, "func NewToolResultError(text string) *CallToolResult {", ""},
		{Go, "func (h *H) NewToolResultError(text string) *CallToolResult {", ""},
		{Go, "import \"github.com/mark3labs/mcp-go/mcp\"\nreturn mcp.NewToolResultErrorf(\"bad %s\", x)", "helper NewToolResultErrorf(…)"},
		{Go, "import m \"github.com/mark3labs/mcp-go/mcp\"\nreturn m.NewToolResultError(\"x\")", "helper NewToolResultError(…)"},
		{Go, "import (\n\t\"fmt\"\n\t. \"github.com/mark3labs/mcp-go/mcp\"\n)\nreturn NewToolResultErrorFromErr(\"x\", err)", "helper NewToolResultErrorFromErr(…)"},
		{Go, "return mcp.NewToolResultErrorf(\"bad %s\", x)", "wrapper_call mcp.NewToolResultErrorf(…)"}, // mcp-go is not imported
		{Go, "import (\n\t\"github.com/mark3labs/mcp-go/mcp\"\n\t\"example.com/x/pkg/utils\"\n)\nreturn utils.NewToolResultError(\"x\")", "wrapper_call utils.NewToolResultError(…)"},
		{Go, "import \"github.com/mark3labs/mcp-go/mcp\"\nreturn NewToolResultError(\"x\")", "wrapper_call NewToolResultError(…)"}, // the package's own
		{Go, "import _ \"github.com/mark3labs/mcp-go/mcp\"\nreturn mcp.NewToolResultError(\"x\")", "wrapper_call mcp.NewToolResultError(…)"},
		{Rust, "use rmcp::model::*;\nfn f() -> CallToolResult { CallToolResult::error(vec![]) }", "helper CallToolResult::error(…)"},
		{Rust, "fn f() -> rmcp::model::CallToolResult { rmcp::model::CallToolResult::error(vec![]) }", "helper CallToolResult::error(…)"},
		{Rust, "fn f() -> CallToolResult { CallToolResult::error(vec![]) }", "wrapper_call CallToolResult::error(…)"},
		{Rust, "CallToolResult { is_error: Some(true), ..Default::default() }", "property is_error: Some(true)"},
		{Rust, "CallToolResult { is_error: Some(false) }", ""},
		{Java, "CallToolResult.builder().isError(true).build()", "builder .isError(true)"},
		{Kotlin, "CallToolResult(content = c, isError = true)", "named_argument isError=true"},
		{CSharp, "new CallToolResult { IsError = true }", "initializer IsError = true"},
		{CSharp, "r.IsError = true;", "assignment .IsError = true"},
	} {
		t.Run(string(tc.lang)+": "+tc.src, func(t *testing.T) {
			var got []string
			for _, c := range matchLine(tc.lang, []byte(tc.src)) {
				got = append(got, c.Construct+" "+c.Match)
			}
			if g := strings.Join(got, "; "); g != tc.want {
				t.Errorf("%s %q: %q, want %q", tc.lang, tc.src, g, tc.want)
			}
		})
	}
}

// FuzzMatchLine: no input makes the lexer or the matcher panic, in any
// language; every match lies inside the input, on a real line, with a
// known construct and key.
func FuzzMatchLine(f *testing.F) {
	for _, s := range []string{
		"return { content, isError: true };", "r[\"isError\"] = True", "x = `${ {isError: true} }`",
		"CallToolResult { is_error: Some(true) }", "a={isError:!0}", "/* isError: true */", "'\\''", "r#\"\"#",
		"@\"\"\"\"", "\"\"\"a\"\"\"", "type A = { isError: true }", "(((]]]}}}", "def f(isError=True):",
		"import m \"github.com/mark3labs/mcp-go/mcp\"\nr := m.NewToolResultError(x)", "import (\n. \"github.com/mark3labs/mcp-go/mcp\"",
		"match r:\n    case {\"isError\": True} | X(is_error=True):\n        pass", "case (", "use rmcp::model::*; CallToolResult::error(x)",
	} {
		for i := range languages {
			f.Add(uint8(i), []byte(s))
		}
	}
	entries, _ := os.ReadDir("testdata/tree/src")
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join("testdata/tree/src", e.Name())); err == nil {
			f.Add(uint8(0), data)
		}
	}
	f.Fuzz(func(t *testing.T, lang uint8, src []byte) {
		l := languages[int(lang)%len(languages)]
		lines := bytes.Count(src, []byte("\n")) + 1
		for _, c := range matchLine(l, src) {
			if c.Line < 1 || c.Line > lines || c.Column < 1 || c.Key == "" || !strings.Contains(strings.Join(append(constructs, WrapperCall), " "), c.Construct) {
				t.Errorf("match %+v", c)
			}
		}
	})
}

// TestScanCancelled: a cancelled scan stops with the context's error.
func TestScanCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Scan(ctx, []Repo{{Name: "tree", Dir: "testdata/tree"}}, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Scan: %v, want context.Canceled", err)
	}
}

// TestMapFS scans an in-memory tree (Repo.FS), as a caller with its own
// file system would.
func TestMapFS(t *testing.T) {
	fsys := fstest.MapFS{
		"a/b.py":              {Data: []byte("x = {\"isError\": True}\n")},
		"a/node_modules/c.js": {Data: []byte("x = {isError: true}\n")},
	}
	r, err := Scan(context.Background(), []Repo{{Name: "m", FS: fsys}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := list(r.Candidates); got != "a/b.py:1:6 production property \"isError\": True\n" {
		t.Errorf("matches %s", got)
	}
}

// TestLongLine: the candidates of one long line (a minified bundle, with
// multi-byte characters between the matches) share the line's hashes and
// get the column each would get alone, though the line's facts are
// computed once (before, every candidate rehashed and recounted the whole
// line: a 680 KB line of 40,000 matches took 209 s).
func TestLongLine(t *testing.T) {
	unit := `x="é";a={isError:true};`
	src := []byte(strings.Repeat(unit, 2000) + "\nb={isError:true};\n")
	cands := matchLine(JavaScript, src)
	if len(cands) != 2001 {
		t.Fatalf("%d candidates, want 2001", len(cands))
	}
	for i, c := range cands[:2000] {
		want := 1 + i*utf8.RuneCountInString(unit) + utf8.RuneCountInString(`x="é";a={`)
		if c.Line != 1 || c.Column != want || c.LineSHA256 != cands[0].LineSHA256 || c.ContextSHA256 != cands[0].ContextSHA256 {
			t.Fatalf("candidate %d: line %d column %d (want %d)", i, c.Line, c.Column, want)
		}
	}
	if last := cands[2000]; last.Line != 2 || last.Column != 4 || last.LineSHA256 == cands[0].LineSHA256 {
		t.Errorf("the second line's candidate: line %d column %d", last.Line, last.Column)
	}
}

// TestLedgerCellsInert: a file name and a repository name (NAME=) that a
// spreadsheet would take for a formula are written to ledger.csv with an
// apostrophe in front, a name starting with an apostrophe too, and
// Summarize reads them back unchanged: the escaped and the hand-written
// forms of one repository are one repository.
func TestLedgerCellsInert(t *testing.T) {
	cands := []Candidate{
		{ID: "c1", Repository: "@evil", File: "-cmd|' /C calc'!A0.py", Line: 1, Column: 6, Language: Python, Construct: property, Key: "isError"},
		{ID: "c2", Repository: "'quoted", File: "=HYPERLINK(\"http://x\").ts", Line: 2, Column: 3, Language: TypeScript, Construct: property, Key: "isError"},
		{ID: "c3", Repository: "+r", File: "\tsrc/a.go", Line: 3, Column: 1, Language: Go, Construct: property, Key: "IsError"},
	}
	var b bytes.Buffer
	if err := writeLedger(&b, cands); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][2]string{{"'@evil", "'-cmd|' /C calc'!A0.py"}, {"''quoted", "'=HYPERLINK(\"http://x\").ts"}, {"'+r", "'\tsrc/a.go"}} {
		if got := [2]string{recs[i+1][1], recs[i+1][3]}; got != want {
			t.Errorf("row %d: repository and file cells %q, want %q", i+1, got, want)
		}
	}
	// Decide every row; add one for the same repository written by hand,
	// unescaped.
	var led strings.Builder
	cw := csv.NewWriter(&led)
	for i, r := range recs {
		if i > 0 {
			r[9], r[10] = construction, "p"+strconv.Itoa(i)
		}
		cw.Write(r)
	}
	cw.Write([]string{"c4", "@evil", "", "b.py", "1", "1", "python", "property", "isError", construction, "p9", ""})
	cw.Flush()
	f, errs := Summarize("ledger.csv", strings.NewReader(led.String()))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if f.Constructions != 4 || f.Repositories != 3 || f.SemanticPaths != 4 {
		t.Errorf("funnel %+v, want 4 constructions in 3 repositories (@evil, 'quoted, +r) on 4 paths", *f)
	}
	rows, errs := readLedger("ledger.csv", strings.NewReader(b.String()))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for i, r := range rows {
		if r.Repository != cands[i].Repository || r.File != cands[i].File || r.ID != cands[i].ID {
			t.Errorf("row %d read back as %q %q %q, want %q %q %q", i+1, r.ID, r.Repository, r.File, cands[i].ID, cands[i].Repository, cands[i].File)
		}
	}
}

// TestOwnWrapper scans a repository shaped as github/github-mcp-server
// was: a package utils of its own whose NewToolResultError builds the
// error result (on the Go SDK, which has no such helper) and tool files
// that call utils.NewToolResultError hundreds of times (1,027 production
// matches before). The definition is the one production match and the
// ledger's one row; the calls are wrapper calls, listed apart. A file that
// imports mcp-go and calls its helper is a match.
func TestOwnWrapper(t *testing.T) {
	var calls strings.Builder
	for i := range 300 {
		fmt.Fprintf(&calls, "\tif id == %q {\n\t\treturn utils.NewToolResultError(\"failed\")\n\t}\n", fmt.Sprint(i))
	}
	fsys := fstest.MapFS{
		"pkg/utils/result.go": {Data: []byte("package utils\n\nimport \"github.com/modelcontextprotocol/go-sdk/mcp\"\n\n" +
			"func NewToolResultError(message string) *mcp.CallToolResult {\n" +
			"\treturn &mcp.CallToolResult{\n\t\tContent: []mcp.Content{&mcp.TextContent{Text: message}},\n\t\tIsError: true,\n\t}\n}\n")},
		"pkg/github/issues.go": {Data: []byte("package github\n\nimport (\n\t\"github.com/github/github-mcp-server/pkg/utils\"\n" +
			"\t\"github.com/modelcontextprotocol/go-sdk/mcp\"\n)\n\nfunc Get(id string) *mcp.CallToolResult {\n" + calls.String() + "\treturn nil\n}\n")},
		"pkg/github/issues_test.go": {Data: []byte("package github\n\nimport \"github.com/github/github-mcp-server/pkg/utils\"\n\n" +
			"var want = utils.NewToolResultError(\"x\")\n")},
		"cmd/legacy/main.go": {Data: []byte("package main\n\nimport \"github.com/mark3labs/mcp-go/mcp\"\n\n" +
			"func fail() *mcp.CallToolResult { return mcp.NewToolResultError(\"x\") }\n")},
	}
	r, err := Scan(context.Background(), []Repo{{Name: "github.com/github/github-mcp-server", FS: fsys}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "cmd/legacy/main.go:5:46 production helper NewToolResultError(…) in fail\n" +
		"pkg/utils/result.go:8:3 production property IsError: true in NewToolResultError\n"
	if got := list(r.Candidates); got != want {
		t.Errorf("matches:\n%swant:\n%s", got, want)
	}
	if got, want := counts(r.WrapperCounts()), "production/go 300\ntest/go 1\n"; got != want {
		t.Errorf("wrapper calls:\n%swant:\n%s", got, want)
	}
	if w := r.WrapperCalls[0]; w.File != "pkg/github/issues.go" || w.Line != 10 || w.Match != "utils.NewToolResultError(…)" || w.Function != "Get" {
		t.Errorf("first wrapper call %+v", w)
	}
	if n := len(r.Production()); n != 2 {
		t.Errorf("%d production matches, want 2 (the definition and mcp-go's helper)", n)
	}
	var b bytes.Buffer
	if err := r.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "production matches to adjudicate: 2\nwrapper calls, listed apart (a repository's own helper named like an SDK's; not matches): 301, 300 in production\n") {
		t.Errorf("summary:\n%s", b.String())
	}
}

// constructs lists the constructs of matches in the order of every
// table (WrapperCall is not one).
var constructs = []string{property, namedArgument, initializer, assignment, indexAssignment, helper, builder}
