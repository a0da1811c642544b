// Package readers holds the readers of a system's state behind
// statediff.Reader, each writing its part of the document the diff
// reads: Dir (a directory's files and directories), MemoryFile (the
// reference memory server's JSONL graph) and SQL (declared tables of a
// database, with OpenSQL to open PostgreSQL and SQLite). Each reads
// within caps and names in its capped what it left out; none follows a
// symbolic link or opens anything but a regular file.
package readers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unicode/utf8"

	"github.com/mcpstress/stress/statediff"
)

// The caps of the file readers: what a state holds at most.
const (
	MaxFileBytes    = 1 << 20  // bytes of one file (or the memory file) read
	MaxStateBytes   = 16 << 20 // bytes of every file of a state read together (Budget)
	MaxStateEntries = 10_000   // entries of a directory (Dir) recorded
)

// Budget is the bytes of file content the readers of one state may still
// read together: a state read by several readers gives them one Budget,
// made afresh for each read. It is not safe for concurrent use.
type Budget struct{ left int64 }

// NewBudget returns a budget of n bytes.
func NewBudget(n int64) *Budget { return &Budget{left: n} }

// Left returns the bytes left.
func (b *Budget) Left() int64 { return b.left }

// limit returns how much of one file may be read.
func (b *Budget) limit() int64 { return min(MaxFileBytes, max(b.left, 0)) }

// budget returns b, or a budget of MaxStateBytes for one read when b is
// nil.
func budget(b *Budget) *Budget {
	if b == nil {
		return NewBudget(MaxStateBytes)
	}
	return b
}

var (
	_ statediff.Reader = (*Dir)(nil)
	_ statediff.Reader = (*MemoryFile)(nil)
)

// Dir reads a directory's tree into doc["files"] and doc["directories"],
// each an array of records keyed by path (relative to Root, with a
// leading /, the root itself left out):
//
//	{"path": "/notes/a.md", "content": "…", "size": 12}
//	    a regular file: its content (at most MaxFileBytes of it, within
//	    the Budget; "truncated": true then says the rest was left out and
//	    size is the whole file's), invalid UTF-8 replaced as encoding/json
//	    does
//	{"path": "/link", "content": "", "size": 0, "link": "/target"}
//	    a symbolic link, with its target, never followed
//	{"path": "/pipe", "content": "", "size": 0, "kind": "fifo"}
//	    any other entry (fifo, socket, device, other), never opened
//	{"path": "/notes"}
//	    a directory (in "directories")
//
// At most MaxStateEntries entries are recorded. An entry that cannot be
// read is an error naming its path.
type Dir struct {
	Root string // the directory read
	// Name names the directory in capped ("" for "the directory").
	Name string
	// Hide rewrites a path shown outside: a link's target and the path in
	// an error (nil: shown as it is), so that a sandbox's real location
	// does not leak into the state.
	Hide func(string) string
	// Budget is the bytes left for the state's files, shared with the
	// state's other readers (nil: MaxStateBytes for this read alone).
	Budget *Budget
}

// Read implements statediff.Reader.
func (r *Dir) Read(ctx context.Context, doc map[string]any) ([]string, error) {
	hide := r.Hide
	if hide == nil {
		hide = func(s string) string { return s }
	}
	name := r.Name
	if name == "" {
		name = "the directory"
	}
	b := budget(r.Budget)
	files, dirs := []any{}, []any{}
	var capped []string
	entries := 0
	err := filepath.WalkDir(r.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", hide(p), err)
		}
		if p == r.Root {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.Root, p)
		path := "/" + filepath.ToSlash(rel)
		if entries++; entries > MaxStateEntries {
			capped = append(capped, fmt.Sprintf("more than %d entries in %s: the rest were not read", MaxStateEntries, name))
			return fs.SkipAll
		}
		rec := map[string]any{"path": validUTF8(path), "content": "", "size": float64(0)}
		switch t := d.Type(); {
		case t.IsDir():
			dirs = append(dirs, map[string]any{"path": validUTF8(path)})
			return nil
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if target = validUTF8(hide(target)); target != "" {
				rec["link"] = target
			}
		case t.IsRegular():
			content, size, err := ReadCapped(p, b.limit())
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			b.left -= int64(len(content))
			rec["content"], rec["size"] = validUTF8(string(content)), float64(size)
			if int64(len(content)) < size {
				rec["truncated"] = true
				capped = append(capped, fmt.Sprintf("%s: %d of its %d bytes read", path, len(content), size))
			}
		default:
			rec["kind"] = KindOf(t)
		}
		files = append(files, rec)
		return nil
	})
	if err != nil {
		return capped, err
	}
	doc["files"], doc["directories"] = files, dirs
	return capped, nil
}

// MemoryFile reads the reference memory server's file (JSONL, one entity
// or relation a line, as server-memory writes it) into doc["memory"]:
// {"entities": [...], "relations": [...]}, each record the line's object
// (lines of another type are left out). A missing file is an empty
// graph; a file that is not a regular file, or a line that is not a JSON
// object, is an error naming the memory file. A file larger than
// MaxFileBytes (or the Budget left) is read up to its last whole line.
type MemoryFile struct {
	Path string // the memory file
	// Budget is the bytes left for the state's files, shared with the
	// state's other readers (nil: MaxStateBytes for this read alone).
	Budget *Budget
}

// Read implements statediff.Reader.
func (r *MemoryFile) Read(ctx context.Context, doc map[string]any) ([]string, error) {
	entities, relations := []any{}, []any{}
	doc["memory"] = map[string]any{"entities": entities, "relations": relations}
	fi, err := os.Lstat(r.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the memory file %s is not a regular file (%s)", filepath.Base(r.Path), fi.Mode().Type())
	}
	bud := budget(r.Budget)
	b, size, err := ReadCapped(r.Path, min(MaxFileBytes, bud.left))
	if err != nil {
		return nil, fmt.Errorf("the memory file: %w", err)
	}
	bud.left -= int64(len(b))
	var capped []string
	if int64(len(b)) < size {
		capped = append(capped, fmt.Sprintf("the memory file: %d of its %d bytes read", len(b), size))
		b = b[:bytes.LastIndexByte(b, '\n')+1] // whole records only
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			return capped, fmt.Errorf("the memory file, line %d: not a JSON object: %v", i+1, err)
		}
		switch rec["type"] {
		case "entity":
			entities = append(entities, rec)
		case "relation":
			relations = append(relations, rec)
		}
	}
	doc["memory"] = map[string]any{"entities": entities, "relations": relations}
	return capped, nil
}

// ReadCapped reads at most limit bytes of the regular file p, refusing to
// follow a symbolic link or to block on anything but a regular file, and
// returns them with the file's size.
func ReadCapped(p string, limit int64) ([]byte, int64, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, max(limit, 0)))
	return b, max(fi.Size(), int64(len(b))), err
}

// KindOf names a directory entry that is neither a file, a directory nor
// a link: fifo, socket, device or other.
func KindOf(t fs.FileMode) string {
	switch {
	case t&fs.ModeNamedPipe != 0:
		return "fifo"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	}
	return "other"
}

// validUTF8 replaces each byte of s that is not valid UTF-8 with U+FFFD,
// as encoding/json does when it writes a string, so that the document
// holds what a JSON round trip of it would.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return string(out)
}
