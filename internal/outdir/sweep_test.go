package outdir

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSymlinkRefused: a symbolic link at the output path, to an empty
// directory, to an earlier output or dangling, is refused naming it, and
// stays as it was. Before, Check followed it and Commit replaced the
// link with the output.
func TestSymlinkRefused(t *testing.T) {
	root := t.TempDir()
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	earlier := filepath.Join(root, "earlier")
	write(t, filepath.Join(earlier, "report.md"), "old")
	for _, to := range []string{empty, earlier, filepath.Join(root, "nowhere")} {
		t.Run("to "+filepath.Base(to), func(t *testing.T) {
			link := filepath.Join(root, "link-"+filepath.Base(to))
			if err := os.Symlink(to, link); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("output directory %s is a symbolic link (to %q); give a path that is not a link", link, to)
			for _, final := range []string{link, link + "/"} {
				if err := Check(final, Names("report.md")); err == nil || err.Error() != want {
					t.Errorf("Check(%s): %v, want %q", final, err, want)
				}
				if d, err := Create(final, Names("report.md")); err == nil || err.Error() != want {
					t.Errorf("Create(%s): %v, want %q", final, err, want)
					if err == nil {
						d.Commit()
					}
				}
			}
			if got, err := os.Readlink(link); err != nil || got != to {
				t.Errorf("%s: now %q, %v", link, got, err)
			}
		})
	}
	if read(t, filepath.Join(earlier, "report.md")) != "old" || len(entries(t, empty)) != 0 {
		t.Error("a link's target changed")
	}
	// A link that appears after Create is refused at Commit, the output
	// kept apart.
	final := filepath.Join(root, "late")
	d, err := Create(final, nil)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d.Path(), "x"), "x")
	os.Symlink(empty, final)
	if err := d.Commit(); err == nil || !strings.Contains(err.Error(), "is a symbolic link") || !strings.Contains(err.Error(), "kept in "+filepath.Join(root, "late.kept-")) {
		t.Errorf("Commit over a link: %v", err)
	}
	d.Abort() // the kept output stays
	if read(t, filepath.Join(d.Path(), "x")) != "x" {
		t.Error("the kept output was lost")
	}
}

// TestSweep: the temporary directories a killed writer of the same
// output left (unlocked) are removed by the next Create, which lists
// them; those of a live writer, other outputs' and other names stay.
// Before, nothing ever removed them.
func TestSweep(t *testing.T) {
	root := t.TempDir()
	final := filepath.Join(root, "inspect")
	live, err := Create(final, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	killed := killedWriter(t, final)
	old := filepath.Join(root, ".inspect.partial-123") // an earlier version's: no lock
	write(t, filepath.Join(old, "a.eval"), "half")
	keep := []string{".inspect.partial-x1", ".inspect.partial-", ".other.partial-1", ".inspect.old-1"}
	for _, k := range keep {
		os.Mkdir(filepath.Join(root, k), 0o755)
	}
	write(t, filepath.Join(root, ".inspect.partial-5"), "a file, as WriteFile's")

	d, err := Create(final, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Abort()
	want := []string{killed, old}
	slices.Sort(want)
	if got := slices.Sorted(slices.Values(d.Swept())); !slices.Equal(got, want) {
		t.Errorf("Swept: %v, want %v", got, want)
	}
	for _, p := range want {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s stays: %v", p, err)
		}
	}
	for _, p := range append(keep, ".inspect.partial-5", filepath.Base(live.Path()), filepath.Base(d.Path())) {
		if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if err := live.Commit(); err != nil {
		t.Errorf("the live writer's Commit: %v", err)
	}
}

// killedWriter starts this test binary as a process that creates final's
// temporary directory and waits; it kills the process (SIGKILL) and
// returns the directory it left.
func killedWriter(t *testing.T, final string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
	cmd.Env = append(os.Environ(), "OUTDIR_HELPER_FINAL="+final)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _ := out.Read(buf)
	tmp := strings.TrimSpace(string(buf[:n]))
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !strings.Contains(tmp, ".partial-") {
		t.Fatalf("the writer said %q", tmp)
	}
	return tmp
}

func TestHelperWriter(t *testing.T) {
	final := os.Getenv("OUTDIR_HELPER_FINAL")
	if final == "" {
		t.Skip("the process that TestSweep kills")
	}
	d, err := Create(final, nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.Path(), "half"), []byte("half"), 0o644)
	fmt.Println(d.Path())
	time.Sleep(time.Minute)
}

// TestNamed: a relative output's temporary directory is named as Join
// names it, so that Named finds it in the messages built with Join and
// says the final path instead. Before, MkdirTemp's "./.o.partial-*" was
// not found in ".o.partial-*/corpus", and capture's error named the
// temporary directory, gone by then.
func TestNamed(t *testing.T) {
	t.Chdir(t.TempDir())
	d, err := Create("o", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Abort()
	if d.Path() != filepath.Clean(d.Path()) || !strings.HasPrefix(d.Path(), ".o.partial-") {
		t.Errorf("Path %q", d.Path())
	}
	inner := &os.PathError{Op: "open", Path: filepath.Join(d.Path(), "corpus"), Err: os.ErrNotExist}
	err = d.Named(fmt.Errorf("nothing written to %s: %w", filepath.Join(d.Path(), "corpus"), inner))
	if err.Error() != "nothing written to o/corpus: open o/corpus: file does not exist" || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Named: %v", err)
	}
	if d.Named(nil) != nil {
		t.Error("Named(nil) is not nil")
	}
}
