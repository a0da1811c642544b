package results

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// LockFile is the file inside a bundle whose lock marks the one process
// writing the bundle. It holds a line naming that process.
const LockFile = ".lock"

// Lock is an exclusive lock on a bundle directory, held by the process
// that writes the bundle (run, resume, merge) until Unlock or its exit.
// Note: it is an flock(2) lock on LockFile, so the kernel releases it when
// the process dies, even by SIGKILL: a stale lock file never blocks.
type Lock struct {
	f *os.File
}

// LockedError is returned by LockBundle when another process holds the
// bundle's lock.
type LockedError struct {
	Dir    string
	Holder string // the line the holder wrote: pid, command, start time; "" if unknown
}

func (e *LockedError) Error() string {
	who := e.Holder
	if who == "" {
		who = "another process"
	}
	return fmt.Sprintf("bundle %s is in use by %s; wait for it to finish (two writers would corrupt it)", e.Dir, who)
}

// LockBundle takes the exclusive lock of bundle directory dir (which must
// exist) for the command what (e.g. "stress run"). It fails at once with
// a *LockedError when another process holds it.
func LockBundle(dir, what string) (*Lock, error) {
	file := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := io.ReadAll(io.LimitReader(f, 512))
			return nil, &LockedError{Dir: dir, Holder: strings.TrimSpace(string(b))}
		}
		return nil, fmt.Errorf("%s: lock: %w", file, err)
	}
	holder := fmt.Sprintf("process %d (%s, since %s)", os.Getpid(), what, time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(holder+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock. The lock file stays; it is harmless.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Empty reports whether bundle directory dir holds nothing but its lock
// file (or does not exist).
func Empty(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if e.Name() != LockFile {
			return false, nil
		}
	}
	return true, nil
}
