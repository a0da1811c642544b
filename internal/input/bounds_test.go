package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// bomb is the alias bomb of issue 46 (1.3 KB): nine levels of ten
// aliases each, 10^9 strings once expanded.
func bomb() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i < 10; i++ {
		p := "*a" + string(rune('0'+i-1))
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat(p+",", 9) + p + "]\n")
	}
	return b.String()
}

// Nested returns n levels of nesting in the form shape names: "json"
// (arrays), "flow" (YAML flow mappings), "block" (indented YAML
// mappings), "seq" (compact YAML sequences).
func nested(shape string, n int) string {
	switch shape {
	case "json":
		return strings.Repeat("[", n) + strings.Repeat("]", n)
	case "flow":
		return strings.Repeat("{a: ", n) + "1" + strings.Repeat("}", n)
	case "seq":
		return strings.Repeat("- ", n) + "x\n"
	}
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	return b.String()
}

func TestCheckYAML(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     string // "" to accept
	}{
		{"bomb", bomb(), "line 2: alias *a0 inside an anchored node"},
		{"bomb in a block", "options:\n  chat_template_kwargs:\n    a: &a\n      - x\n      - x\n    b: &b\n      - *a\n      - *a\n", "line 7: alias *a inside an anchored node"},
		{"bomb under a sequence item", "- &a\n  - x\n- &b\n  - *a\n", "line 4: alias *a inside an anchored node"},
		{"recursive", "a: &a [*a]\n", "line 1: alias *a inside an anchored node"},
		{"anchored document", "&d\na: *d\n", "line 2: alias *d inside an anchored node"},
		{"budget", "a: &a \"" + strings.Repeat("x", 1000) + "\"\nb: [" + strings.Repeat("*a, ", 70) + "]\n", "line 2: aliases repeat more than 64 KiB"},
		{"budget in a plain scalar", "a: &a " + strings.Repeat("x", 1000) + "\nb: [" + strings.Repeat("*a ", 70) + "]\n", "line 2: aliases repeat more than 64 KiB"},
		{"json deep", nested("json", 100), "line 1: nesting deeper than 64 levels"},
		{"flow deep", nested("flow", 65), "line 1: nesting deeper than 64 levels"},
		{"block deep", nested("block", 65), "line 65: nesting deeper than 64 levels"},
		{"seq deep", nested("seq", 65), "line 1: nesting deeper than 64 levels"},
		{"key and sequence", "a:\n" + strings.Repeat("- a:\n  ", 0) + nestedKeySeq(33), "nesting deeper than 64 levels"},
		{"CR lines", "a: |\r  x\rb: &b [*c]\r", "line 3: alias *c inside an anchored node"},
		{"after a block scalar", "- a: |\n    x\n  b: &b\n    c: *b\n", "line 4: alias *b inside an anchored node"},
		{"merge keys", "base: &base {temperature: 0.5, seed: 1}\nm1:\n  <<: *base\nm2:\n  <<: *base\n", ""},
		{"aliased scalars", "- &x a\n- *x\n- [&y b, *y]\n- {k: &z c, l: *z}\n", ""},
		{"text with brackets and stars", "a: see [1] and {2}, 2 * 3\nb: |\n  [[[[[[\n  *x &y\nc: 'it''s [ {'\nd: \"[\\\"\"\n", ""},
		{"deep enough", nested("block", 64) + nested("flow", 0), ""},
		{"json", `{"a": [{"b": "[[[{{{"}], "c": "\\"["}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckYAML([]byte(c.in))
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s: %v", c.name, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%s: got %v, want %q", c.name, err, c.want)
			case c.want != "" && !errors.Is(err, ErrTooDeep) && !errors.Is(err, ErrAliases):
				t.Errorf("%s: %v is neither ErrTooDeep nor ErrAliases", c.name, err)
			}
		})
	}
}

// nestedKeySeq nests n mappings whose values are sequences at the
// indentation of their key: 2n levels in n columns.
func nestedKeySeq(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", 2*i) + "- a:\n")
	}
	return b.String()
}

func TestCheckJSON(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{nested("json", 64), ""},
		{nested("json", 65), "line 1: nesting deeper than 64 levels"},
		{"{\n\"a\":\n" + strings.Repeat("{\"b\":", 64) + "1" + strings.Repeat("}", 65), "line 3: nesting deeper than 64 levels"},
		{`["[[[[", "\"[[[["]`, ""},
	} {
		t.Run(fmt.Sprintf("%.30q", c.in), func(t *testing.T) {
			err := CheckJSON([]byte(c.in))
			if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
				t.Errorf("CheckJSON(%.40q) = %v, want %q", c.in, err, c.want)
			}
		})
	}
}

// TestCheckShipped checks every JSON and YAML file of the repository:
// the limits leave room above the deepest of them.
func TestCheckShipped(t *testing.T) {
	root := filepath.Join("..", "..")
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		ext := filepath.Ext(p)
		if d.IsDir() || (ext != ".json" && ext != ".yaml" && ext != ".yml" && ext != ".jsonl") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		check := CheckYAML
		if ext == ".json" || ext == ".jsonl" {
			check = CheckJSON
		}
		if err := check(data); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Errorf("checked %d files, want the repository's", n)
	}
}

// TestCheckMemory checks that the pass allocates next to nothing on a
// file at the manifest cap, however it nests.
func TestCheckMemory(t *testing.T) {
	for _, shape := range []string{"json", "flow", "seq", "block"} {
		t.Run(shape, func(t *testing.T) {
			in := []byte(strings.Repeat(nested(shape, 60)+"\n", 1))
			in = bytes.Repeat(append([]byte("- "), in...), int(Manifest.Bytes)/len(in))[:Manifest.Bytes]
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_ = CheckYAML(in)
			_ = CheckJSON(in)
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
				t.Errorf("%s: %d bytes allocated on a %d-byte file", shape, got, len(in))
			}
		})
	}
}

func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{nested("json", 64), nested("json", 65), `{"a":"[\"["}`, `[1,[2,{"x":[]}]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckJSON(data)
		if !json.Valid(data) {
			return
		}
		// The depth the decoder sees.
		dec := json.NewDecoder(bytes.NewReader(data))
		depth, deepest := 0, 0
		for {
			tok, terr := dec.Token()
			if terr != nil {
				break
			}
			if d, ok := tok.(json.Delim); ok {
				if d == '[' || d == '{' {
					depth++
					deepest = max(deepest, depth)
				} else {
					depth--
				}
			}
		}
		if (deepest > MaxDepth) != (err != nil) {
			t.Fatalf("depth %d, CheckJSON: %v", deepest, err)
		}
	})
}

// FuzzCheckYAML checks what CheckYAML lets through against the parser's
// tree: no deeper than twice MaxDepth, and no more nodes after the
// aliases are expanded than the text's bytes and maxAliasBytes allow.
// Note: minimizing an input through the parser is slow; fuzz with
// -fuzzminimizetime 1x. testdata/fuzz keeps a NUL byte that once looped.
func FuzzCheckYAML(f *testing.F) {
	for _, s := range []string{bomb(), nested("block", 64), nested("flow", 40), nestedKeySeq(30),
		"base: &base {temperature: 0.5}\nm1:\n  <<: *base\n", "- &x a\n- *x\n- [&y b, *y]\n",
		"a: |\n  [[[\nb: 'x'\n", "a: &a\n  - x\n  - y\nb: *a\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 || CheckYAML(data) != nil {
			return
		}
		file, err := parse(data)
		if err != nil {
			return
		}
		for _, doc := range file.Docs {
			w := walker{anchors: map[string]ast.Node{}}
			w.walk(doc.Body, 0)
			if w.deepest > 2*MaxDepth {
				t.Fatalf("accepted, and the tree nests %d levels", w.deepest)
			}
			if w.nodes > len(data)+maxAliasBytes {
				t.Fatalf("accepted, and the aliases expand to %d nodes", w.nodes)
			}
		}
	})
}

func parse(data []byte) (f *ast.File, err error) {
	defer func() {
		if recover() != nil {
			err = errors.New("panic")
		}
	}()
	return parser.ParseBytes(data, 0)
}

// A walker counts the nodes of a tree with its aliases expanded (up to
// a bound) and its depth.
type walker struct {
	anchors map[string]ast.Node
	nodes   int
	deepest int
}

func (w *walker) walk(n ast.Node, depth int) {
	if n == nil || w.nodes > 1<<22 || depth > 4*MaxDepth {
		return
	}
	w.nodes++
	w.deepest = max(w.deepest, depth)
	switch n := n.(type) {
	case *ast.AnchorNode:
		if n.Name != nil {
			w.anchors[n.Name.GetToken().Value] = n.Value
		}
		w.walk(n.Value, depth)
	case *ast.AliasNode:
		if n.Value != nil {
			if v, ok := w.anchors[n.Value.GetToken().Value]; ok {
				w.walk(v, depth)
			}
		}
	case *ast.TagNode:
		w.walk(n.Value, depth)
	case *ast.MappingNode:
		for _, v := range n.Values {
			w.walk(v, depth+1)
		}
	case *ast.MappingValueNode:
		w.walk(n.Key, depth)
		w.walk(n.Value, depth)
	case *ast.SequenceNode:
		for _, v := range n.Values {
			w.walk(v, depth+1)
		}
	case *ast.MappingKeyNode:
		w.walk(n.Value, depth)
	}
}
