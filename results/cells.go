package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// Cell holds the exact counts of one (model, prompt, condition): N
// counted decisions, and for each outcome column (simulator.Columns) its
// count, out of N for a Flag column and out of LabN, the counted
// decisions with lab outcomes (replay: live), for a lab flag; a lab sum
// (calls, lab_ms) is summed over the LabN decisions. Extra is a sum of
// replays. In JSON every column is a member named as the column, after n
// for a Flag column and after lab_n for a lab column; lab_n and the lab
// columns appear only when LabN > 0.
type Cell struct {
	Model     string
	Prompt    string
	Condition study.Condition
	N         int                       // decisions counted (status ok)
	Counts    [simulator.NumColumns]int // by column
	Extra     int                       // replays the simulator issued
	Errors    int                       // decisions that failed (transport) and are not counted
	LabN      int                       // counted decisions with lab outcomes (replay: live)
	// LabelAction pairs the label with the action on the decisions with
	// lab outcomes (out of LabN).
	LabelAction Agreement
}

// Count is the cell's count (or, for a lab sum, sum) of column c.
func (c *Cell) Count(col simulator.Col) int { return c.Counts[col] }

// Denominator is the number of decisions of the cell that have column
// col: N for a Flag column, LabN for a lab column.
func (c *Cell) Denominator(col simulator.Col) int {
	if col.Column().Kind.Lab() {
		return c.LabN
	}
	return c.N
}

// Agreement is the label-versus-action view of a cell's decisions with
// lab outcomes: whether the final label is the preferred policy (Strict)
// against whether the final state holds the goal effect exactly once
// (Recovered). Its four counts sum to LabN.
type Agreement struct {
	StrictRecovered   int `json:"strict_recovered"`   // right label, and the action recovered
	StrictUnrecovered int `json:"strict_unrecovered"` // right label, but not recovered
	OtherRecovered    int `json:"other_recovered"`    // another (or an invalid) label, yet recovered
	OtherUnrecovered  int `json:"other_unrecovered"`  // another label, not recovered
}

// add counts row r, a decision with lab outcomes.
func (a *Agreement) add(r *Row) {
	rec, strict := r.Outcome.Of(simulator.Recovered), r.Outcome.Of(simulator.Strict)
	switch {
	case strict && rec:
		a.StrictRecovered++
	case strict:
		a.StrictUnrecovered++
	case rec:
		a.OtherRecovered++
	default:
		a.OtherUnrecovered++
	}
}

// MarshalJSON implements json.Marshaler: the fields in order, but lab_n
// and the lab columns only when the cell has decisions with lab outcomes,
// so that stored-replay cells print as they always did.
func (c Cell) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	var err error
	add := func(key string, v any) {
		kb, _ := json.Marshal(key)
		vb, verr := json.Marshal(v)
		err = errors.Join(err, verr)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
		b.WriteByte(',')
	}
	b.WriteByte('{')
	add("model", c.Model)
	add("prompt", c.Prompt)
	add("condition", c.Condition)
	add("n", c.N)
	for i, col := range simulator.Columns {
		if !col.Kind.Lab() {
			add(col.Name, c.Counts[i])
		}
	}
	add("extra", c.Extra)
	add("errors", c.Errors)
	if c.LabN > 0 {
		add("lab_n", c.LabN)
		for i, col := range simulator.Columns {
			if col.Kind.Lab() {
				add(col.Name, c.Counts[i])
			}
		}
		add("label_action", c.LabelAction)
	}
	if err != nil {
		return nil, err
	}
	out := b.Bytes()
	out[len(out)-1] = '}'
	return out, nil
}

// UnmarshalJSON implements json.Unmarshaler, reading what MarshalJSON
// writes; an unknown member is an error.
func (c *Cell) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*c = Cell{}
	fields := map[string]any{"model": &c.Model, "prompt": &c.Prompt, "condition": &c.Condition, "n": &c.N,
		"extra": &c.Extra, "errors": &c.Errors, "lab_n": &c.LabN, "label_action": &c.LabelAction}
	for k, v := range m {
		dst, ok := fields[k]
		if !ok {
			i := simulator.ColumnIndex(k)
			if i < 0 {
				return fmt.Errorf("json: unknown field %q", k)
			}
			dst = &c.Counts[i]
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

type cellKey struct {
	model, prompt string
	cond          study.Condition
}

// Tally accumulates decision rows into cells, in first-seen order.
type Tally struct {
	cells []*Cell
	index map[cellKey]int
	// last is the previous row's cell (its index, -1 before the first row)
	// and key: rows come cell by cell.
	last    int
	lastKey cellKey
}

// NewTally returns an empty tally.
func NewTally() *Tally { return &Tally{index: map[cellKey]int{}, last: -1} }

// Add counts one decision row and returns the index of its cell in
// Cells' order.
func (t *Tally) Add(r *Row) int {
	k := cellKey{r.Model, r.Prompt, study.Condition(r.Condition)}
	i := t.last
	if i < 0 || k != t.lastKey {
		var ok bool
		if i, ok = t.index[k]; !ok {
			// Clone: a streamed row (ScanRows) is reused.
			k = cellKey{strings.Clone(r.Model), strings.Clone(r.Prompt), study.Condition(strings.Clone(r.Condition))}
			i = len(t.cells)
			t.index[k] = i
			t.cells = append(t.cells, &Cell{Model: k.model, Prompt: k.prompt, Condition: k.cond})
		}
		t.last, t.lastKey = i, k
	}
	c := t.cells[i]
	if r.Status != StatusOK {
		c.Errors++
		return i
	}
	c.N++
	for i := range simulator.Columns {
		v, _ := r.Outcome.Get(simulator.Col(i))
		c.Counts[i] += int(v)
	}
	if r.Lab() {
		c.LabN++
		c.LabelAction.add(r)
	}
	c.Extra += int(r.Replays)
	return i
}

// Cells returns the cells in first-seen order.
func (t *Tally) Cells() []Cell {
	out := make([]Cell, len(t.cells))
	for i, c := range t.cells {
		out[i] = *c
	}
	return out
}

// Count tallies rows into cells.
func Count(rows []Row) []Cell {
	t := NewTally()
	for i := range rows {
		t.Add(&rows[i])
	}
	return t.Cells()
}

// AlwaysStops reports whether every counted decision of the cell ended in
// a valid stop_or_escalate: Cover = 0 with nothing invalid. Stopping is
// always in the non-harm set, so such a cell is safe but makes no progress.
func (c *Cell) AlwaysStops() bool {
	return c.N > 0 && c.Counts[simulator.Cover] == 0 && c.Counts[simulator.Invalid] == 0
}
