package analysis

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/mcpstress/stress/internal/window"
	"github.com/mcpstress/stress/results"
)

// This file holds what the pairing reads of each row, in bounded memory:
// one record a row (its arm, condition, scenario, server, replicate and
// packed outcome), kept in arrival order in memory up to spillAt records
// and beyond that in an unlinked temporary file, so that analysis memory
// does not grow with the study. The rows of a finished bundle come cell
// by cell, each cell's rows ordered by scenario and replicate: a
// comparison is then a merge of two cells' records read from the file
// (joinPairing). Rows in any other order (a partial bundle, rows
// repeated) are paired through the in-memory table built from the same
// records (Accumulator.table).

// unitRecord is what the pairing reads of one row.
type unitRecord struct {
	group, scenario, server int32
	cond                    int8
	replicate               int64
	flags                   results.Flags
}

// spillRecord is a unitRecord as the log holds it (encoding/binary,
// little-endian, recordSize bytes). Note: a hand-written encoding of the
// same bytes saved stress analyze of 1,000,200 decisions 2 to 4% of its
// CPU (2.57 to 2.75 s against 2.65 to 2.82, 2026-12-03), too little to
// keep, though encoding/binary takes about 140 ns a record to encode and
// 100 to decode against 12 by hand (BenchmarkAnalyze1M's pairing step
// takes 0.12 to 0.19 s instead of 0.04).
type spillRecord struct {
	Group, Scenario, Server int32
	Flags                   results.Flags
	Replicate               int64
	Cond                    int8
}

// recordSize is the bytes of an encoded unitRecord:
// binary.Size(spillRecord{}).
const recordSize = 25

func (r *unitRecord) encode(b []byte) error {
	w := spillRecord{r.group, r.scenario, r.server, r.flags, r.replicate, r.cond}
	_, err := binary.Encode(b, binary.LittleEndian, &w)
	return err
}

func (r *unitRecord) decode(b []byte) error {
	var w spillRecord
	if _, err := binary.Decode(b, binary.LittleEndian, &w); err != nil {
		return err
	}
	*r = unitRecord{group: w.Group, scenario: w.Scenario, server: w.Server, cond: w.Cond, replicate: w.Replicate, flags: w.Flags}
	return nil
}

// spillAt is the records a recordLog keeps in memory before it writes
// them to its file (6.25 MiB).
var spillAt = 1 << 18

// recordLog holds the records of the rows added, in order.
type recordLog struct {
	mem     []byte   // encoded records not yet in the file
	f       *os.File // the unlinked temporary file, nil until the first spill
	written int64    // records in the file
	// inMemory says no temporary file could be made: the records stay
	// in memory, which then grows with the study.
	inMemory bool
	err      error // the first write failure
	seal     sync.Once
}

// add appends r.
func (l *recordLog) add(r *unitRecord) {
	if l.err != nil {
		return
	}
	if len(l.mem) >= spillAt*recordSize && !l.inMemory {
		l.spill()
	}
	n := len(l.mem)
	l.mem = slices.Grow(l.mem, recordSize)[:n+recordSize]
	if err := r.encode(l.mem[n:]); err != nil {
		l.err = fmt.Errorf("the analysis' record: %w", err)
	}
}

// len is the number of records added.
func (l *recordLog) len() int64 { return l.written + int64(len(l.mem)/recordSize) }

// spill writes the records in memory to the file, creating it first.
func (l *recordLog) spill() {
	if l.f == nil {
		f, err := os.CreateTemp("", "stress-analysis-*")
		if err != nil {
			l.inMemory = true // slower to run out of, and the analysis stands
			return
		}
		os.Remove(f.Name()) // the file lives while it is open
		// Note: an Accumulator has no Close: an *os.File closes itself
		// once unreachable.
		l.f = f
	}
	if _, err := l.f.WriteAt(l.mem, l.written*recordSize); err != nil {
		l.err = fmt.Errorf("the analysis' temporary file: %w", err)
		return
	}
	l.written += int64(len(l.mem) / recordSize)
	l.mem = l.mem[:0]
}

// sealed ends the adding: what is in memory goes to the file when there
// is one, so that readers read one or the other. It is safe to call from
// several goroutines; no record may be added after it.
func (l *recordLog) sealed() error {
	l.seal.Do(func() {
		if l.f != nil && len(l.mem) > 0 {
			l.spill()
		}
	})
	return l.err
}

// reader returns a reader of records [from, to), after sealed.
func (l *recordLog) reader(from, to int64) *recordReader {
	rr := &recordReader{log: l, at: from, to: to}
	if l.f != nil {
		rr.win = &window.Reader{F: l.f, Limit: 256 << 10}
	}
	return rr
}

// recordReader reads records in order.
type recordReader struct {
	log     *recordLog
	win     *window.Reader
	at, to  int64
	current unitRecord
	err     error
}

// next reads the next record into current; false at the end or on an
// error (err).
func (r *recordReader) next() bool {
	if r.at >= r.to || r.err != nil {
		return false
	}
	var b []byte
	if r.win == nil {
		b = r.log.mem[r.at*recordSize : (r.at+1)*recordSize]
	} else if b, r.err = r.win.Slice(r.at*recordSize, recordSize); r.err != nil {
		return false
	}
	if r.err = r.current.decode(b); r.err != nil {
		return false
	}
	r.at++
	return true
}

// block is the records [from, to) of one (arm, condition) of the rows,
// when they came together.
type block struct {
	key      blockKey
	from, to int64
	// lastScenario and lastRep are the last record's, for the order check.
	lastScenario int32
	lastRep      int64
}

// blockKey names a block: an arm and a condition index.
type blockKey struct {
	group int32
	cond  int8
}

// recordIndex says where each block's records are and whether every
// block can be merged: its records came together, in increasing
// (scenario, replicate) order, and every scenario's rows name one server.
type recordIndex struct {
	blocks    map[blockKey]*block
	cur       *block  // the last record's
	server    []int32 // by scenario id: the server of its rows; -1 none yet
	mergeable bool
}

// note records that record i is r.
func (x *recordIndex) note(i int64, r *unitRecord) {
	if x.blocks == nil {
		x.blocks, x.mergeable = map[blockKey]*block{}, true
	}
	for int(r.scenario) >= len(x.server) {
		x.server = append(x.server, -1)
	}
	switch srv := x.server[r.scenario]; {
	case srv < 0:
		x.server[r.scenario] = r.server
	case srv != r.server:
		x.mergeable = false
	}
	k := blockKey{r.group, r.cond}
	if x.cur == nil || k != x.cur.key {
		if _, seen := x.blocks[k]; seen {
			x.mergeable = false // the cell's rows came apart
		}
		x.cur = &block{key: k, from: i, lastScenario: r.scenario, lastRep: r.replicate}
		x.blocks[k] = x.cur
	} else if r.scenario < x.cur.lastScenario || (r.scenario == x.cur.lastScenario && r.replicate <= x.cur.lastRep) {
		x.mergeable = false
	}
	x.cur.to = i + 1
	x.cur.lastScenario, x.cur.lastRep = r.scenario, r.replicate
}
