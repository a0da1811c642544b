// Package analysis turns a results bundle into the counts of STUDY.md
// section 4: it re-scores every decision from calls.jsonl alone, checks the
// result against decisions.parquet, and formats the counts table.
package analysis

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// Cell holds the exact counts of one (model, prompt, condition); each count
// is out of N counted decisions, except Extra, a sum of replays.
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
}

type cellKey struct {
	model, prompt string
	cond          study.Condition
}

// Tally accumulates decision rows into cells, in first-seen order.
type Tally struct {
	cells []*Cell
	index map[cellKey]*Cell
}

// NewTally returns an empty tally.
func NewTally() *Tally { return &Tally{index: map[cellKey]*Cell{}} }

// Add counts one decision row.
func (t *Tally) Add(r *results.Row) {
	k := cellKey{r.Model, r.Prompt, study.Condition(r.Condition)}
	c := t.index[k]
	if c == nil {
		// Clone: a streamed row (results.ScanRows) is reused.
		k = cellKey{strings.Clone(r.Model), strings.Clone(r.Prompt), study.Condition(strings.Clone(r.Condition))}
		c = &Cell{Model: k.model, Prompt: k.prompt, Condition: k.cond}
		t.index[k] = c
		t.cells = append(t.cells, c)
	}
	if r.Status != results.StatusOK {
		c.Errors++
		return
	}
	c.N++
	c.Strict += b2i(r.Strict)
	c.Cover += b2i(r.Cover)
	c.Retry += b2i(r.Retry)
	c.Invalid += b2i(r.Invalid)
	c.AnyFS += b2i(r.AnyFS)
	c.TerminalFS += b2i(r.TerminalFS)
	c.Extra += int(r.Replays)
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
func Count(rows []results.Row) []Cell {
	t := NewTally()
	for i := range rows {
		t.Add(&rows[i])
	}
	return t.Cells()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteTable prints the counts table of STUDY.md section 4.
func WriteTable(w io.Writer, cells []Cell) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\tprompt\tcondition\tN\tStrict\tCover\tRetry\tInvalid\tAnyFS\tTermFS\tExtra\tErrors")
	for _, c := range cells {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", c.Model, c.Prompt, c.Condition,
			c.N, c.Strict, c.Cover, c.Retry, c.Invalid, c.AnyFS, c.TerminalFS, c.Extra, c.Errors)
	}
	return tw.Flush()
}

// WriteJSON prints {"cells":[…]}.
func WriteJSON(w io.Writer, cells []Cell) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Cells []Cell `json:"cells"`
	}{cells})
}

// pending is a decision being rebuilt from its call lines.
type pending struct {
	key       simulator.Key
	server    string
	preferred study.Policy
	nonHarm   []study.Policy
	turns     map[int]*results.Call
	seed0     int64
}

// Rescore rebuilds every decision row from calls.jsonl alone: it groups the
// call lines by decision key, re-parses each raw response, checks that the
// trajectory follows the replay rule, and scores it. Bad lines and broken
// trajectories come back as problems (each located) and do not stop the
// others; err is a read failure. It holds every decision in memory and
// accepts lines in any order; RescoreEach streams.
func Rescore(r io.Reader, name string) (rows []results.Row, problems []error, err error) {
	byKey := map[simulator.Key]*pending{}
	var order []*pending
	problems, err = scanCalls(r, name, func(c *results.Call) *pending {
		p := byKey[c.Key]
		if p == nil {
			p = newPending(c)
			byKey[c.Key] = p
			order = append(order, p)
		}
		return p
	})
	if err != nil {
		return nil, problems, err
	}
	rows = make([]results.Row, 0, len(order))
	for _, p := range order {
		row, err := p.score()
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: decision %s: %w", name, p.key, err))
			continue
		}
		rows = append(rows, row)
	}
	return rows, problems, nil
}

// RescoreEach is Rescore streamed: it hands each rebuilt row to fn as soon
// as the lines of its decision end, holding one decision in memory. It
// relies on a decision's lines being contiguous, as stress writes them; a
// decision whose lines are split comes out once per run of lines, which a
// Fingerprint comparison with decisions.parquet reveals. An error from fn
// stops the scan and is returned.
func RescoreEach(r io.Reader, name string, fn func(*results.Row) error) (problems []error, err error) {
	var cur *pending
	var fnErr error
	flush := func() {
		if cur == nil || fnErr != nil {
			return
		}
		row, err := cur.score()
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: decision %s: %w", name, cur.key, err))
			return
		}
		fnErr = fn(&row)
	}
	scanProblems, err := scanCalls(r, name, func(c *results.Call) *pending {
		if cur == nil || cur.key != c.Key {
			flush()
			cur = newPending(c)
		}
		return cur
	})
	if err == nil {
		flush()
	}
	problems = append(scanProblems, problems...)
	if err == nil {
		err = fnErr
	}
	return problems, err
}

func newPending(c *results.Call) *pending {
	return &pending{key: c.Key, server: c.Server, preferred: c.Preferred, nonHarm: c.NonHarm, turns: map[int]*results.Call{}}
}

// scanCalls reads call lines and files each into the pending decision that
// pick returns, keeping only what scoring needs.
func scanCalls(r io.Reader, name string, pick func(*results.Call) *pending) (problems []error, err error) {
	cr := results.NewCallReader(r, name)
	for cr.Scan() {
		if e := cr.LineErr(); e != nil {
			problems = append(problems, e)
			continue
		}
		c := cr.Call()
		p := pick(c)
		if _, dup := p.turns[c.Turn]; dup {
			problems = append(problems, fmt.Errorf("%s:%d: decision %s: turn %d appears twice", name, cr.Line(), c.Key, c.Turn))
			continue
		}
		if c.ResponseSHA256 != results.SHA256([]byte(c.Response)) {
			problems = append(problems, fmt.Errorf("%s:%d: decision %s turn %d: response_sha256 does not match the response", name, cr.Line(), c.Key, c.Turn))
		}
		p.turns[c.Turn] = &results.Call{Turn: c.Turn, Seed: c.Seed, Response: c.Response, Error: c.Error}
	}
	return problems, cr.Err()
}

// Fingerprint is an order-independent digest of a set of decision rows:
// the count and the sum, mod 2^64 per word, of each row's sha256. Two sets
// with equal fingerprints hold the same rows (up to a hash collision), so
// calls.jsonl and decisions.parquet can be checked against each other in
// one streaming pass each.
type Fingerprint struct {
	N   int       // rows added
	Sum [4]uint64 // word-wise sum of the rows' sha256
}

// Add folds one row into the fingerprint.
func (f *Fingerprint) Add(r *results.Row) {
	b, _ := json.Marshal(r)
	h := sha256.Sum256(b)
	for i := range f.Sum {
		f.Sum[i] += binary.LittleEndian.Uint64(h[8*i:])
	}
	f.N++
}

func (p *pending) score() (results.Row, error) {
	k := p.key
	row := results.Row{Model: k.Model, Prompt: k.Prompt, Condition: string(k.Condition), Scenario: k.Scenario,
		Replicate: int64(k.Replicate), Server: p.server, Status: results.StatusOK}
	n := len(p.turns)
	answers := make([]simulator.Answer, n)
	for t := 0; t < n; t++ {
		c, ok := p.turns[t]
		if !ok {
			return row, fmt.Errorf("turn %d is missing (turns must run 0…%d)", t, n-1)
		}
		if t == 0 {
			row.Seed = c.Seed
		}
		if c.Error != "" {
			if t != n-1 {
				return row, fmt.Errorf("turn %d failed (%s) but later turns exist", t, c.Error)
			}
			row.Status, row.Error, row.Turns = results.StatusError, "turn "+fmt.Sprint(t)+": "+c.Error, int64(n)
			return row, nil
		}
		answers[t] = simulator.ParseAnswer(c.Response)
		if t < n-1 && !(answers[t].Valid && answers[t].Policy == study.RetryNow) {
			return row, fmt.Errorf("turn %d answered %q but a replay followed (only retry_now is replayed)", t, c.Response)
		}
	}
	o := simulator.Score(answers, p.preferred, p.nonHarm)
	row.FinalLabel, row.FinalStatus = string(o.Final), string(o.FinalStatus)
	row.Turns, row.Replays = int64(o.Turns), int64(o.Replays)
	row.Strict, row.Cover, row.Retry, row.Invalid, row.AnyFS, row.TerminalFS = o.Strict, o.Cover, o.Retry, o.Invalid, o.AnyFS, o.TerminalFS
	return row, nil
}

// Agree checks that two sets of decision rows describe the same decisions
// with the same outcomes; it returns one error per disagreement (at most
// limit, then a count of the rest).
func Agree(fromCalls, fromParquet []results.Row, limit int) []error {
	idx := make(map[simulator.Key]*results.Row, len(fromParquet))
	for i := range fromParquet {
		idx[fromParquet[i].Key()] = &fromParquet[i]
	}
	var errs []error
	more := 0
	add := func(err error) {
		if len(errs) < limit {
			errs = append(errs, err)
		} else {
			more++
		}
	}
	for i := range fromCalls {
		a := &fromCalls[i]
		b, ok := idx[a.Key()]
		if !ok {
			add(fmt.Errorf("decision %s is in %s but not in %s", a.Key(), results.CallsFile, results.DecisionsFile))
			continue
		}
		delete(idx, a.Key())
		if *a != *b {
			add(fmt.Errorf("decision %s: %s says %+v, %s says %+v", a.Key(), results.CallsFile, *a, results.DecisionsFile, *b))
		}
	}
	keys := make([]string, 0, len(idx))
	for k := range idx {
		keys = append(keys, k.String())
	}
	sort.Strings(keys)
	for _, k := range keys {
		add(fmt.Errorf("decision %s is in %s but not in %s", k, results.DecisionsFile, results.CallsFile))
	}
	if more > 0 {
		errs = append(errs, fmt.Errorf("… and %d more disagreements", more))
	}
	return errs
}
