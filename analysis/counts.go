// Package analysis turns a results bundle into the counts of
// docs/specification.md section 4 and their statistics: it re-scores every
// decision from calls.jsonl alone (through results' reader and scoring
// path, in one pass that also summarizes transport events), checks the
// result against decisions.parquet, formats the counts table, and computes
// intervals, paired comparisons and comparisons with the paper. It reads
// bundles only through results and never writes one.
package analysis

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
)

// CountsHeader is the header of the counts table: the cell, N, a column
// per simulator.Columns (the lab columns only when lab is true: some
// decision has lab outcomes, see results.HasLab), Extra and Errors.
func CountsHeader(lab bool) []string {
	h := []string{"model", "prompt", "condition", "N"}
	for i := range simulator.Columns {
		if lab || !simulator.Columns[i].Kind.Lab() {
			h = append(h, simulator.Columns[i].Label)
		}
	}
	return append(h, "Extra", "Errors")
}

// CountsRow is cell c's row of the counts table (see CountsHeader); a
// cell without lab outcomes shows "—" in the lab columns.
func CountsRow(c *results.Cell, lab bool) []string {
	r := []string{c.Model, c.Prompt, string(c.Condition), strconv.Itoa(c.N)}
	for i := range simulator.Columns {
		switch isLab := simulator.Columns[i].Kind.Lab(); {
		case isLab && !lab:
		case isLab && c.LabN == 0:
			r = append(r, "—")
		default:
			r = append(r, strconv.Itoa(c.Count(simulator.Col(i))))
		}
	}
	return append(r, strconv.Itoa(c.Extra), strconv.Itoa(c.Errors))
}

// WriteTable prints the counts table of docs/specification.md section 4,
// with the lab columns of section 7 when some cell has decisions with lab
// outcomes.
func WriteTable(w io.Writer, cells []results.Cell) error {
	lab := results.HasLab(cells)
	bw := bufio.NewWriter(w) // tabwriter writes each cell apart
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(CountsHeader(lab), "\t"))
	for i := range cells {
		fmt.Fprintln(tw, strings.Join(CountsRow(&cells[i], lab), "\t"))
	}
	return errors.Join(tw.Flush(), bw.Flush())
}

// WriteJSON prints {"cells":[…]}.
func WriteJSON(w io.Writer, cells []results.Cell) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Cells []results.Cell `json:"cells"`
	}{cells})
}

// readCalls reads calls.jsonl once, decision by decision (the lines of one
// decision are contiguous, as stress writes them): each decision is
// re-scored from its raw responses by results.Group.Row, the one scoring
// path, and handed to row (when not nil); its calls' transport events and
// failures are summarized at the same time. Damaged lines and broken
// trajectories come back as problems (each located) and do not stop the
// others; err is a read failure or an error from row. A decision whose
// lines are split comes out once per run of lines, which a Fingerprint
// comparison with decisions.parquet reveals. It holds one decision in
// memory; row gets the decision's call lines (their heads) beside its
// row, valid until it returns.
func readCalls(r io.Reader, name string, row func(*results.Group, *results.Row) error) (ts *TransportSummary, problems []error, err error) {
	gr := results.NewGroupReader(r, name)
	gr.Lenient()
	tt := newTransportTally()
	var scoreProblems []error
	var refs results.RefSet
	err = readBatches(gr, func(g *results.Group) error {
		tt.add(g)
		refs.Add(g)
		rw, err := g.Row()
		if err != nil {
			scoreProblems = append(scoreProblems, fmt.Errorf("%s:%d: %w", name, g.Line, err))
			return nil
		}
		if row != nil {
			return row(g, &rw)
		}
		return nil
	})
	problems = append(gr.Problems(), scoreProblems...)
	if err == nil {
		err = gr.Err()
	}
	if err == nil {
		err = refs.Check(name)
	}
	return tt.summary(), problems, err
}

// groupBatch is a batch of groups read ahead, with their own heads.
type groupBatch struct {
	groups []results.Group
	n      int
}

// readBatches calls fn with every group of gr, in order, while gr reads
// the next ones on another goroutine (decoding the lines and scoring
// them take about as long). It stops at fn's first error and returns it;
// gr's own error and problems are for the caller, once it returned.
func readBatches(gr *results.GroupReader, fn func(*results.Group) error) error {
	const batches, perBatch = 4, 256
	free, full := make(chan *groupBatch, batches), make(chan *groupBatch, batches)
	for range batches {
		free <- &groupBatch{groups: make([]results.Group, perBatch)}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(full)
		for {
			var b *groupBatch
			select {
			case b = <-free:
			case <-stop:
				return
			}
			b.n = 0
			for b.n < perBatch && gr.Next() {
				g, dst := gr.Group(), &b.groups[b.n]
				heads := append(dst.Heads[:0], g.Heads...)
				*dst = *g
				dst.Heads = heads
				b.n++
			}
			if b.n > 0 {
				full <- b
			}
			if b.n < perBatch {
				return
			}
		}
	}()
	var err error
	for b := range full {
		for i := 0; i < b.n && err == nil; i++ {
			err = fn(&b.groups[i])
		}
		if err != nil {
			break
		}
		free <- b
	}
	close(stop)
	for range full { // let the reader finish its batch
	}
	<-done
	return err
}

// Rescore rebuilds every decision row from calls.jsonl alone, like Read,
// but accepts a decision's lines anywhere in the file (they are gathered
// by decision key); it holds every decision in memory.
func Rescore(r io.Reader, name string) (rows []results.Row, problems []error, err error) {
	gr := results.NewGroupReader(r, name)
	gr.Lenient()
	byKey := map[simulator.Key]*results.Group{}
	var order []*results.Group
	for gr.Next() {
		g := gr.Group()
		all := byKey[g.Key]
		if all == nil {
			all = &results.Group{Key: g.Key, Line: g.Line}
			byKey[g.Key] = all
			order = append(order, all)
		}
		for i, h := range g.Heads {
			if slices.ContainsFunc(all.Heads, func(x results.Head) bool { return x.Turn == h.Turn }) {
				problems = append(problems, fmt.Errorf("%s:%d: decision %s: turn %d appears twice", name, g.Line+i, g.Key, h.Turn))
				continue
			}
			all.Heads = append(all.Heads, h)
		}
	}
	problems = append(gr.Problems(), problems...)
	if err := gr.Err(); err != nil {
		return nil, problems, err
	}
	rows = make([]results.Row, 0, len(order))
	for _, g := range order {
		slices.SortFunc(g.Heads, func(a, b results.Head) int { return a.Turn - b.Turn })
		row, err := g.Row()
		if err != nil {
			problems = append(problems, fmt.Errorf("%s:%d: %w", name, g.Line, err))
			continue
		}
		rows = append(rows, row)
	}
	return rows, problems, nil
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
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			add(fmt.Errorf("decision %s: %s says %s, %s says %s", a.Key(), results.CallsFile, ja, results.DecisionsFile, jb))
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
