package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/mcpstress/stress/results"
)

// Column names a 0/1 outcome column of the counts table (one of
// results.Columns, by its -json name): a count out of N, so a proportion.
// Extra (a sum of replays) is not a Column.
type Column string

// The outcome columns the analysis names itself (the predeclared pairs),
// as in the -json output.
const (
	Strict     Column = "strict"
	Cover      Column = "cover"
	Retry      Column = "retry"
	Invalid    Column = "invalid"
	AnyFS      Column = "any_fs"
	TerminalFS Column = "terminal_fs"
)

// Columns lists the proportion columns in table order: results.Columns.
var Columns = func() []Column {
	out := make([]Column, len(results.Columns))
	for i := range results.Columns {
		out[i] = Column(results.Columns[i].Name)
	}
	return out
}()

// Selective is the key of selective accuracy, Strict / Cover, among the
// rates; it is not a Column (its denominator is Cover, not N).
const Selective = "selective"

// index is the column's index in results.Columns, or -1.
func (c Column) index() int { return results.ColumnIndex(string(c)) }

// Label is the column's header in the counts table (Strict, AnyFS, TermFS…).
func (c Column) Label() string {
	if i := c.index(); i >= 0 {
		return results.Columns[i].Label
	}
	return string(c)
}

// ParseColumn accepts a column by its -json name (any_fs) or its table
// label (AnyFS), case-insensitively; "terminal_fs" is also "termfs".
func ParseColumn(s string) (Column, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	for _, c := range Columns {
		if k == string(c) || k == strings.ToLower(c.Label()) {
			return c, nil
		}
	}
	if k == "extra" {
		return "", fmt.Errorf("column %q is a sum of replays, not a 0/1 outcome; paired tests need one of %v", s, Columns)
	}
	return "", fmt.Errorf("unknown column %q (want one of %v)", s, Columns)
}

// bit is the column's flag bit in a decision's packed outcome (0 for no
// column).
func (c Column) bit() uint16 {
	if i := c.index(); i >= 0 {
		return 1 << i
	}
	return 0
}

// Packed decision outcome: one bit per column, in results.Columns order,
// then (in the top two bits):
const (
	flagOK   uint16 = 1 << 14 // status ok: the decision is counted
	flagSeen uint16 = 1 << 15 // a row exists (ok or error)
)

// flagsOf packs a row's outcome.
func flagsOf(r *results.Row) uint16 {
	f := flagSeen
	if r.Status != results.StatusOK {
		return f
	}
	f |= flagOK
	for i := range results.Columns {
		if results.Columns[i].Of(r) {
			f |= 1 << i
		}
	}
	return f
}

// rateCounts returns the numerator and denominator of rate key (one of
// RateKeys) in cell c: a column's count out of N, or Strict out of Cover
// for Selective.
func rateCounts(c *results.Cell, key string) (k, n int) {
	if key == Selective {
		return c.Strict, c.Cover
	}
	if i := Column(key).index(); i >= 0 {
		return results.Columns[i].Count(c), c.N
	}
	return 0, c.N
}

// RateSet holds one value per proportion column and for selective
// accuracy, in table order (RateKeys); in JSON an object with those keys.
type RateSet[T any] struct {
	cols      []T // by index in Columns
	Selective T   // Strict / Cover
}

// RateKeys lists the keys of a RateSet in order: the Columns, then
// Selective.
var RateKeys = func() []string {
	out := make([]string, 0, len(Columns)+1)
	for _, c := range Columns {
		out = append(out, string(c))
	}
	return append(out, Selective)
}()

// RateLabel is the display name of a rate key (Strict, …, Strict/Cover).
func RateLabel(key string) string {
	if key == Selective {
		return "Strict/Cover"
	}
	return Column(key).Label()
}

// At returns a pointer to the value of key (one of RateKeys), or nil.
func (s *RateSet[T]) At(key string) *T {
	if key == Selective {
		return &s.Selective
	}
	i := Column(key).index()
	if i < 0 {
		return nil
	}
	if s.cols == nil {
		s.cols = make([]T, len(Columns))
	}
	return &s.cols[i]
}

// MarshalJSON implements json.Marshaler: {"strict":…,…,"selective":…}.
func (s RateSet[T]) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, key := range RateKeys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(key)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(*s.At(key))
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Num is a number in the JSON output: the shortest decimal that reads back
// as the same float64 (as encoding/json prints a float64), and null when it
// is NaN or infinite (undefined, e.g. a rate of an empty cell).
//
// Note: numbers are not rounded, so a p-value of 1.8e-15 is printed as
// such and every value reads back exactly; the text tables round. The last
// digits may differ between CPUs (fused multiply-add, the math package's
// per-architecture code), far below any interval's width.
type Num float64

// MarshalJSON implements json.Marshaler.
func (x Num) MarshalJSON() ([]byte, error) {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// Bounds is an interval [Lo, Hi]; JSON [lo, hi] at full precision (as
// Num), or null when either end is undefined (NaN) or infinite.
type Bounds struct {
	Lo, Hi float64
}

// Defined reports whether both ends are numbers.
func (b Bounds) Defined() bool { return !math.IsNaN(b.Lo) && !math.IsNaN(b.Hi) }

// MarshalJSON implements json.Marshaler.
func (b Bounds) MarshalJSON() ([]byte, error) {
	if !b.Defined() || math.IsInf(b.Lo, 0) || math.IsInf(b.Hi, 0) {
		return []byte("null"), nil
	}
	return json.Marshal([2]float64{b.Lo, b.Hi})
}
