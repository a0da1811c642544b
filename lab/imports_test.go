package lab

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// harness are the packages of the harness (the study's data flow from
// manifests on, the environment adapters, capture, the coder, the lab
// recorder and the command; those under internal/ by their name there): the
// lab is the server alone and imports none of them, tests included; env/
// adapts it to the harness.
var harness = []string{"manifests", "conditions", "models", "simulator", "runner", "results", "analysis", "env", "capture", "coder", "labrecord", "cmd"}

// TestImportsNoHarness reads the import lines of every Go file under lab/
// (go/parser, imports only) and refuses any package of the harness.
func TestImportsNoHarness(t *testing.T) {
	const module = "github.com/mcpstress/stress/"
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		n++
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			rel, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			top, _, _ := strings.Cut(strings.TrimPrefix(rel, "internal/"), "/")
			for _, h := range harness {
				if top == h {
					t.Errorf("lab/%s imports %s, a package of the harness (env/ adapts the lab to the harness)", filepath.ToSlash(path), p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("read %d Go files under lab/, want the lab's", n)
	}
}
