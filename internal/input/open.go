package input

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// OpenStream opens the regular file path for a reader that streams it
// without a cap: a bundle's calls.jsonl, messages.jsonl and
// decisions.parquet, read a line or a range at a time. Anything but a
// regular file is refused as ReadFile refuses it, naming path and what
// it is (a symbolic link is followed to a regular file only), and
// opening never blocks: a named pipe is refused, not waited on.
func OpenStream(path string) (*os.File, error) {
	return openRegular(path, os.O_RDONLY, 0)
}

// OpenWrite opens path with flag (os.O_WRONLY, os.O_CREATE, …) and perm
// after the checks of OpenStream: a bundle's log that is a named pipe, a
// device or a link to one is refused, not written into, and the open
// never waits for a pipe's reader.
func OpenWrite(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return openRegular(path, flag, perm)
}

// openRegular opens path with flag and O_NONBLOCK (so that a named pipe
// does not block the open; regular files ignore the flag) and refuses
// what fstat, on the opened file, says is not a regular file.
//
// Note: the type is read from the opened descriptor, not from the path,
// so that nothing swapped in between the check and the open is read.
func openRegular(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, perm)
	if errors.Is(err, syscall.ENXIO) {
		// A named pipe opened for writing with no reader.
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, notRegularPath(path, fi.Mode())
		}
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = notRegularPath(path, fi.Mode())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// notRegularPath is notRegular for a path of the file system, which says
// when path is a symbolic link to what it names.
func notRegularPath(path string, mode fs.FileMode) error {
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		return fmtNotRegular(path, "a symbolic link to "+kindOf(mode))
	}
	return notRegular(path, mode)
}
