package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/mcpstress/stress/results"
)

// Column names a 0/1 column of the counts table: a count out of N, so a
// proportion. Extra (a sum of replays) is not a Column.
type Column string

// The proportion columns, named as in the -json output.
const (
	Strict     Column = "strict"
	Cover      Column = "cover"
	Retry      Column = "retry"
	Invalid    Column = "invalid"
	AnyFS      Column = "any_fs"
	TerminalFS Column = "terminal_fs"
)

// Columns lists the proportion columns in table order.
var Columns = []Column{Strict, Cover, Retry, Invalid, AnyFS, TerminalFS}

// Selective is the key of selective accuracy, Strict / Cover, among the
// rates; it is not a Column (its denominator is Cover, not N).
const Selective = "selective"

var columnLabels = map[Column]string{
	Strict: "Strict", Cover: "Cover", Retry: "Retry", Invalid: "Invalid", AnyFS: "AnyFS", TerminalFS: "TermFS",
}

// Label is the column's header in the counts table (Strict, AnyFS, TermFS…).
func (c Column) Label() string {
	if l, ok := columnLabels[c]; ok {
		return l
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

// bit is the column's flag bit in a decision's packed outcome.
func (c Column) bit() uint8 {
	for i, x := range Columns {
		if x == c {
			return 1 << i
		}
	}
	return 0
}

// Packed decision outcome: one bit per Column, in Columns order, then:
const (
	flagOK   uint8 = 1 << 6 // status ok: the decision is counted
	flagSeen uint8 = 1 << 7 // a row exists (ok or error)
)

// flagsOf packs a row's outcome.
func flagsOf(r *results.Row) uint8 {
	f := flagSeen
	if r.Status != results.StatusOK {
		return f
	}
	f |= flagOK
	for i, b := range [...]bool{r.Strict, r.Cover, r.Retry, r.Invalid, r.AnyFS, r.TerminalFS} {
		if b {
			f |= 1 << i
		}
	}
	return f
}

// cellCount returns cell c's count of column col.
func cellCount(c *results.Cell, col Column) int {
	switch col {
	case Strict:
		return c.Strict
	case Cover:
		return c.Cover
	case Retry:
		return c.Retry
	case Invalid:
		return c.Invalid
	case AnyFS:
		return c.AnyFS
	case TerminalFS:
		return c.TerminalFS
	}
	return 0
}

// RateSet holds one value per proportion column and for selective
// accuracy, in table order.
type RateSet[T any] struct {
	Strict     T `json:"strict"`
	Cover      T `json:"cover"`
	Retry      T `json:"retry"`
	Invalid    T `json:"invalid"`
	AnyFS      T `json:"any_fs"`
	TerminalFS T `json:"terminal_fs"`
	Selective  T `json:"selective"` // Strict / Cover
}

// RateKeys lists the keys of a RateSet in order: the Columns, then
// Selective.
var RateKeys = []string{string(Strict), string(Cover), string(Retry), string(Invalid), string(AnyFS), string(TerminalFS), Selective}

// RateLabel is the display name of a rate key (Strict, …, Strict/Cover).
func RateLabel(key string) string {
	if key == Selective {
		return "Strict/Cover"
	}
	return Column(key).Label()
}

// At returns a pointer to the value of key (one of RateKeys), or nil.
func (s *RateSet[T]) At(key string) *T {
	switch key {
	case string(Strict):
		return &s.Strict
	case string(Cover):
		return &s.Cover
	case string(Retry):
		return &s.Retry
	case string(Invalid):
		return &s.Invalid
	case string(AnyFS):
		return &s.AnyFS
	case string(TerminalFS):
		return &s.TerminalFS
	case Selective:
		return &s.Selective
	}
	return nil
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
