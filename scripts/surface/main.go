// Command surface measures the module's library surface: per package, its
// non-test lines, its exported package-level names, and how many of them
// no other package uses (test files of other packages count as uses;
// the package's own tests do not). Run it from the module root:
//
//	go run ./scripts/surface [-unused]
//
// -unused lists the names no other package uses; -test-only lists
// instead the names no non-test file uses (but the one declaring it).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const module = "github.com/mcpstress/stress"

// mode is -test-only.
var mode bool

type pkg struct {
	dir      string
	lines    int
	exported map[string]bool
	used     map[string]bool // exported names another package selects
	prod     map[string]bool // exported names a non-test file uses (another package's, or its own beside the declaration)
}

func main() {
	list := flag.Bool("unused", false, "list the exported names no other package uses")
	testOnly := flag.Bool("test-only", false, "list instead the exported names only tests use (no non-test file but its declaration's)")
	flag.Parse()
	if *testOnly {
		*list = true
	}
	mode = *testOnly
	if err := run(*list); err != nil {
		fmt.Fprintln(os.Stderr, "surface:", err)
		os.Exit(1)
	}
}

func run(list bool) error {
	pkgs := map[string]*pkg{} // by import path
	type file struct {
		path string
		imp  string
		f    *ast.File
	}
	var files []file
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "." && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		imp := module
		if dir := filepath.Dir(path); dir != "." {
			imp += "/" + filepath.ToSlash(dir)
		}
		files = append(files, file{path, imp, f})
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		p := pkgs[imp]
		if p == nil {
			p = &pkg{dir: filepath.Dir(path), exported: map[string]bool{}, used: map[string]bool{}, prod: map[string]bool{}}
			pkgs[imp] = p
		}
		n, err := countLines(path)
		if err != nil {
			return err
		}
		p.lines += n
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					p.exported[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							p.exported[s.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								p.exported[n.Name] = true
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, fl := range files {
		names := map[string]string{} // local name → import path
		for _, is := range fl.f.Imports {
			path, _ := strconv.Unquote(is.Path.Value)
			if pkgs[path] == nil || path == fl.imp {
				continue
			}
			name := path[strings.LastIndex(path, "/")+1:]
			if is.Name != nil {
				name = is.Name.Name
			}
			names[name] = path
		}
		test := strings.HasSuffix(fl.path, "_test.go")
		declared := map[*ast.Ident]bool{} // the names this file declares
		for _, d := range fl.f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					declared[d.Name] = true
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						declared[sp.Name] = true
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							declared[n] = true
						}
					}
				}
			}
		}
		own := pkgs[fl.imp]
		ast.Inspect(fl.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok {
					if path, ok := names[id.Name]; ok {
						pkgs[path].used[n.Sel.Name] = true
						if !test {
							pkgs[path].prod[n.Sel.Name] = true
						}
					}
				}
			case *ast.Ident:
				if !test && own != nil && !declared[n] && own.exported[n.Name] {
					own.prod[n.Name] = true
				}
			}
			return true
		})
	}
	var paths []string
	for p := range pkgs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var lines, exported, unused int
	var public [4]int // packages, lines, exported, unused outside internal/, cmd/, scripts/ and docs
	fmt.Printf("%-45s %7s %8s %7s\n", "package", "lines", "exported", "unused")
	for _, path := range paths {
		p := pkgs[path]
		var un []string
		for n := range p.exported {
			if (!mode && !p.used[n]) || (mode && !p.prod[n]) {
				un = append(un, n)
			}
		}
		sort.Strings(un)
		lines += p.lines
		if rel := strings.TrimPrefix(path, module+"/"); !strings.HasPrefix(rel, "internal/") && !strings.HasPrefix(rel, "cmd/") &&
			!strings.HasPrefix(rel, "scripts/") && rel != "docs" && len(p.exported) > 0 {
			public[0]++
			public[1] += p.lines
			public[2] += len(p.exported)
			public[3] += len(un)
		}
		exported += len(p.exported)
		unused += len(un)
		fmt.Printf("%-45s %7d %8d %7d\n", strings.TrimPrefix(path, module+"/"), p.lines, len(p.exported), len(un))
		if list && len(un) > 0 {
			fmt.Printf("    %s\n", strings.Join(un, " "))
		}
	}
	fmt.Printf("%-45s %7d %8d %7d\n", fmt.Sprintf("public (%d packages)", public[0]), public[1], public[2], public[3])
	fmt.Printf("%-45s %7d %8d %7d\n", "total", lines, exported, unused)
	return nil
}

// countLines counts a file's lines.
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
	}
	return n, sc.Err()
}
