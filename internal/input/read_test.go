package input

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "p.tmpl")
	os.WriteFile(small, []byte("hello"), 0o644)
	big := filepath.Join(dir, "big.tmpl")
	os.WriteFile(big, make([]byte, 1<<20+1), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	c := Cap{"a prompt template", 1 << 20}
	if b, err := ReadFile(small, c); err != nil || string(b) != "hello" {
		t.Errorf("small: %q %v", b, err)
	}
	exact := filepath.Join(dir, "exact")
	os.WriteFile(exact, make([]byte, 1<<20), 0o644)
	if b, err := ReadFile(exact, c); err != nil || len(b) != 1<<20 {
		t.Errorf("a file of exactly the cap: %d bytes, %v", len(b), err)
	}
	for _, tc := range []struct {
		path string
		is   error
		want string
	}{
		{big, ErrTooLarge, big + ": over its cap: 1048577 bytes, and a prompt template holds at most 1 MiB"},
		{"/dev/zero", ErrNotRegular, "/dev/zero: not a regular file (a device); give a file"},
		{fifo, ErrNotRegular, fifo + ": not a regular file (a named pipe); give a file"},
		{dir, ErrNotRegular, "(a directory)"},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := ReadFile(tc.path, c); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("ReadFile(%s): %v, want %q", tc.path, err, tc.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("ReadFile(%s) blocked", tc.path)
			}
			if f, err := Open(tc.path, c); err == nil || !errors.Is(err, tc.is) {
				t.Errorf("Open(%s): %v", tc.path, err)
				f.Close()
			}
		})
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), c); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if f, err := Open(small, c); err != nil {
		t.Errorf("Open(small): %v", err)
	} else {
		f.Close()
	}

	// Through a file system: the FIFO is refused by Stat, never opened.
	fsys := os.DirFS(dir)
	if b, err := ReadFS(fsys, "p.tmpl", "prompts/p.tmpl", c); err != nil || string(b) != "hello" {
		t.Errorf("ReadFS: %q %v", b, err)
	}
	if _, err := ReadFS(fsys, "fifo", "corpus/fifo", c); !errors.Is(err, ErrNotRegular) || !strings.HasPrefix(err.Error(), "corpus/fifo: ") {
		t.Errorf("ReadFS fifo: %v", err)
	}
	if _, err := ReadFS(fsys, "big.tmpl", "prompts/big.tmpl", c); !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), "prompts/big.tmpl: ") {
		t.Errorf("ReadFS big: %v", err)
	}
	if _, err := ReadFS(fsys, "nope", "corpus/nope.json", c); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "corpus/nope.json") {
		t.Errorf("ReadFS missing: %v", err)
	}
	m := fstest.MapFS{"a.json": {Data: []byte("[]")}}
	if b, err := ReadFS(m, "a.json", "a.json", c); err != nil || string(b) != "[]" {
		t.Errorf("MapFS: %q %v", b, err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{300: "300 bytes", 4 << 10: "4 KiB", 1 << 20: "1 MiB", 3 << 19: "1.5 MiB", 1<<20 + 1: "1048577 bytes", 512 << 20: "512 MiB", 1 << 30: "1 GiB"} {
		t.Run(want, func(t *testing.T) {
			if got := Size(n); got != want {
				t.Errorf("Size(%d) = %q, want %q", n, got, want)
			}
		})
	}
}
