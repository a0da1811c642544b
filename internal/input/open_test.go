package input

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenStream opens special files in their every disguise: each is
// refused at once, naming the path and what it is, and a symbolic link
// to a regular file is followed. Before OpenStream, the readers of a
// bundle's calls.jsonl and messages.jsonl (os.Open) waited forever on a
// named pipe and read /dev/zero through a link without end.
func TestOpenStream(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "calls.jsonl")
	os.WriteFile(file, []byte("{}\n"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := func(name, to string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	toFile, toZero, toFifo := link("to-file", file), link("to-zero", "/dev/zero"), link("to-fifo", fifo)
	toNull := link("to-null", "/dev/null")
	if f, err := OpenStream(toFile); err != nil {
		t.Errorf("a link to a file: %v", err)
	} else {
		f.Close()
	}
	for _, tc := range []struct {
		path, want string
	}{
		{fifo, fifo + ": not a regular file (a named pipe); give a file"},
		{"/dev/zero", "/dev/zero: not a regular file (a device); give a file"},
		{toZero, toZero + ": not a regular file (a symbolic link to a device); give a file"},
		{toFifo, toFifo + ": not a regular file (a symbolic link to a named pipe); give a file"},
		{dir, dir + ": not a regular file (a directory); give a file"},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			for _, open := range []struct {
				name string
				fn   func(string) (*os.File, error)
			}{
				{"OpenStream", OpenStream},
				{"OpenWrite", func(p string) (*os.File, error) { return OpenWrite(p, os.O_CREATE|os.O_WRONLY, 0o644) }},
				{"ReadFile", func(p string) (*os.File, error) { _, err := ReadFile(p, Corpus); return nil, err }},
			} {
				t.Run(open.name, func(t *testing.T) {
					if open.name == "OpenWrite" && tc.path == dir {
						return // EISDIR, from the open itself
					}
					done := make(chan error, 1)
					go func() {
						f, err := open.fn(tc.path)
						if f != nil {
							f.Close()
						}
						done <- err
					}()
					select {
					case err := <-done:
						if !errors.Is(err, ErrNotRegular) || err.Error() != tc.want {
							t.Errorf("%s(%s): %v, want %q", open.name, tc.path, err, tc.want)
						}
					case <-time.After(30 * time.Second):
						t.Fatalf("%s(%s) blocked", open.name, tc.path)
					}
				})
			}
		})
	}
	// Written through a link to /dev/null, a log would be lost.
	if f, err := OpenWrite(toNull, os.O_WRONLY|os.O_APPEND, 0); err == nil || !strings.Contains(err.Error(), "a symbolic link to a device") {
		t.Errorf("OpenWrite(link to /dev/null): %v", err)
		f.Close()
	}
	if _, err := OpenStream(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}
