package testserver

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyTestsImport: no Go file of the module outside this folder but a
// test imports a package of it, so the command never links a test server.
func TestOnlyTestsImport(t *testing.T) {
	const prefix = "github.com/mcpstress/stress/internal/testserver"
	root := filepath.Join("..", "..")
	here := filepath.Join(root, "internal", "testserver")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (path == here || d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != root):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		n++
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if p == prefix || strings.HasPrefix(p, prefix+"/") {
				t.Errorf("%s imports %s, which only tests may", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Errorf("read %d Go files of the module, want the whole module", n)
	}
}
