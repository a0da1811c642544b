package input

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// A Cap is the most bytes stress reads of one kind of input file, and
// the name of that kind for an error message.
type Cap struct {
	What  string // "a prompt", "a corpus file", …
	Bytes int64
}

// The caps of every file a command reads from a path (docs/commands.md,
// "Input limits", lists them). A file over its cap is refused before it
// is read whole, naming the file and the cap.
var (
	Manifest    = Cap{"a manifest", 1 << 20}
	Prompt      = Cap{"a prompt template", 1 << 20}
	Observation = Cap{"an observation", 1 << 20}
	Corpus      = Cap{"a corpus or coding file", 512 << 20}
	Ledger      = Cap{"a ledger", 64 << 20}
	Snapshot    = Cap{"a registry snapshot file", 256 << 20}
	Frame       = Cap{"a sampling frame", 256 << 20}
	Exclusions  = Cap{"an exclusion list", 16 << 20}
	Salt        = Cap{"a salt file", 4 << 10}
	BundleJSON  = Cap{"a bundle's JSON file (manifest.json, summary.json, defaults)", 64 << 20}
	GitMeta     = Cap{"a repository's git metadata file", 16 << 20}
	ScenarioSet = Cap{"a lab scenario set or conformance case", 16 << 20}
)

// Caps lists every cap above, in the order of the table in docs/commands.md.
var Caps = []Cap{Manifest, Prompt, Observation, Corpus, Ledger, Snapshot, Frame, Exclusions, Salt, BundleJSON, GitMeta, ScenarioSet}

// ErrTooLarge marks a file over its cap.
var ErrTooLarge = errors.New("over its cap")

// ErrNotRegular marks a path that is not a regular file (a named pipe, a
// device, a socket, a directory): stress reads its inputs from files, and
// would otherwise wait forever on a pipe nobody writes or read a device
// without end.
var ErrNotRegular = errors.New("not a regular file")

// Size formats n bytes for a message: "1 MiB", "512 MiB", "4 KiB",
// "1.5 MiB", "300 bytes", "1048577 bytes" (a size just over a unit is
// given exactly).
func Size(n int64) string {
	for _, u := range []struct {
		unit string
		b    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.b {
			if n%u.b == 0 {
				return fmt.Sprintf("%d %s", n/u.b, u.unit)
			}
			if s := fmt.Sprintf("%.1f", float64(n)/float64(u.b)); !strings.HasSuffix(s, ".0") {
				return s + " " + u.unit
			}
			return fmt.Sprintf("%d bytes", n) // 1 MiB and 1 byte is not "1.0 MiB"
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

func (c Cap) tooLarge(name string, size int64) error {
	what := "more than " + Size(c.Bytes)
	if size > 0 {
		what = Size(size)
	}
	return fmt.Errorf("%s: %w: %s, and %s holds at most %s", name, ErrTooLarge, what, c.What, Size(c.Bytes))
}

func notRegular(name string, mode fs.FileMode) error {
	return fmtNotRegular(name, kindOf(mode))
}

func fmtNotRegular(name, kind string) error {
	return fmt.Errorf("%s: %w (%s); give a file", name, ErrNotRegular, kind)
}

// kindOf names what a file of mode is, for notRegular.
func kindOf(mode fs.FileMode) string {
	switch {
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case mode&fs.ModeDevice != 0, mode&fs.ModeCharDevice != 0:
		return "a device"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

// ReadFile reads the regular file path whole, within c: a larger file,
// or anything but a regular file, is refused with an error naming path
// and the cap. Opening never blocks (a named pipe is refused, not
// waited on).
func ReadFile(path string, c Cap) ([]byte, error) {
	f, err := openRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, path, c)
}

// ReadFS reads file name of fsys whole, within c, as ReadFile does;
// shown is the name the user knows it by, for the error. The file is
// checked with Stat before it is opened.
func ReadFS(fsys fs.FS, name, shown string, c Cap) ([]byte, error) {
	if fi, err := fs.Stat(fsys, name); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			// Said as the open it stands for.
			return nil, &fs.PathError{Op: "open", Path: shown, Err: pe.Err}
		}
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, notRegular(shown, fi.Mode())
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, WithPath(err, shown)
	}
	defer f.Close()
	return read(f, shown, c)
}

// Open opens the regular file path for a reader that streams it, after
// the checks of ReadFile: a file over c is refused before it is read.
func Open(path string, c Cap) (*os.File, error) {
	f, err := openRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() > c.Bytes {
		err = c.tooLarge(path, fi.Size())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func read(f fs.File, name string, c Cap) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(name, fi.Mode())
	}
	if fi.Size() > c.Bytes {
		return nil, c.tooLarge(name, fi.Size())
	}
	// The file may grow while it is read: read one byte past the cap.
	b := make([]byte, 0, fi.Size()+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > c.Bytes {
			return nil, c.tooLarge(name, 0)
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
