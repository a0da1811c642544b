// Package window reads byte ranges of a file through a read-ahead buffer:
// the ranges of a bundle's decisions are read mostly in the order of their
// offsets, and one read then serves many of them.
package window

import (
	"cmp"
	"fmt"
	"io"
	"os"
)

// Reader reads ranges of F. Its buffer grows (up to 4 MiB) while reads keep
// landing in it and shrinks when they do not, so that scattered ranges do
// not each cost a large read.
type Reader struct {
	F *os.File
	// Limit is the largest read (0: 4 MiB).
	Limit int

	buf []byte
	off int64 // the file offset of buf[0]
	n   int   // bytes of buf read
	// size is the next read's length, hits the ranges served by the
	// current buffer.
	size, hits int
}

// Min and Max bound a Reader's reads.
const (
	minRead = 64 << 10
	maxRead = 4 << 20
)

// Slice returns the size bytes at off, valid until the next call.
func (r *Reader) Slice(off, size int64) ([]byte, error) {
	if off >= r.off && off+size <= r.off+int64(r.n) {
		r.hits++
		return r.buf[off-r.off : off-r.off+size], nil
	}
	hi := cmp.Or(r.Limit, maxRead)
	lo := min(minRead, hi)
	switch {
	case r.size == 0:
		r.size = lo
	case r.hits >= 4:
		r.size = min(2*r.size, hi)
	default:
		r.size = max(r.size/2, lo)
	}
	r.hits = 0
	need := max(int(size), r.size)
	if cap(r.buf) < need {
		r.buf = make([]byte, need)
	}
	n, err := r.F.ReadAt(r.buf[:need], off)
	r.off, r.n = off, n
	if int64(n) < size {
		r.n = 0
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%s: reading %d bytes at %d: %w", r.F.Name(), size, off, err)
	}
	return r.buf[:size], nil
}
