package runner

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/mcpstress/stress/results"
)

// recSize is the bytes of one locTable record: loc (off 8, size 4, file 4)
// and outcome (20: status and ok, label, turns, replays, flags 4, events
// 2, 2 unused, then the two lab sums).
// Note: the record is placed by hand. Encoded by encoding/binary from a
// struct instead, a 200,040-decision stress run took 5 to 7% more CPU
// (3.16 to 3.25 s against 2.87 to 3.09, three interleaved runs,
// 2026-12-03), on the run time the README states (issue 48's rule keeps a
// hand codec where it moves such a figure).
const recSize = 36

// locTable maps shard-local decision indexes to where their lines are and,
// for decisions run in this session, their packed outcome. It lives in an
// unlinked temporary file beside the bundle, so a run's memory does not
// grow with the number of decisions (the page cache holds what is hot).
// Note: kept in memory instead, it doubled the peak heap of a
// 1,000,200-decision run (BenchmarkSynth: 121 to 124 MiB against 58 to
// 60, 2026-12-01). Reads and writes of different records may run concurrently. A read or
// write failure is kept and reported by Err.
type locTable struct {
	f indexStore
	n int

	mu      sync.Mutex
	err     error
	pending map[int][recSize]byte // writes not yet in the file, by index
}

// maxPending is the number of buffered writes that triggers a flush.
// Note: a run writes records in nearly increasing index order, so a flush
// coalesces them into few large writes instead of one syscall each.
const maxPending = 4096

// indexStore holds a locTable's records: an unlinked temporary file, or
// memory for a small table.
type indexStore interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
}

// memIndexMax is the largest table kept in memory (32,768 decisions).
// Note: a file created and unlinked costs a one-decision run more than
// the run's own work on some file systems (ext4 skips recently deleted
// inodes when it allocates one).
const memIndexMax = 1 << 20

// memStore is an indexStore in memory.
type memStore []byte

func (m memStore) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m)) {
		return 0, io.EOF
	}
	n := copy(p, m[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m memStore) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(m)) {
		return 0, fmt.Errorf("write of %d bytes at %d past the table's %d", len(p), off, len(m))
	}
	return copy(m[off:], p), nil
}

func (memStore) Close() error { return nil }

// newLocTable makes a table of n empty records: in memory when small,
// else in a temporary file in dir.
func newLocTable(dir string, n int) (*locTable, error) {
	if size := int64(n) * recSize; size <= memIndexMax {
		return &locTable{f: make(memStore, size), n: n, pending: map[int][recSize]byte{}}, nil
	}
	f, err := os.CreateTemp(dir, ".index-*")
	if err != nil {
		return nil, fmt.Errorf("decision index: %w", err)
	}
	// Note: unlinked at once; the open file lives until Close, and a crash
	// leaves nothing behind.
	os.Remove(f.Name())
	if err := f.Truncate(int64(n) * recSize); err != nil {
		f.Close()
		return nil, fmt.Errorf("decision index: %w", err)
	}
	return &locTable{f: f, n: n, pending: map[int][recSize]byte{}}, nil
}

// Len is the number of records.
func (t *locTable) Len() int { return t.n }

// Close releases the file.
func (t *locTable) Close() error { return t.f.Close() }

// Err returns the first read or write failure.
func (t *locTable) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *locTable) fail(err error) {
	t.mu.Lock()
	if t.err == nil {
		t.err = fmt.Errorf("decision index: %w", err)
	}
	t.mu.Unlock()
}

// get returns record j's location (empty on a read failure, see Err).
func (t *locTable) get(j int) loc {
	t.mu.Lock()
	b, ok := t.pending[j]
	t.mu.Unlock()
	if !ok {
		if _, err := t.f.ReadAt(b[:], int64(j)*recSize); err != nil {
			t.fail(err)
			return loc{}
		}
	}
	l, _ := decodeRec(b[:])
	return l
}

// put stores record j (buffered; see flush).
func (t *locTable) put(j int, l loc, o outcome) {
	var b [recSize]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(l.off))
	binary.LittleEndian.PutUint32(b[8:], l.size)
	binary.LittleEndian.PutUint32(b[12:], uint32(l.file))
	b[16] = o.status | boolByte(o.ok)<<7
	b[17], b[18], b[19] = o.label, o.turns, o.replays
	binary.LittleEndian.PutUint32(b[20:], uint32(o.flags))
	binary.LittleEndian.PutUint16(b[24:], o.events)
	binary.LittleEndian.PutUint32(b[28:], o.sums[0])
	binary.LittleEndian.PutUint32(b[32:], o.sums[1])
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending[j] = b
	if len(t.pending) >= maxPending {
		t.flushLocked()
	}
}

// flushLocked writes the buffered records, one write per run of
// consecutive indexes. t.mu is held.
func (t *locTable) flushLocked() {
	if len(t.pending) == 0 {
		return
	}
	js := make([]int, 0, len(t.pending))
	for j := range t.pending {
		js = append(js, j)
	}
	slices.Sort(js)
	run := make([]byte, 0, len(js)*recSize)
	start := js[0]
	for k, j := range js {
		b := t.pending[j]
		run = append(run, b[:]...)
		if k == len(js)-1 || js[k+1] != j+1 {
			if _, err := t.f.WriteAt(run, int64(start)*recSize); err != nil && t.err == nil {
				t.err = fmt.Errorf("decision index: %w", err)
			}
			run = run[:0]
			if k < len(js)-1 {
				start = js[k+1]
			}
		}
	}
	clear(t.pending)
}

func decodeRec(b []byte) (loc, outcome) {
	l := loc{off: int64(binary.LittleEndian.Uint64(b[0:])), size: binary.LittleEndian.Uint32(b[8:]), file: int32(binary.LittleEndian.Uint32(b[12:]))}
	o := outcome{ok: b[16]>>7 == 1, status: b[16] & 0x7f, label: b[17], turns: b[18], replays: b[19],
		flags: results.Flags(binary.LittleEndian.Uint32(b[20:])), events: binary.LittleEndian.Uint16(b[24:]),
		sums: [2]uint32{binary.LittleEndian.Uint32(b[28:]), binary.LittleEndian.Uint32(b[32:])}}
	return l, o
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// done returns the number of records of done decisions.
func (t *locTable) done() (int, error) {
	n := 0
	err := t.each(func(_ int, l loc, _ outcome) error {
		if l.done() {
			n++
		}
		return nil
	})
	return n, err
}

// each calls fn for every record in index order, reading the file
// sequentially; it stops at fn's first error.
func (t *locTable) each(fn func(j int, l loc, o outcome) error) error {
	t.mu.Lock()
	t.flushLocked()
	t.mu.Unlock()
	if err := t.Err(); err != nil {
		return err
	}
	r := bufio.NewReaderSize(io.NewSectionReader(t.f, 0, int64(t.n)*recSize), 1<<16)
	var b [recSize]byte
	for j := 0; j < t.n; j++ {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return fmt.Errorf("decision index: %w", err)
		}
		l, o := decodeRec(b[:])
		if err := fn(j, l, o); err != nil {
			return err
		}
	}
	return nil
}
