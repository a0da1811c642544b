package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
)

// The outcome columns are simulator.Columns, named by simulator.Col:
// a 0/1 column (simulator.Flag or simulator.LabFlag) is a count out of its
// denominator, so a proportion, and can be paired; a lab sum
// (simulator.LabSum: calls, lab_ms) has a mean but no pairs. Extra (a sum
// of replays) is not a column.

// pairColumns lists the 0/1 columns in table order: those of
// simulator.Columns that are proportions and can be paired. The lab ones
// (recovered, harm) have values only for decisions with lab outcomes
// (replay: live).
var pairColumns = func() []simulator.Col {
	var out []simulator.Col
	for i := range simulator.Columns {
		if simulator.Columns[i].Kind != simulator.LabSum {
			out = append(out, simulator.Col(i))
		}
	}
	return out
}()

// ColumnList is the names of the 0/1 columns, comma-separated, for help
// texts.
func ColumnList() string {
	names := make([]string, len(pairColumns))
	for i, c := range pairColumns {
		names[i] = c.String()
	}
	return strings.Join(names, ", ")
}

// selective is the key of selective accuracy, Strict / Cover, among the
// rates; it is not a column (its denominator is Cover, not N).
const selective = "selective"

// valid reports whether c names a column of simulator.Columns.
func valid(c simulator.Col) bool { return c >= 0 && c < simulator.NumColumns }

// isLab reports whether c is one of the lab columns, which only decisions
// with lab outcomes (replay: live) have.
func isLab(c simulator.Col) bool { return valid(c) && c.Column().Kind.Lab() }

// isSum reports whether c is a lab sum (calls, lab_ms): its rate is a
// mean per decision, not a proportion.
func isSum(c simulator.Col) bool { return valid(c) && c.Column().Kind == simulator.LabSum }

// ParseColumn accepts a 0/1 column by its -json name (any_fs) or its table
// label (AnyFS), case-insensitively; "terminal_fs" is also "termfs".
func ParseColumn(s string) (simulator.Col, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	for _, c := range pairColumns {
		if k == c.Column().Name || k == strings.ToLower(c.Column().Label) {
			return c, nil
		}
	}
	for i := range simulator.Columns {
		if c := &simulator.Columns[i]; c.Kind == simulator.LabSum && (k == c.Name || k == strings.ToLower(c.Label)) {
			return -1, fmt.Errorf("column %q is a sum (%s), not a 0/1 outcome; paired tests need one of %v", s, c.Doc, pairColumns)
		}
	}
	if k == "extra" {
		return -1, fmt.Errorf("column %q is a sum of replays, not a 0/1 outcome; paired tests need one of %v", s, pairColumns)
	}
	return -1, fmt.Errorf("unknown column %q (want one of %v)", s, pairColumns)
}

// colBit is column c's flag bit in a decision's packed outcome (0 for a
// lab sum or no column).
func colBit(c simulator.Col) results.Flags {
	if valid(c) {
		return results.FlagBit(c)
	}
	return 0
}

// colNeed is the bits both decisions of a pair must have for column c to
// be compared: counted, and for a lab column, with lab outcomes.
func colNeed(c simulator.Col) results.Flags {
	if valid(c) {
		return results.Need(c)
	}
	return results.FlagOK
}

// rateCounts returns the numerator and denominator of rate key (one of
// rateKeys) in cell c: a column's count (or sum) out of its denominator
// (N, or LabN for a lab column), or Strict out of Cover for Selective.
func rateCounts(c *results.Cell, key string) (k, n int) {
	if key == selective {
		return c.Count(simulator.Strict), c.Count(simulator.Cover)
	}
	if i := simulator.ColumnIndex(key); i >= 0 {
		return c.Count(i), c.Denominator(i)
	}
	return 0, c.N
}

// hasRate reports whether cell c has rate key: every cell has the
// columns of every decision and selective accuracy; only a cell with lab
// outcomes has the lab columns.
func hasRate(c *results.Cell, key string) bool {
	return !isLab(simulator.ColumnIndex(key)) || c.LabN > 0
}

// RateSet holds one value per rate key that a cell has (rateKeys, in
// order): a proportion per 0/1 column, a mean per lab sum, and selective
// accuracy; in JSON an object with the keys that are set.
type RateSet[T any] struct {
	cols      []T    // by index in simulator.Columns
	has       []bool // which cols are set
	Selective T      // Strict / Cover
}

// rateKeys lists the keys a RateSet may hold, in order: every column of
// simulator.Columns (the lab ones only for cells with lab outcomes), then
// Selective.
var rateKeys = func() []string {
	out := make([]string, 0, len(simulator.Columns)+1)
	for i := range simulator.Columns {
		out = append(out, simulator.Columns[i].Name)
	}
	return append(out, selective)
}()

// RateKeysOf lists the rate keys that some of cells has, in order.
func RateKeysOf(cells []CellStats) []string {
	var out []string
	for _, key := range rateKeys {
		if slices.ContainsFunc(cells, func(c CellStats) bool { return c.Rates.At(key) != nil }) {
			out = append(out, key)
		}
	}
	return out
}

// RateLabel is the display name of a rate key (Strict, …, Strict/Cover).
func RateLabel(key string) string {
	if key == selective {
		return "Strict/Cover"
	}
	if i := simulator.ColumnIndex(key); i >= 0 {
		return i.Column().Label
	}
	return key
}

// FormatRate formats a value of rate key for people: a proportion in
// percent with one decimal (Pct), the mean of a lab sum with two
// decimals; "—" when undefined.
func FormatRate(key string, x float64) string {
	if isSum(simulator.ColumnIndex(key)) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "—"
		}
		return fmt.Sprintf("%.2f", x)
	}
	return Pct(x)
}

// Set sets the value of key (one of rateKeys); an unknown key is ignored.
func (s *RateSet[T]) Set(key string, v T) {
	if key == selective {
		s.Selective = v
		return
	}
	i := simulator.ColumnIndex(key)
	if i < 0 {
		return
	}
	if s.cols == nil {
		s.cols = make([]T, len(simulator.Columns))
		s.has = make([]bool, len(simulator.Columns))
	}
	s.cols[i], s.has[i] = v, true
}

// At returns a pointer to the value of key (one of rateKeys), or nil when
// the set does not hold it (an unknown key, or a lab column of a cell
// without lab outcomes). Selective is always held.
func (s *RateSet[T]) At(key string) *T {
	if key == selective {
		return &s.Selective
	}
	i := simulator.ColumnIndex(key)
	if i < 0 || s.has == nil || !s.has[i] {
		return nil
	}
	return &s.cols[i]
}

// MarshalJSON implements json.Marshaler: {"strict":…,…,"selective":…},
// the keys the set holds in rateKeys order.
func (s RateSet[T]) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for _, key := range rateKeys {
		if s.At(key) == nil {
			continue
		}
		if b.Len() > 1 {
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
