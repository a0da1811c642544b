package scan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchScan scans repos b.N times, reporting the source bytes read per
// second.
func benchScan(b *testing.B, repos []Repo, opt Options) {
	r, err := Scan(context.Background(), repos, opt)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(r.Bytes)
	b.ReportMetric(float64(len(r.Candidates)), "matches")
	b.ResetTimer()
	for b.Loop() {
		if _, err := Scan(context.Background(), repos, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScanReal scans the real sources the tests use: the Go SDK and
// the installed packages' build output (12 MB, 900 files; warm page
// cache).
func BenchmarkScanReal(b *testing.B) {
	benchScan(b, append([]Repo{{Name: "go-sdk", Dir: goSDKDir(b)}}, nodePackages(b)...), Options{IncludeBuild: true})
}

// BenchmarkScanDense scans a generated tree in which every source file
// holds matches, so every file is lexed and matched (the worst case), next
// to a node_modules of 20,000 files that must not be entered.
func BenchmarkScanDense(b *testing.B) {
	dir := b.TempDir()
	ts := strings.Repeat("export function fail(msg: string): CallToolResult {\n  // a comment about isError: true\n  return { content: [{ type: \"text\", text: `failed: ${msg}` }], isError: true };\n}\n\n", 150)
	py := strings.Repeat("def fail(msg):\n    \"\"\"isError=True docstring\"\"\"\n    return types.CallToolResult(content=[types.TextContent(type=\"text\", text=msg)], isError=True)\n\n\n", 150)
	gosrc := "package x\n\n" + strings.Repeat("func fail(msg string) *mcp.CallToolResult {\n\treturn &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}\n}\n\n", 150)
	for i := 0; i < 300; i++ {
		for ext, src := range map[string]string{"ts": ts, "py": py, "go": gosrc} {
			p := filepath.Join(dir, "src", fmt.Sprintf("pkg%02d", i%30), fmt.Sprintf("f%03d.%s", i, ext))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := 0; i < 5000; i++ {
		p := filepath.Join(dir, "node_modules", fmt.Sprintf("dep%03d", i%200), fmt.Sprintf("i%d.js", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("module.exports = { isError: true };\n"), 0o644)
	}
	benchScan(b, []Repo{{Name: "dense", Dir: dir}}, Options{})
}

// BenchmarkLexMatch lexes and matches the largest JavaScript file of the
// installed v2 client (a 1 MB bundle of real code) in memory: the
// scanner's speed on a file that passes the prefilter.
func BenchmarkLexMatch(b *testing.B) {
	nodePackages(b)
	dir := "../../scripts/ts-clients/node_modules/@modelcontextprotocol/client/dist"
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var src []byte
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && strings.HasSuffix(e.Name(), ".mjs") && len(data) > len(src) {
			src = data
		}
	}
	b.SetBytes(int64(len(src)))
	var toks []token
	for b.Loop() {
		toks = lex(src, syntaxes[JavaScript], toks)
		findMatches(src, toks, JavaScript)
	}
}

// BenchmarkOneLine scans a minified bundle: one 4 MB line of code with
// a match every 300 bytes or so (the target is 20 MB/s or more per core,
// whatever the line lengths; before, a line cost its matches times its
// length).
func BenchmarkOneLine(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 4<<20; i++ {
		fmt.Fprintf(&sb, `function f%d(a,b){if(!a)return{content:[{type:"text",text:"bad "+b}],isError:true};const c=b.map(d=>d.id).filter(Boolean),e={ok:!0,n:c.length};for(let g=0;g<c.length;g++)e[c[g]]=g;return e}`, i)
	}
	benchOneLine(b, sb.String())
}

// BenchmarkOneLineDense is the worst case: one 4 MB line that is nothing
// but matches (a={isError:true}; 240,000 times), each of which becomes a
// candidate with its excerpt and hashes; the time is the candidates'.
func BenchmarkOneLineDense(b *testing.B) {
	benchOneLine(b, strings.Repeat("a={isError:true};", 4<<20/17))
}

func benchOneLine(b *testing.B, src string) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bundle.js"), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	benchScan(b, []Repo{{Name: "min", Dir: dir}}, Options{IncludeBuild: true, MaxFileSize: 8 << 20})
}
