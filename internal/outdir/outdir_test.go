package outdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// entries lists dir's names, hidden ones included.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestCreateCommit(t *testing.T) {
	root := t.TempDir()
	final := filepath.Join(root, "a", "b", "out")
	d, err := Create(final, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(final); !os.IsNotExist(err) {
		t.Fatalf("the final directory exists before Commit: %v", err)
	}
	write(t, filepath.Join(d.Path(), "x.txt"), "x")
	if got := d.FinalPaths([]string{filepath.Join(d.Path(), "x.txt"), "/elsewhere"}); got[0] != filepath.Join(final, "x.txt") || got[1] != "/elsewhere" {
		t.Errorf("FinalPaths: %v", got)
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(final, "x.txt")) != "x" {
		t.Error("committed file differs")
	}
	if fi, _ := os.Stat(final); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", fi.Mode().Perm())
	}
	if es := entries(t, filepath.Dir(final)); len(es) != 1 {
		t.Errorf("left beside the output: %v", es)
	}
	d.Abort() // after Commit: nothing
	if read(t, filepath.Join(final, "x.txt")) != "x" {
		t.Error("Abort after Commit removed the output")
	}
	if err := d.Commit(); err == nil {
		t.Error("a second Commit succeeded")
	}
}

func TestAbort(t *testing.T) {
	root := t.TempDir()
	final := filepath.Join(root, "out")
	d, err := Create(final, nil)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d.Path(), "sub", "x.txt"), "x")
	d2, err := Create(filepath.Join(root, "out2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Abort()
	if es := entries(t, root); len(es) != 1 || !strings.HasPrefix(es[0], ".out2.partial-") {
		t.Errorf("after Abort: %v, want only out2's temporary directory", es)
	}
	AbortAll()
	if es := entries(t, root); len(es) != 0 {
		t.Errorf("after AbortAll: %v", es)
	}
	if err := d2.Commit(); err == nil {
		t.Error("Commit after AbortAll succeeded")
	}
}

func TestCheck(t *testing.T) {
	root := t.TempDir()
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	file := filepath.Join(root, "file")
	write(t, file, "f")
	foreign := filepath.Join(root, "foreign")
	write(t, filepath.Join(foreign, "report.md"), "old")
	write(t, filepath.Join(foreign, "notes.txt"), "mine, not the command's")
	owned := Names("report.md", "figures")
	for _, tc := range []struct {
		dir  string
		want string
	}{
		{filepath.Join(root, "new"), ""},
		{empty, ""},
		{file, "exists and is not a directory"},
		{foreign, "is not empty (it holds notes.txt, which this command did not write)"},
	} {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			err := Check(tc.dir, owned)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Check(%s): %v, want %q", tc.dir, err, tc.want)
			}
			if _, err := Create(tc.dir, owned); (err == nil) != (tc.want == "") {
				t.Errorf("Create(%s): %v", tc.dir, err)
			}
		})
	}
	// An empty directory is replaced by Commit.
	d, _ := Create(empty, nil)
	write(t, filepath.Join(d.Path(), "y"), "y")
	if err := d.Commit(); err != nil || read(t, filepath.Join(empty, "y")) != "y" {
		t.Errorf("commit over an empty directory: %v", err)
	}
	if read(t, filepath.Join(foreign, "notes.txt")) == "" {
		t.Error("a refused directory was changed")
	}
}

// TestReplaceOwned: an earlier output of the same command is replaced as
// a whole (a figure it had and the new one lacks is gone), and a foreign
// file added between Create and Commit stops the Commit, the new output
// kept in the temporary directory the error names.
func TestReplaceOwned(t *testing.T) {
	root := t.TempDir()
	final := filepath.Join(root, "report")
	write(t, filepath.Join(final, "report.md"), "old")
	write(t, filepath.Join(final, "figures", "stale.png"), "old")
	owned := Names("report.md", "figures")
	d, err := Create(final, owned)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d.Path(), "report.md"), "new")
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(final, "report.md")) != "new" {
		t.Error("not replaced")
	}
	if _, err := os.Stat(filepath.Join(final, "figures")); !os.IsNotExist(err) {
		t.Error("the earlier output's figures survived")
	}
	if es := entries(t, root); len(es) != 1 {
		t.Errorf("left beside the output: %v", es)
	}

	d, err = Create(final, owned)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d.Path(), "report.md"), "newer")
	write(t, filepath.Join(final, "mine.txt"), "the user's")
	err = d.Commit()
	if err == nil || !strings.Contains(err.Error(), "mine.txt") || !strings.Contains(err.Error(), d.Path()) {
		t.Fatalf("commit over a foreign file: %v", err)
	}
	if read(t, filepath.Join(final, "mine.txt")) != "the user's" || read(t, filepath.Join(final, "report.md")) != "new" {
		t.Error("the final directory changed")
	}
	if read(t, filepath.Join(d.Path(), "report.md")) != "newer" {
		t.Error("the new output was lost")
	}
}

func TestWriteFile(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "ledger.csv")
	if err := WriteFile(p, []byte("a,b\n")); err != nil {
		t.Fatal(err)
	}
	if read(t, p) != "a,b\n" {
		t.Error("content")
	}
	if err := WriteFile(p, []byte("other")); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second write: %v", err)
	}
	if read(t, p) != "a,b\n" {
		t.Error("overwritten")
	}
	if es := entries(t, root); len(es) != 1 {
		t.Errorf("left beside the file: %v", es)
	}
	if err := WriteFile(filepath.Join(root, "no", "such", "dir.csv"), nil); err == nil {
		t.Error("a file in a missing directory was written")
	}
}

func TestWrite(t *testing.T) {
	root := t.TempDir()
	final := filepath.Join(root, "out")
	got, err := Write(final, nil, func(dir string) ([]string, error) {
		p := filepath.Join(dir, "a.md")
		return []string{p}, os.WriteFile(p, []byte("a"), 0o644)
	})
	if err != nil || len(got) != 1 || got[0] != filepath.Join(final, "a.md") || read(t, got[0]) != "a" {
		t.Errorf("Write: %v %v", got, err)
	}
	_, err = Write(filepath.Join(root, "failed"), nil, func(dir string) ([]string, error) {
		os.WriteFile(filepath.Join(dir, "half"), nil, 0o644)
		return nil, os.ErrInvalid
	})
	if err != os.ErrInvalid {
		t.Errorf("a failed write: %v", err)
	}
	if es := entries(t, root); len(es) != 1 {
		t.Errorf("after a failed write: %v", es)
	}
}
