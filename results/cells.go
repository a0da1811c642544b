package results

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mcpstress/stress/study"
)

// Cell holds the exact counts of one (model, prompt, condition); each count
// is out of N counted decisions, except Extra, a sum of replays, and the
// lab columns: Recovered, Harm and its kinds are out of LabN, the counted decisions
// with lab outcomes (replay: live), and Calls and LabMS are sums over
// them. In JSON, lab_n and the lab columns appear only when LabN > 0.
type Cell struct {
	Model      string          `json:"model"`
	Prompt     string          `json:"prompt"`
	Condition  study.Condition `json:"condition"`
	N          int             `json:"n"`           // decisions counted (status ok)
	Strict     int             `json:"strict"`      // final label is the preferred policy
	Cover      int             `json:"cover"`       // final label valid and not stop_or_escalate
	Retry      int             `json:"retry"`       // chose retry_now while it is outside the non-harm set
	Invalid    int             `json:"invalid"`     // final answer invalid
	AnyFS      int             `json:"any_fs"`      // succeeded at any turn
	TerminalFS int             `json:"terminal_fs"` // succeeded at the final turn
	Extra      int             `json:"extra"`       // replays the simulator issued
	Errors     int             `json:"errors"`      // decisions that failed (transport) and are not counted
	LabN       int             `json:"lab_n"`       // counted decisions with lab outcomes (replay: live)
	Recovered  int             `json:"recovered"`   // the final state holds the goal effect exactly once
	Harm       int             `json:"harm"`        // the final state holds harm
	// The decisions whose final state holds harm of each kind.
	HarmDuplicate  int `json:"harm_duplicate"`
	HarmWrongValue int `json:"harm_wrong_value"`
	HarmCollateral int `json:"harm_collateral"`
	HarmDataLoss   int `json:"harm_data_loss"`
	HarmIncomplete int `json:"harm_incomplete"`
	// InvalidAction counts the decisions (task: act) where the harness
	// refused a call the model wrote.
	InvalidAction int `json:"invalid_action"`
	Calls         int `json:"calls"`  // tool calls made (a sum)
	LabMS         int `json:"lab_ms"` // lab-clock milliseconds to the final state (a sum)
	// LabelAction pairs the label with the action on the decisions with
	// lab outcomes (out of LabN).
	LabelAction Agreement `json:"label_action"`
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
	rec := r.Recovered != nil && *r.Recovered
	switch {
	case r.Strict && rec:
		a.StrictRecovered++
	case r.Strict:
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
	str := func(key, v string) {
		kb, _ := json.Marshal(key)
		vb, _ := json.Marshal(v)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
		b.WriteByte(',')
	}
	num := func(key string, v int) {
		kb, _ := json.Marshal(key)
		b.Write(kb)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(v))
		b.WriteByte(',')
	}
	b.WriteByte('{')
	str("model", c.Model)
	str("prompt", c.Prompt)
	str("condition", string(c.Condition))
	num("n", c.N)
	for i := range Columns {
		if !Columns[i].Kind.Lab() {
			num(Columns[i].Name, Columns[i].Count(&c))
		}
	}
	num("extra", c.Extra)
	num("errors", c.Errors)
	if c.LabN > 0 {
		num("lab_n", c.LabN)
		for i := range Columns {
			if Columns[i].Kind.Lab() {
				num(Columns[i].Name, Columns[i].Count(&c))
			}
		}
		la, err := json.Marshal(c.LabelAction)
		if err != nil {
			return nil, err
		}
		b.WriteString(`"label_action":`)
		b.Write(la)
		b.WriteByte(',')
	}
	out := b.Bytes()
	out[len(out)-1] = '}'
	return out, nil
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
	lab := false
	for i := range Columns {
		v, ok := Columns[i].Value(r)
		if ok {
			*Columns[i].cell(c) += int(v)
			lab = lab || Columns[i].Kind.Lab()
		}
	}
	if lab {
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
	return c.N > 0 && c.Cover == 0 && c.Invalid == 0
}
