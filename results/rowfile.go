package results

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"reflect"
	"unsafe"

	"github.com/parquet-go/parquet-go"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/simulator"
)

// This file holds decisions.parquet: its layout, derived from Row, its
// readers (ReadRows, ScanRows) and its writer (RowWriter).

// rowLayout is the column layout of decisions.parquet, derived from Row:
// Row's fields with a parquet tag in order, with Outcome spread into one
// column per outcome column (simulator.Columns) in its place: a 0/1 flag
// a required boolean, a lab flag an optional boolean, a lab sum an
// optional int64 (null when the row has no lab outcomes).
var rowLayout = newLayout()

// leaf is one column of the layout: a field of Row (field ≥ 0) or an
// outcome column (col).
type leaf struct {
	name  string
	field int // index of the Row field, -1 for an outcome column
	col   simulator.Col
}

type layout struct {
	schema *parquet.Schema
	leaves []leaf
}

func newLayout() *layout {
	rt := reflect.TypeFor[Row]()
	var fields []reflect.StructField
	l := &layout{}
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Type == reflect.TypeFor[simulator.Values]() {
			for c := range simulator.Columns {
				col := &simulator.Columns[c]
				sf := reflect.StructField{Name: fmt.Sprintf("C%d", c), Type: reflect.TypeFor[bool](), Tag: reflect.StructTag(`parquet:"` + col.Name + `"`)}
				switch col.Kind {
				case simulator.LabFlag:
					sf.Type, sf.Tag = reflect.TypeFor[*bool](), reflect.StructTag(`parquet:"`+col.Name+`,optional"`)
				case simulator.LabSum:
					sf.Type, sf.Tag = reflect.TypeFor[*int64](), reflect.StructTag(`parquet:"`+col.Name+`,optional"`)
				}
				fields = append(fields, sf)
				l.leaves = append(l.leaves, leaf{name: col.Name, field: -1, col: simulator.Col(c)})
			}
			continue
		}
		name := f.Tag.Get("parquet")
		if name == "" || name == "-" {
			continue
		}
		fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag})
		l.leaves = append(l.leaves, leaf{name: name, field: i})
	}
	model := reflect.New(reflect.StructOf(fields)).Interface()
	l.schema = parquet.NewSchema("Row", parquet.SchemaOf(model))
	return l
}

// encode appends row r to buf as a parquet row of the layout.
func (l *layout) encode(buf parquet.Row, r *Row) parquet.Row {
	rv := reflect.ValueOf(r).Elem()
	for j, lf := range l.leaves {
		var v parquet.Value
		if lf.field >= 0 {
			switch f := rv.Field(lf.field); f.Kind() {
			case reflect.String:
				v = parquet.ByteArrayValue(unsafe.Slice(unsafe.StringData(f.String()), f.Len())).Level(0, 0, j) // read, never written
			default:
				v = parquet.Int64Value(f.Int()).Level(0, 0, j)
			}
			buf = append(buf, v)
			continue
		}
		x, ok := r.Outcome.Get(lf.col)
		switch {
		case lf.col.Column().Kind == simulator.Flag:
			v = parquet.BooleanValue(x != 0).Level(0, 0, j)
		case !ok:
			v = parquet.NullValue().Level(0, 0, j)
		case lf.col.Column().Kind == simulator.LabFlag:
			v = parquet.BooleanValue(x != 0).Level(0, 1, j)
		default:
			v = parquet.Int64Value(x).Level(0, 1, j)
		}
		buf = append(buf, v)
	}
	return buf
}

// reader decodes the rows of a decisions.parquet file, whose columns it
// finds by name; a column the file lacks reads as the zero value, except
// a lab flag written before it existed: false for a row with lab
// outcomes (as today's scoring gives such a decision), absent otherwise.
type reader struct {
	leaves  []leaf          // by the file's column index; name "" for a column Row does not know
	missing []simulator.Col // the outcome columns the file lacks
}

func newReader(s *parquet.Schema) *reader {
	byName := map[string]leaf{}
	for _, lf := range rowLayout.leaves {
		byName[lf.name] = lf
	}
	rd := &reader{}
	seen := map[string]bool{}
	for _, path := range s.Columns() {
		lf := byName[path[0]]
		if len(path) != 1 {
			lf = leaf{}
		}
		rd.leaves = append(rd.leaves, lf)
		seen[lf.name] = true
	}
	for _, lf := range rowLayout.leaves {
		if !seen[lf.name] && lf.field < 0 {
			rd.missing = append(rd.missing, lf.col)
		}
	}
	return rd
}

// decode fills r from parquet row pr.
func (rd *reader) decode(pr parquet.Row, r *Row) {
	*r = Row{}
	rv := reflect.ValueOf(r).Elem()
	for _, v := range pr {
		j := v.Column()
		if j < 0 || j >= len(rd.leaves) || rd.leaves[j].name == "" {
			continue
		}
		lf := rd.leaves[j]
		if lf.field >= 0 {
			switch f := rv.Field(lf.field); f.Kind() {
			case reflect.String:
				f.SetString(string(v.ByteArray()))
			default:
				f.SetInt(v.Int64())
			}
			continue
		}
		if v.IsNull() {
			continue
		}
		if lf.col.Column().Kind == simulator.LabSum {
			r.Outcome.Set(lf.col, v.Int64())
		} else {
			r.Outcome.Set(lf.col, b2i(v.Boolean()))
		}
	}
	if r.Lab() {
		for _, c := range rd.missing {
			if c.Column().Kind == simulator.LabFlag {
				r.Outcome.Set(c, 0)
			}
		}
	}
}

// openRows opens file, a decisions.parquet, and the reader of its
// columns; close closes the file.
func openRows(file string) (pf *parquet.File, rd *reader, close func() error, err error) {
	f, err := input.OpenStream(file)
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := f.Stat()
	if err == nil {
		pf, err = parquet.OpenFile(f, st.Size())
		if err != nil {
			err = fmt.Errorf("%s: %w", file, err)
		}
	}
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	return pf, newReader(pf.Schema()), f.Close, nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// ReadRows reads every row of a decisions.parquet file.
func ReadRows(file string) ([]Row, error) {
	var rows []Row
	err := ScanRows(file, func(r *Row) error {
		rows = append(rows, *r)
		return nil
	})
	return rows, err
}

// ScanRows streams the rows of a decisions.parquet file to fn, 1,024 rows
// at a time, so memory stays bounded whatever the file's size. The *Row is
// reused between calls: copy it to keep it. An error from fn stops the scan
// and is returned as is; read errors name the file.
func ScanRows(file string, fn func(*Row) error) error {
	pf, rd, closeFile, err := openRows(file)
	if err != nil {
		return err
	}
	defer closeFile()
	pr := parquet.NewGenericReader[any](pf)
	defer pr.Close()
	buf := make([]parquet.Row, 1024)
	var row Row
	for {
		n, err := pr.ReadRows(buf)
		for i := range buf[:n] {
			rd.decode(buf[i], &row)
			if ferr := fn(&row); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
}

// RowWriter streams decision rows into a decisions.parquet file: rows are
// written in row groups as they come, to a temporary file renamed into
// place by Close, so a reader never sees half a file.
type RowWriter struct {
	file string
	f    *os.File
	pq   *parquet.GenericWriter[any]
	rows []parquet.Row
	inRG int // rows in the current row group
	// sum hashes the bytes written and fp the rows added (Check).
	sum hash.Hash
	fp  Fingerprint
}

// rowBatch is the number of rows handed to parquet-go at once.
const rowBatch = 1024

// rowGroupRows is the number of rows per row group. Note: parquet-go keeps
// a whole row group in memory until it is flushed, so it must be bounded.
const rowGroupRows = 1 << 16

// pageBufferSize is the bytes of values each column gathers before
// parquet-go encodes them as a page. Its default, 256 KiB, held 19 MB
// across this file's columns (their buffers grow by doubling), the largest
// part of a run's memory at its finish; 64 KiB holds 8 MB, for a file 3%
// larger (BenchmarkRowWriter). Smaller pages would cost more than they
// save: the column index parquet-go keeps until Close grows by about 120
// bytes a page.
const pageBufferSize = 64 << 10

// CreateRows starts writing file.
func CreateRows(file string) (*RowWriter, error) {
	f, err := os.Create(file + ".tmp")
	if err != nil {
		return nil, err
	}
	w := &RowWriter{file: file, f: f, sum: sha256.New()}
	w.pq = parquet.NewGenericWriter[any](io.MultiWriter(f, w.sum), rowLayout.schema,
		parquet.Compression(&parquet.Snappy), parquet.PageBufferSize(pageBufferSize))
	return w, nil
}

// Add writes one row.
func (w *RowWriter) Add(r Row) error {
	var buf parquet.Row // the storage of a row written before, reused
	if n := len(w.rows); n < cap(w.rows) {
		buf = w.rows[:n+1][n][:0]
	}
	w.rows = append(w.rows, rowLayout.encode(buf, &r))
	w.fp.Add(&r)

	if len(w.rows) >= rowBatch {
		return w.flush()
	}
	return nil
}

func (w *RowWriter) flush() error {
	if len(w.rows) == 0 {
		return nil
	}
	if _, err := w.pq.WriteRows(w.rows); err != nil {
		return fmt.Errorf("%s: %w", w.file, err)
	}
	w.inRG += len(w.rows)
	w.rows = w.rows[:0]
	if w.inRG >= rowGroupRows {
		w.inRG = 0
		if err := w.pq.Flush(); err != nil {
			return fmt.Errorf("%s: %w", w.file, err)
		}
	}
	return nil
}

// Close finishes the file and renames it into place. It does not fsync:
// decisions.parquet is derived from calls.jsonl, and a crash that leaves
// it empty or stale is what stress run -resume repairs (analysis names
// the command), so the bundle spends its fsyncs on what cannot be rebuilt.
func (w *RowWriter) Close() error {
	err := w.flush()
	err = errors.Join(err, w.pq.Close())
	err = errors.Join(err, w.f.Close())
	if err != nil {
		os.Remove(w.f.Name())
		return err
	}
	return os.Rename(w.f.Name(), w.file)
}

// Check is what to record of the file once closed: its sha256 and the
// fingerprint of its rows.
func (w *RowWriter) Check() ParquetCheck {
	return ParquetCheck{SHA256: hex.EncodeToString(w.sum.Sum(nil)), Rows: w.fp.N, RowsSum: w.fp.Hex()}
}

// Abort discards the file.
func (w *RowWriter) Abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// MissingColumns returns the outcome columns (simulator.Columns) that
// file, a decisions.parquet, lacks: it was written before they existed.
// Its rows read without them (see ScanRows), so compare them with rows
// scored today only Without those columns.
func MissingColumns(file string) ([]simulator.Col, error) {
	_, rd, closeFile, err := openRows(file)
	if err != nil {
		return nil, err
	}
	closeFile()
	return rd.missing, nil
}

// Without returns r with the columns cols cleared: 0 for a Flag column,
// absent for a lab column.
func (r Row) Without(cols []simulator.Col) Row {
	for _, c := range cols {
		r.Outcome.Clear(c)
	}
	return r
}
