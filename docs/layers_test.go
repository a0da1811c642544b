package docs

import (
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// layers ranks every package of the tree along the data flow of
// layout.md (study → manifests → conditions → models → simulator →
// results and runner → analysis → cmd/stress), with the side branches
// (capture, the coder, the scan, the environments) where their imports
// put them: a package's rank is its index here. A package's non-test
// files may import only packages of a lower rank, so no package imports
// one above it in the flow, and two packages of one rank never import
// each other.
var layers = [][]string{
	// Utilities that import nothing of stress.
	{"internal/input", "internal/outdir", "internal/csvcell", "internal/findup", "internal/window",
		"internal/parallel", "internal/mcpstdio", "internal/pgcluster", "statediff", "analysis/stats", "deploy/kubernetes", "scripts/floor", "scripts/surface"},
	{"study", "statediff/readers"},
	// The study's inputs, and what needs only the vocabulary.
	{"manifests", "scenario", "failclosed", "coding", "coding/rules", "audit/registry"},
	{"conditions", "lab", "audit/scan", "synth"},
	{"models", "env/proxy"},
	{"models/transport"},
	// The backends beside the simulator and capture (none imports another).
	{"models/baseline", "models/exec", "models/ollama", "models/openai", "models/failclosed", "models/rules",
		"simulator", "capture"},
	{"results", "env", "capture/checkmatrix", "capture/labrecord"},
	{"runner", "env/labenv", "env/mcpenv", "env/dbenv"},
	{"analysis", "coding/coder"},
	// Readers of analyses, and the test servers (only tests import them).
	{"analysis/report", "export/inspect", "internal/testserver", "internal/testserver/echohttp",
		"internal/testserver/faultserver", "internal/testserver/hostilemcp", "internal/testserver/ollamatest",
		"internal/testserver/fakeenv", "internal/testserver/goalaudit", "internal/testserver/exectable"},
	{"cmd/stress"},
}

// TestImportsFollowTheFlow reads the imports of every non-test Go file
// (go/parser, imports only) and fails on an import by a utility of
// internal/ of a package outside internal/, and on one of a package of the same or
// a higher rank (layers), on any import of cmd/, and on a package that
// layers does not rank.
func TestImportsFollowTheFlow(t *testing.T) {
	dir := root(t)
	ranks := map[string]int{}
	for r, pkgs := range layers {
		for _, p := range pkgs {
			if _, twice := ranks[p]; twice {
				t.Errorf("layers ranks %s twice", p)
			}
			ranks[p] = r
		}
	}
	seen := map[string]bool{}
	for _, f := range files(t, dir) {
		pkg := path.Dir(f)
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || pkg == "." || pkg == "docs" ||
			slices.Contains(strings.Split(pkg, "/"), "testdata") {
			continue
		}
		rank, ok := ranks[pkg]
		if !ok {
			if !seen[pkg] {
				t.Errorf("package %s has no rank in layers (docs/layers_test.go): give it the rank its imports put it at, and name it in docs/layout.md", pkg)
			}
			seen[pkg] = true
			continue
		}
		seen[pkg] = true
		src := read(t, dir, f)
		if src == nil {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, im := range file.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			dep, ok := strings.CutPrefix(p, module+"/")
			if !ok {
				continue
			}
			if strings.HasPrefix(dep, "cmd/") {
				t.Errorf("%s imports %s: nothing imports cmd/", f, p)
				continue
			}
			if r, known := ranks[dep]; known && r >= rank {
				t.Errorf("%s (rank %d) imports %s (rank %d): a package imports only packages below it in the flow", f, rank, dep, r)
			}
			if groundFloor(pkg) && !strings.HasPrefix(dep, "internal/") {
				t.Errorf("%s imports %s: internal/ holds the utilities under every package (only the test servers, internal/testserver, may import the rest), so a feature that needs %s stands outside internal/", f, p, dep)
			}
		}
	}
	for pkg := range ranks {
		if !seen[pkg] {
			t.Errorf("layers ranks %s, which has no non-test Go file", pkg)
		}
	}
}

// groundFloor reports whether pkg is one of the utilities under internal/
// (not a test server): drawn as one room, internal/ sits under every
// other package, so none of its imports runs back up.
func groundFloor(pkg string) bool {
	return strings.HasPrefix(pkg, "internal/") && pkg != "internal/testserver" && !strings.HasPrefix(pkg, "internal/testserver/")
}
