package outdir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Note: a temporary directory is flock(2)ed by the process that writes
// it, from the moment it is made until Commit or Abort, so the kernel
// releases the lock when that process dies, even by SIGKILL. Create of
// the same output then takes the lock of each .NAME.partial-* sibling it
// can (a live writer's it cannot) and removes it: what a killed command
// left is gone by the next command that writes there, and a directory
// in use is never touched. Where the file system has no flock (some
// network file systems), no lock is taken and nothing is swept.

// tries bounds the attempts of makeLocked to make a directory no sweeper
// removes meanwhile.
const tries = 10

// makeLocked makes a new temporary directory for base in parent and
// takes its lock; lock is nil where the file system has no flock.
func makeLocked(parent, base string) (tmp string, lock *os.File, err error) {
	for range tries {
		tmp, err = os.MkdirTemp(parent, "."+base+".partial-")
		if err != nil {
			return "", nil, err
		}
		// MkdirTemp joins without cleaning ("./.o.partial-1" for parent
		// "."); the messages that name the directory say it as Join does.
		tmp = filepath.Join(parent, filepath.Base(tmp))
		lock, err = lockDir(tmp)
		switch {
		case errors.Is(err, syscall.EWOULDBLOCK):
			// Another process's sweep holds it, and removes it.
			continue
		case err != nil:
			return tmp, nil, nil // no flock here
		}
		// Between MkdirTemp and the lock a sweep may have removed the
		// directory: then it is no longer the one at tmp.
		if fi, err := os.Lstat(tmp); err == nil {
			if li, err := lock.Stat(); err == nil && os.SameFile(fi, li) {
				return tmp, lock, nil
			}
		}
		closeLock(lock)
	}
	return "", nil, errors.New("output directory " + filepath.Join(parent, base) + ": could not make a temporary directory that stays (another process removes them)")
}

// lockDir opens directory dir and takes its exclusive lock without
// waiting.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func closeLock(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// sweep removes the temporary directories of base in parent whose
// writer is gone (their lock is free) and returns their paths.
func sweep(parent, base string) []string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	prefix := "." + base + ".partial-"
	var swept []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() || !digits(rest) {
			continue // not one of MkdirTemp's names for base
		}
		p := filepath.Join(parent, e.Name())
		lock, err := lockDir(p)
		if err != nil {
			continue // in use, or no flock here
		}
		if fi, err := os.Lstat(p); err == nil {
			if li, err := lock.Stat(); err == nil && os.SameFile(fi, li) && os.RemoveAll(p) == nil {
				swept = append(swept, p)
			}
		}
		lock.Close()
	}
	return swept
}

// ReportSwept writes a line to w naming each directory that Create
// swept, for the command's output.
func (d *Dir) ReportSwept(w io.Writer) {
	for _, p := range d.swept {
		fmt.Fprintf(w, "removed %s: the temporary output of a command killed before it finished\n", p)
	}
}

// digits reports whether s is a non-empty string of decimal digits, as
// MkdirTemp's random part is.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// keep moves the written output, which Commit could not put into place,
// to a sibling that no sweep removes (NAME.kept-*), ends d and returns
// where the output is.
func (d *Dir) keep() string {
	d.done = true
	open.Delete(d)
	parent, base := filepath.Split(d.final)
	if parent == "" {
		parent = "."
	}
	kept, err := os.MkdirTemp(parent, base+".kept-")
	if err != nil {
		return d.tmp // stays locked until this process ends
	}
	kept = filepath.Join(parent, filepath.Base(kept))
	// syscall's rename replaces the empty directory; os.Rename refuses
	// any directory.
	if err := syscall.Rename(d.tmp, kept); err != nil {
		os.Remove(kept)
		return d.tmp
	}
	closeLock(d.lock)
	d.tmp = kept
	return kept
}
