package docs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is the module path the repository's go.mod declares.
const module = "github.com/mcpstress/stress"

// specFile is the specification, relative to the repository root.
const specFile = "docs/specification.md"

// outside are references to documents outside the repository, which a
// clone does not have: the developers' private specification and its
// directory. They are built from pieces so that this file does not name
// them itself.
var outside = []string{"STUDY" + ".md", ".." + "/shared", "/work" + "/shared"}

// root returns the repository root: the nearest directory at or above
// the test's working directory whose go.mod declares module.
func root(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && regexp.MustCompile(`(?m)^module\s+`+regexp.QuoteMeta(module)+`\s*$`).Match(b) {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatalf("no go.mod of module %s at or above the working directory", module)
		}
		dir = up
	}
}

// skipped reports whether a repository path is outside the check: under
// .git or under a node_modules directory (installed packages, and the
// scanner's fixtures that imitate them).
func skipped(path string) bool {
	for _, part := range strings.Split(filepath.ToSlash(path), "/") {
		if part == ".git" || part == "node_modules" {
			return true
		}
	}
	return false
}

// files returns the repository's files, relative to the root with
// forward slashes: those git tracks (read from the working tree), or,
// where git or the repository's metadata is missing (an exported source
// tree), every regular file under the root.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	if b, err := exec.Command("git", "-C", dir, "ls-files", "-z").Output(); err == nil && len(b) > 0 {
		for _, p := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
			if !skipped(p) {
				out = append(out, p)
			}
		}
		return out
	}
	t.Logf("git ls-files unavailable; walking %s", dir)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() && rel != "." && skipped(rel) {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// read returns a file of the repository, or nil for one git tracks that
// is gone from the working tree or is not a regular file (a submodule).
func read(t *testing.T, dir, rel string) []byte {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(rel))
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !fi.Mode().IsRegular() {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// line returns the 1-based line of byte offset i of b.
func line(b []byte, i int) int { return 1 + bytes.Count(b[:i], []byte("\n")) }

// TestNoOutsideReferences fails on any file of the repository that names
// a document outside it (see outside): the repository holds its own
// specification, docs/specification.md.
func TestNoOutsideReferences(t *testing.T) {
	dir := root(t)
	checked := 0
	for _, rel := range files(t, dir) {
		b := read(t, dir, rel)
		if b == nil {
			continue
		}
		checked++
		for _, ref := range outside {
			for off := 0; ; {
				i := bytes.Index(b[off:], []byte(ref))
				if i < 0 {
					break
				}
				i += off
				t.Errorf("%s:%d names %s, outside the repository; cite %s instead", rel, line(b, i), ref, specFile)
				off = i + len(ref)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d files under %s: not the repository", checked, dir)
	}
}

// heading matches a numbered heading of the specification ("## 4.",
// "### 4.3 The counts") and captures its number.
var heading = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(\d+(?:\.\d+)*)\.?[ \t]`)

// sections returns the numbers of the specification's headings.
func sections(t *testing.T, dir string) map[string]bool {
	t.Helper()
	b := read(t, dir, specFile)
	if b == nil {
		t.Fatalf("%s is missing", specFile)
	}
	have := map[string]bool{}
	for _, m := range heading.FindAllSubmatch(b, -1) {
		have[string(m[1])] = true
	}
	// The numbering the code has cited from the start.
	for _, n := range []string{"1", "1.1", "1.2", "1.3", "2", "3", "4", "5", "6", "7"} {
		if !have[n] {
			t.Errorf("%s has no heading numbered %s", specFile, n)
		}
	}
	return have
}

// Section numbers after "section" or "sections": one number, or a list
// ("sections 2 and 6", "sections 3, 4 and 6", "sections 2–6").
var (
	sectionList = regexp.MustCompile(`^\s*\)?,?\s*sections?\s+(\d+(?:\.\d+)*(?:(?:\s*,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\s*[–-]\s*)\d+(?:\.\d+)*)*)`)
	number      = regexp.MustCompile(`\d+(?:\.\d+)*`)
	// continuation is a line break and the comment marker that opens the
	// next line of a wrapped comment (Go, YAML, shell, templates, Markdown
	// quotes), which a reference may straddle.
	continuation = regexp.MustCompile(`\r?\n[ \t]*(?://|#|\*|>)?[ \t]*`)
	// inSpec is a section reference inside the specification itself.
	inSpec = regexp.MustCompile(`\bsections?\s+\d`)
)

// cited returns the section numbers a reference names, read from text
// just after "docs/specification.md" (or, within the specification,
// from "section …" on); nil when the text names no section.
func cited(after []byte) []string {
	text := continuation.ReplaceAllString(string(after), " ")
	m := sectionList.FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	return number.FindAllString(m[1], -1)
}

// TestSectionReferences checks that every "docs/specification.md section
// N" (or "section N.M", or a list of sections) in the repository, and
// every "section N" inside the specification, names a heading the
// specification has.
func TestSectionReferences(t *testing.T) {
	dir := root(t)
	have := sections(t, dir)
	var numbers []string
	for n := range have {
		numbers = append(numbers, n)
	}
	slices.Sort(numbers)
	check := func(rel string, b []byte, at int, nums []string) int {
		for _, n := range nums {
			if !have[n] {
				t.Errorf("%s:%d cites section %s of %s, which has no such heading (it has %s)", rel, line(b, at), n, specFile, strings.Join(numbers, ", "))
			}
		}
		return len(nums)
	}
	refs := 0
	for _, rel := range files(t, dir) {
		b := read(t, dir, rel)
		if b == nil {
			continue
		}
		if rel == specFile {
			for _, loc := range inSpec.FindAllIndex(b, -1) {
				refs += check(rel, b, loc[0], cited(b[loc[0]:min(len(b), loc[0]+120)]))
			}
			continue
		}
		path := []byte(specFile)
		for off := 0; ; {
			i := bytes.Index(b[off:], path)
			if i < 0 {
				break
			}
			i += off
			end := i + len(path)
			refs += check(rel, b, i, cited(b[end:min(len(b), end+120)]))
			off = end
		}
	}
	if refs == 0 {
		t.Fatal("found no section reference at all: the search is broken")
	}
	t.Logf("%d section references checked", refs)
}

// TestCited pins how references are read, line breaks and lists included.
func TestCited(t *testing.T) {
	for text, want := range map[string]string{
		" section 4.":                        "4",
		" section 4's code_only":             "4",
		" section 1.3) so":                   "1.3",
		"\n// section 6: it reads":           "6",
		" section\n\t// 4.6).":               "4.6",
		"\n# section 4 on the paper corpus":  "4",
		" sections 1 and 2. It":              "1 2",
		"\n// sections 2 and 6): the":        "2 6",
		" sections 3, 4 and 6)":              "3 4 6",
		" sections 2–6)":                     "2 6",
		"), section 7.4: a replay":           "7.4",
		": the specification":                "",
		" section N":                         "",
		" (the file), section 4":             "",
		" describes section 4 of the study.": "",
	} {
		if got := strings.Join(cited([]byte(text)), " "); got != want {
			t.Errorf("cited(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestLayoutNamesEveryPackage fails when docs/layout.md does not name a
// package of the repository, so that the layout and the tree cannot drift
// apart: every directory holding a non-test Go file (outside testdata and
// this one) must appear as `path`, or, for the test servers under
// internal/testserver, as `name`.
func TestLayoutNamesEveryPackage(t *testing.T) {
	dir := root(t)
	layout := string(read(t, dir, "docs/layout.md"))
	if layout == "" {
		t.Fatal("docs/layout.md is missing")
	}
	seen := map[string]bool{}
	for _, f := range files(t, dir) {
		pkg := filepath.ToSlash(filepath.Dir(f))
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || pkg == "." || pkg == "docs" ||
			slices.Contains(strings.Split(pkg, "/"), "testdata") || seen[pkg] {
			continue
		}
		seen[pkg] = true
		name := pkg
		if strings.HasPrefix(pkg, "internal/testserver/") {
			name = filepath.Base(pkg)
		}
		if !strings.Contains(layout, "`"+name+"`") {
			t.Errorf("docs/layout.md does not name the package %s (as `%s`)", pkg, name)
		}
	}
	if len(seen) < 40 {
		t.Fatalf("found only %d packages; the walk is broken", len(seen))
	}
}
