// Package outdir writes a command's output directory all at once, so
// that a stopped or failed command leaves no half-written output and
// never overwrites files it did not write. Create checks the final
// directory before any work (it must not exist, be empty, or hold only
// an earlier output of the same command; a symbolic link is refused) and
// makes a temporary sibling (.NAME.partial-*) to write into; Commit
// renames it into place, Abort removes it. AbortAll removes every
// temporary directory still open, for a process that exits at once on a
// second signal. A temporary directory that a killed process left is
// removed by the next Create of the same output (sweep.go).
package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Dir is an output directory being written: the files go into Path, a
// temporary directory beside the final one, until Commit.
type Dir struct {
	final string
	tmp   string
	owned func(name string) bool
	done  bool
	lock  *os.File // the temporary directory, flock(2)ed while it is written
	swept []string
}

// open are the temporary directories not yet committed or aborted.
var open sync.Map // *Dir → struct{}

// Names returns an owned function for Create that accepts exactly the
// given entry names (files or directories a command writes at the top of
// its output directory).
func Names(names ...string) func(string) bool {
	return func(name string) bool { return slices.Contains(names, name) }
}

// Check reports whether final may be written: it must not exist, or be a
// directory that is empty or whose every entry is owned (an earlier
// output of the same command, replaced as a whole by Commit). owned may
// be nil: then only an empty directory is accepted. The error names the
// directory and the first entry in the way.
func Check(final string, owned func(name string) bool) error {
	final = filepath.Clean(final)
	fi, err := os.Lstat(final)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// Note: Commit would replace the link, not write where it points.
		to, _ := os.Readlink(final)
		return fmt.Errorf("output directory %s is a symbolic link (to %q); give a path that is not a link", final, to)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", final)
	}
	entries, err := os.ReadDir(final)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if owned == nil || !owned(e.Name()) {
			return fmt.Errorf("output directory %s is not empty (it holds %s, which this command did not write); choose another", final, e.Name())
		}
	}
	return nil
}

// Create checks final as Check does and makes the temporary directory
// to write into (its parent directories are created if needed), after
// removing those an earlier process writing final left when it was
// killed (Swept lists them).
func Create(final string, owned func(name string) bool) (*Dir, error) {
	if err := Check(final, owned); err != nil {
		return nil, err
	}
	final = filepath.Clean(final)
	parent, base := filepath.Split(final)
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	swept := sweep(parent, base)
	tmp, lock, err := makeLocked(parent, base)
	if err != nil {
		return nil, err
	}
	// MkdirTemp makes the directory 0700; an output is as readable as any
	// directory the user makes.
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.Remove(tmp)
		closeLock(lock)
		return nil, err
	}
	d := &Dir{final: final, tmp: tmp, owned: owned, lock: lock, swept: swept}
	open.Store(d, struct{}{})
	return d, nil
}

// Path is the directory to write into until Commit.
func (d *Dir) Path() string { return d.tmp }

// Final is the directory the output will have once committed.
func (d *Dir) Final() string { return d.final }

// Swept lists the temporary directories of final that Create removed:
// left by a process killed while it wrote final.
func (d *Dir) Swept() []string { return d.swept }

// Named returns err with the temporary directory replaced by the final
// one wherever its message names it (errors.Is and As still see err):
// the temporary directory is gone once the command fails.
func (d *Dir) Named(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if named := strings.ReplaceAll(msg, d.tmp, d.final); named != msg {
		return &namedError{named, err}
	}
	return err
}

type namedError struct {
	msg string
	err error
}

func (e *namedError) Error() string { return e.msg }
func (e *namedError) Unwrap() error { return e.err }

// Commit renames the written directory into place. An earlier output
// of the same command at the final path is replaced as a whole; a final
// directory that gained a foreign entry meanwhile is left alone, and the
// error names the temporary directory that holds the output.
func (d *Dir) Commit() error {
	if d.done {
		return fmt.Errorf("output directory %s: already committed or aborted", d.final)
	}
	if err := Check(d.final, d.owned); err != nil {
		return fmt.Errorf("%w; the output is kept in %s", err, d.keep())
	}
	err := os.Rename(d.tmp, d.final) // replaces an empty directory
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		// The final directory holds an earlier output: move it aside,
		// move the new one in, then remove the old.
		old, terr := os.MkdirTemp(filepath.Dir(d.final), "."+filepath.Base(d.final)+".old-")
		if terr != nil {
			return fmt.Errorf("output directory %s: %w; the output is kept in %s", d.final, terr, d.keep())
		}
		if err = os.Rename(d.final, filepath.Join(old, "output")); err == nil {
			if err = os.Rename(d.tmp, d.final); err != nil {
				// Put the earlier output back.
				_ = os.Rename(filepath.Join(old, "output"), d.final)
			}
		}
		os.RemoveAll(old)
	}
	if err != nil {
		return fmt.Errorf("output directory %s: %w; the output is kept in %s", d.final, err, d.keep())
	}
	d.done = true
	open.Delete(d)
	closeLock(d.lock)
	return nil
}

// Abort removes the temporary directory and everything written into it.
// It does nothing after Commit, so a command may defer it.
func (d *Dir) Abort() {
	if d.done {
		return
	}
	d.done = true
	open.Delete(d)
	os.RemoveAll(d.tmp)
	closeLock(d.lock)
}

// AbortAll aborts every directory created and not yet committed: what a
// process calls before it exits at once.
func AbortAll() {
	open.Range(func(k, _ any) bool {
		k.(*Dir).Abort()
		return true
	})
}

// tmpFile creates the file beside path that WriteFile writes before it
// links it into place.
func tmpFile(path string) (*os.File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	return os.CreateTemp(dir, "."+base+".partial-")
}

// WriteFile writes data to path, which must not exist, all at once: to
// a temporary file beside it, synced and renamed into place (a link, so
// a path created meanwhile is not overwritten).
func WriteFile(path string, data []byte) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s already exists; choose another", path)
	}
	f, err := tmpFile(path)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Link(f.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s already exists; choose another", path)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// FinalPaths returns the paths written under Path as they are named once
// committed (under Final); other paths are returned unchanged.
func (d *Dir) FinalPaths(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = p
		if rel, err := filepath.Rel(d.tmp, p); err == nil && filepath.IsLocal(rel) {
			out[i] = filepath.Join(d.final, rel)
		}
	}
	return out
}

// Write makes the output directory final in one go: Create, write into
// the temporary directory, Commit. write returns the paths it wrote;
// Write returns them as named once committed. On any error nothing is
// left at final (an earlier output of the command stays as it was).
func Write(final string, owned func(name string) bool, write func(dir string) ([]string, error)) ([]string, error) {
	d, err := Create(final, owned)
	if err != nil {
		return nil, err
	}
	defer d.Abort()
	written, err := write(d.Path())
	if err == nil {
		err = d.Commit()
	}
	if err != nil {
		return nil, err
	}
	return d.FinalPaths(written), nil
}
