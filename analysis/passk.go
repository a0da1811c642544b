package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
)

// This file holds the consistency of a cell across replicates: pass^k,
// the chance that k replicates of a scenario all succeed (Yao et al.
// 2024, τ-bench), estimated per scenario by stats.PassHatK from its n
// replicates and c successes and averaged over the cell's scenarios,
// for k = 1 up to the most replicates of a scenario, with a percentile
// cluster bootstrap over the servers.

// PassKColumns are the 0/1 outcome columns whose pass^k the analysis
// reports, in order: Strict (the final label is the first preferred
// policy, the paper's rule), Proven (one of the execution-proven
// preferred policies; only in a bundle where some scenario declares
// more than one, Accumulator.NoteProvenSet: elsewhere it is Strict on
// every decision, as for the predeclared contrasts) and Recovered (a
// lab column: over the decisions with lab outcomes, so only cells of
// live replay have it).
var PassKColumns = []simulator.Col{simulator.Strict, simulator.Proven, simulator.Recovered}

// passFixed is the int32s of a (cell, scenario) entry of a passTally
// before its counts: the scenario's server + 1 (0: no row yet), its
// counted decisions, and those with lab outcomes.
const passFixed = 3

// passStride is the int32s of one (cell, scenario) entry: passFixed,
// then the successes of each of PassKColumns.
var passStride = passFixed + len(PassKColumns)

// passTally counts, per cell and scenario, what pass^k needs: the
// scenario's counted replicates (and those with lab outcomes) and, per
// column of PassKColumns, how many succeeded. Memory: 4·passStride bytes
// per (cell, scenario), whatever the number of replicates.
type passTally struct {
	cells [][]int32 // by cell index: passStride int32s per scenario id
}

// add counts one row of cell ci: scenario and server ids (interned by
// the Accumulator) and its packed outcome. An error row (not counted)
// places the scenario on its server without a replicate.
func (t *passTally) add(ci int, scenario, server int32, f results.Flags) {
	for ci >= len(t.cells) {
		t.cells = append(t.cells, nil)
	}
	s := t.cells[ci]
	at := int(scenario) * passStride
	if end := at + passStride; end > len(s) {
		s = append(s, make([]int32, end-len(s))...)
		t.cells[ci] = s
	}
	e := s[at : at+passStride : at+passStride]
	if e[0] == 0 {
		e[0] = server + 1
	}
	if f&results.FlagOK == 0 {
		return
	}
	e[1]++
	if f&results.FlagLab != 0 {
		e[2]++
	}
	for j, c := range PassKColumns {
		if f&results.FlagBit(c) != 0 {
			e[passFixed+j]++
		}
	}
}

// PassK is a cell's pass^k on one column at one k.
type PassK struct {
	K int `json:"k"` // trials that must all succeed, 1..the most replicates of a scenario
	// Estimate is the mean over Scenarios of C(c, k)/C(n, k), in [0, 1];
	// null (NaN) when no scenario has k replicates.
	Estimate Num `json:"estimate"`
	// Bootstrap is its percentile cluster-bootstrap interval (servers
	// resampled with replacement, as the rates'); null when undefined or
	// not computed: by Accumulator.PassK, or beyond k = 50 at a k the
	// tables do not show (passKShown).
	Bootstrap Bounds `json:"bootstrap"`
	Scenarios int    `json:"scenarios"` // scenarios averaged: those with at least k replicates
	Dropped   int    `json:"dropped"`   // scenarios of the cell left out: fewer than k replicates
	// Warnings are the caveats: Dropped scenarios first, then the
	// bootstrap's.
	Warnings []stats.Warning `json:"warnings,omitempty"`
}

// passKSeries is pass^k of one column of a cell for k = 1 up to the most
// replicates of a scenario.
type passKSeries struct {
	Column simulator.Col
	Values []PassK // Values[k−1] is pass^k
}

// PassKSet is a cell's pass^k, one series per column of PassKColumns
// that the cell has, in that order; in JSON an object from the column's
// name to its values, {"strict":[{"k":1,…},…],…}.
type PassKSet []passKSeries

// Of returns the series of column c, or nil when the cell has none.
func (s PassKSet) Of(c simulator.Col) *passKSeries {
	for i := range s {
		if s[i].Column == c {
			return &s[i]
		}
	}
	return nil
}

// MarshalJSON implements json.Marshaler.
func (s PassKSet) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, sr := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(sr.Column.String())
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(sr.Values)
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// passKBootAll is the largest k up to which every pass^k gets a
// bootstrap interval; beyond, only the ks the tables show (passKShown)
// do, so that the resamples kept (B per interval) do not grow with the
// replicates.
const passKBootAll = 50

// passKBootKs are the ks of a series up to kmax that get a bootstrap
// interval: every k up to passKBootAll, then those of passKShown.
func passKBootKs(kmax int) []int {
	var out []int
	for k := 1; k <= min(kmax, passKBootAll); k++ {
		out = append(out, k)
	}
	for _, k := range passKShown(kmax) {
		if k > passKBootAll {
			out = append(out, k)
		}
	}
	return out
}

// passKInput is a cell's pass^k before the bootstrap, per column it
// has: for every k, the sum over all its scenarios (one cluster, for the
// estimate) and the scenarios left out; for the ks of passKBootKs, the
// per-server sufficient statistics (stats.PassKClusters) over the
// servers of the cell's rates (Clusters).
type passKInput struct {
	cols      []simulator.Col
	totals    [][]stats.Cluster   // [column][k−1]
	dropped   [][]int             // [column][k−1]
	boot      [][]int             // [column]: the ks bootstrapped
	clusters  [][][]stats.Cluster // [column][i][server] for k = boot[column][i]
	scenarios int                 // the cell's scenarios
}

// passKInput gathers cell i's scenarios by server for each column of
// PassKColumns; a column that no decision of the cell has (a lab column
// under stored replay) is left out, and Proven where it is Strict.
func (a *Accumulator) passKInput(i int) passKInput {
	var in passKInput
	if i >= len(a.passk.cells) || i >= len(a.perServer) {
		return in
	}
	s, ps := a.passk.cells[i], a.perServer[i]
	pos := make([]int32, len(a.servers.names)) // server id → its cluster + 1
	nc := int32(0)
	for _, si := range a.serverOrder() {
		if int(si) < len(ps) && ps[si].n > 0 {
			nc++
			pos[si] = nc
		}
	}
	for at := 0; at+passStride <= len(s); at += passStride {
		if s[at] != 0 {
			in.scenarios++
		}
	}
	for j, col := range PassKColumns {
		if col == simulator.Proven && !a.provenWide {
			continue
		}
		lab := col.Column().Kind.Lab()
		trials := make([][]stats.Trials, nc)
		kmax, unplaced := 0, 0
		for at := 0; at+passStride <= len(s); at += passStride {
			e := s[at : at+passStride]
			if e[0] == 0 {
				continue
			}
			n := int(e[1])
			if lab {
				n = int(e[2])
			}
			kmax = max(kmax, n)
			p := pos[e[0]-1]
			if p == 0 { // no counted decision of the cell on its server
				unplaced++
				continue
			}
			trials[p-1] = append(trials[p-1], stats.Trials{N: n, C: int(e[passFixed+j])})
		}
		if kmax == 0 {
			continue
		}
		var all []stats.Trials // by server, as the clusters
		for _, t := range trials {
			all = append(all, t...)
		}
		ks := make([]int, kmax)
		for k := range ks {
			ks[k] = k + 1
		}
		perK, dropped := stats.PassKClusters([][]stats.Trials{all}, ks)
		totals := make([]stats.Cluster, kmax)
		for k := range perK {
			totals[k] = perK[k][0]
			dropped[k] += unplaced
		}
		boot := passKBootKs(kmax)
		clusters, _ := stats.PassKClusters(trials, boot)
		in.cols = append(in.cols, col)
		in.totals = append(in.totals, totals)
		in.dropped = append(in.dropped, dropped)
		in.boot = append(in.boot, boot)
		in.clusters = append(in.clusters, clusters)
	}
	return in
}

// all lists the clusters of every bootstrapped (column, k), column by
// column.
func (in *passKInput) all() [][]stats.Cluster {
	var out [][]stats.Cluster
	for _, perK := range in.clusters {
		out = append(out, perK...)
	}
	return out
}

// finish returns the cell's pass^k set, with the bootstrap intervals ivs
// of all() in its order (nil: none computed).
func (in *passKInput) finish(ivs []stats.Interval) PassKSet {
	out := make(PassKSet, 0, len(in.cols))
	x := 0
	for j, col := range in.cols {
		sr := passKSeries{Column: col, Values: make([]PassK, len(in.totals[j]))}
		for k, t := range in.totals[j] {
			est := math.NaN()
			if t.N > 0 {
				est = t.Sum / float64(t.N)
			}
			v := PassK{K: k + 1, Estimate: Num(est), Bootstrap: Bounds{math.NaN(), math.NaN()}, Scenarios: t.N, Dropped: in.dropped[j][k]}
			if d := v.Dropped; d > 0 {
				what := "replicates"
				if isLab(col) {
					what = "replicates with lab outcomes"
				}
				v.Warnings = append(v.Warnings, stats.Warning{Kind: stats.Dropped,
					Message: fmt.Sprintf("%d of the cell's %d scenarios have fewer than %d %s: left out of pass^%d", d, in.scenarios, k+1, what, k+1)})
			}
			sr.Values[k] = v
		}
		for _, k := range in.boot[j] {
			if ivs != nil {
				v, iv := &sr.Values[k-1], ivs[x]
				v.Bootstrap = Bounds{iv.Lo, iv.Hi}
				v.Warnings = append(v.Warnings, iv.Warnings...)
			}
			x++
		}
		out = append(out, sr)
	}
	return out
}

// PassK returns cell i's pass^k (the cell's index in Cells) without the
// bootstrap: the estimates, scenarios and warnings Analyze gives, with
// null intervals. It is what an export needs of a cell.
func (a *Accumulator) PassK(i int) PassKSet {
	in := a.passKInput(i)
	return in.finish(nil)
}

// PassKText explains the pass^k table (WritePassK) and the report's.
const PassKText = "pass^k is the chance that k replicates of a scenario all succeed (Yao et al. 2024, τ-bench): " +
	"per scenario C(c, k)/C(n, k) of its c successes in n replicates (the unbiased estimator), averaged over the cell's " +
	"scenarios, each weighing the same; pass^1 is the rate when every scenario has as many replicates. " +
	"A scenario with fewer than k replicates (a partial bundle, transport errors) is left out at that k (note dropped)."

// PassKLabText follows PassKText when some cell has a lab column's
// series (PassKLab).
const PassKLabText = "Recovered counts the replicates with lab outcomes (replay: live) and their recoveries."

// PassKLab reports whether some cell has pass^k on a lab column.
func PassKLab(cells []CellStats) bool {
	for _, c := range cells {
		for _, sr := range c.PassK {
			if isLab(sr.Column) {
				return true
			}
		}
	}
	return false
}

// passKShown are the ks a table shows of series up to kmax: every k up
// to 10; beyond, 1, 2, 3, 5, then 10, 20, 50, 100, 200, 500… below kmax,
// and kmax.
func passKShown(kmax int) []int {
	var out []int
	if kmax <= 10 {
		for k := 1; k <= kmax; k++ {
			out = append(out, k)
		}
		return out
	}
	out = []int{1, 2, 3, 5}
	for m := 10; m < kmax; m *= 10 {
		for _, f := range []int{1, 2, 5} {
			if k := m * f; k < kmax {
				out = append(out, k)
			}
		}
	}
	return append(out, kmax)
}

// PassKMax is the largest k of any cell's pass^k series (0: none).
func PassKMax(cells []CellStats) int {
	k := 0
	for _, c := range cells {
		for _, sr := range c.PassK {
			k = max(k, len(sr.Values))
		}
	}
	return k
}

// passKHeader is the header of the pass^k table for ks (passKShown):
// the cell, the column, the scenarios, a column per k, the bootstrap
// interval at the series' largest k, and the notes.
func passKHeader(ks []int) []string {
	h := []string{"model", "prompt", "condition", "column", "scenarios"}
	for _, k := range ks {
		h = append(h, "k="+strconv.Itoa(k))
	}
	return append(h, "bootstrap at largest k")
}

// PassKShown are the ks the pass^k tables show for cells.
func PassKShown(cells []CellStats) []int { return passKShown(PassKMax(cells)) }

// passKRow is series sr of cell c as a row of the table (passKHeader),
// without the notes, in percent; "—" where the series has no such k.
func passKRow(c *CellStats, sr *passKSeries, ks []int) []string {
	scen := 0
	if len(sr.Values) > 0 {
		scen = sr.Values[0].Scenarios + sr.Values[0].Dropped
	}
	r := []string{c.Model, c.Prompt, string(c.Condition), sr.Column.Column().Label, strconv.Itoa(scen)}
	for _, k := range ks {
		if k > len(sr.Values) {
			r = append(r, "—")
			continue
		}
		r = append(r, Pct(float64(sr.Values[k-1].Estimate)))
	}
	boot := "—"
	if n := len(sr.Values); n > 0 {
		boot = "k=" + strconv.Itoa(n) + " " + bracket(sr.Values[n-1].Bootstrap, Pct)
	}
	return append(r, boot)
}

// passKRows are the rows of the pass^k table (passKHeader) of the cells,
// one per cell and column, with each row's warnings (of every k).
func passKRows(cells []CellStats, ks []int) (rows [][]string, warnings [][]stats.Warning) {
	for i := range cells {
		c := &cells[i]
		for j := range c.PassK {
			sr := &c.PassK[j]
			rows = append(rows, passKRow(c, sr, ks))
			var w []stats.Warning
			for _, v := range sr.Values {
				w = append(w, v.Warnings...)
			}
			warnings = append(warnings, w)
		}
	}
	return rows, warnings
}

// WritePassK prints the pass^k table: per cell and column, pass^k in
// percent for the ks PassKShown picks, and the bootstrap interval at the
// largest k; nothing when no cell has a series.
func WritePassK(w io.Writer, an *Analysis) error {
	ks := PassKShown(an.Cells)
	if len(ks) == 0 {
		return nil
	}
	bi := an.Bootstrap
	text := PassKText
	if PassKLab(an.Cells) {
		text += " " + PassKLabText
	}
	fmt.Fprintln(w, wrap(fmt.Sprintf("Consistency across replicates, in %%. %s The interval is the %g%% percentile cluster bootstrap "+
		"of pass^k at the series' largest k, resampling the %d servers (B = %d, seed %d); -json has every k's.",
		text, 100*bi.Conf, bi.Clusters, bi.B, bi.Seed), 100))
	if k := PassKMax(an.Cells); k > len(ks) {
		shown := make([]string, len(ks))
		for i, k := range ks {
			shown[i] = strconv.Itoa(k)
		}
		fmt.Fprintf(w, "(k up to %d: the table shows k = %s.)\n", k, strings.Join(shown, ", "))
	}
	fmt.Fprintln(w)
	rows, warnings := passKRows(an.Cells, ks)
	seen := map[string]bool{}
	tw := newTable(w)
	fmt.Fprintln(tw, strings.Join(append(passKHeader(ks), "notes"), "\t"))
	for i, r := range rows {
		fmt.Fprintln(tw, strings.Join(append(r, tags(warnings[i], seen)), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeLegend(w, seen)
	return nil
}
