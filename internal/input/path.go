package input

import (
	"errors"
	"io/fs"
)

// WithPath returns err with the path of the *fs.PathError in it replaced by
// shown, the name the user knows the file by: an fs.FS names files without
// a leading slash and relative to its root, the user as they wrote them.
func WithPath(err error, shown string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path != shown {
		return &fs.PathError{Op: pe.Op, Path: shown, Err: pe.Err}
	}
	return err
}
