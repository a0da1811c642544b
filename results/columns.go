package results

import (
	"fmt"
	"slices"

	"github.com/mcpstress/stress/simulator"
)

// Flags packs a counted row's 0/1 outcome columns (simulator.Flag and
// LabFlag) and its status into 32 bits: bit FlagBit(c) for each such
// column c set, then the status in the top two bits: none (no row),
// FlagLab alone (an error row), FlagOK (counted), or FlagOK and FlagLab
// (counted, with lab outcomes). So FlagOK|FlagLab is what a lab column
// needs, FlagOK what any column needs, and either bit says a row exists.
// The runner keeps a decision's outcome this way until finalize, and the
// analysis its pairs.
type Flags uint32

// Status bits of Flags.
const (
	FlagLab  Flags = 1 << 30 // with FlagOK: the row has lab outcomes (live replay); alone: an error row
	FlagOK   Flags = 1 << 31 // status ok: the decision is counted
	FlagSeen       = FlagOK | FlagLab
)

// FlagBit returns the bit of column c in Flags, 0 for a lab sum.
func FlagBit(c simulator.Col) Flags { return flagBits[c] }

// flagBits numbers the 0/1 columns in order below the status bits.
var flagBits = func() (out [simulator.NumColumns]Flags) {
	n := 0
	for c := range simulator.Columns {
		if simulator.Columns[c].Kind == simulator.LabSum {
			continue
		}
		if n == 30 {
			panic(fmt.Sprintf("results: more than 30 0/1 outcome columns do not fit in Flags (column %s)", simulator.Columns[c].Name))
		}
		out[c] = 1 << n
		n++
	}
	return out
}()

// FlagsOf packs row r.
func FlagsOf(r *Row) Flags {
	if r.Status != StatusOK {
		return FlagLab
	}
	f := FlagOK
	if r.Lab() {
		f |= FlagLab
	}
	for c := range simulator.Columns {
		if r.Outcome.Of(simulator.Col(c)) {
			f |= flagBits[c]
		}
	}
	return f
}

// Need is the status bits both rows of a pair must have for column c to
// be compared: counted, and for a lab column, with lab outcomes.
func Need(c simulator.Col) Flags {
	if c.Column().Kind.Lab() {
		return FlagOK | FlagLab
	}
	return FlagOK
}

// SetFlags sets the 0/1 columns of r from f: every Flag column, and with
// FlagLab every LabFlag column too (the lab sums are left as they are).
func (r *Row) SetFlags(f Flags) {
	for c := range simulator.Columns {
		if k := simulator.Columns[c].Kind; k == simulator.Flag || k == simulator.LabFlag && f&FlagLab != 0 {
			r.Outcome.Set(simulator.Col(c), b2i(f&flagBits[c] != 0))
		}
	}
}

// HasLab reports whether any of cells has decisions with lab outcomes;
// the lab columns are shown only then.
func HasLab(cells []Cell) bool {
	return slices.ContainsFunc(cells, func(c Cell) bool { return c.LabN > 0 })
}
