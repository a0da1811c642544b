package analysis

import (
	"slices"
	"strings"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/study"
)

// cellKey identifies a cell: (model, prompt, condition).
type cellKey struct {
	model, prompt string
	cond          study.Condition
}

// Accumulator collects, in one pass over the decision rows, everything the
// sensitivity analysis needs: the counts of every cell, their per-server
// sufficient statistics (for the cluster bootstrap), and one packed outcome per
// decision (for pairing decisions across conditions or bundles). Rows can
// be streamed (results.ScanRows): the Accumulator copies what it keeps.
//
// Memory: O(cells × servers) for the counts, plus O(decisions) bytes for
// the pairing table (about 20 bytes per (model, prompt, scenario,
// replicate) unit, two bytes per condition).
type Accumulator struct {
	tally   *results.Tally
	cellIdx map[cellKey]int
	// perServer[cell][server] are the counts of one cell on one server.
	perServer [][]serverCounts

	servers   interner
	groups    map[Arm]int32
	scenarios interner
	// Pairing table: one unit per (group, scenario, replicate), with one
	// packed 16-bit outcome per condition of study.AllConditions.
	units      map[unitKey]int32
	unitKeys   []unitKey
	unitServer []int32
	unitFlags  []uint16 // len(unitKeys) × len(study.AllConditions)
	groupConds []uint64 // per group: bit i set when condition i has a row
	groupArm   []Arm

	rows       int // rows added
	lab        int // counted rows with lab outcomes (live replay)
	duplicates int // rows whose decision key was already seen
	unknown    int // rows whose condition is not one of study.AllConditions
}

// Arm is one (model, prompt) of a bundle: the unit within which conditions
// are paired.
type Arm struct {
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
}

// String returns model/prompt.
func (a Arm) String() string { return a.Model + "/" + a.Prompt }

// serverCounts are the counts of one cell on one server: N, the
// decisions with lab outcomes, then each column of results.Columns in
// order (a count, or a lab sum), then Extra.
type serverCounts struct {
	n     int
	lab   int
	col   [results.MaxColumns]int
	extra int
}

type unitKey struct {
	group, scenario int32
	replicate       int64
}

// interner maps strings to dense indices in first-seen order.
type interner struct {
	idx   map[string]int32
	names []string
}

func (in *interner) id(s string) int32 {
	if i, ok := in.idx[s]; ok {
		return i
	}
	if in.idx == nil {
		in.idx = map[string]int32{}
	}
	s = strings.Clone(s) // the caller's row may be reused
	i := int32(len(in.names))
	in.idx[s] = i
	in.names = append(in.names, s)
	return i
}

func (in *interner) lookup(s string) (int32, bool) {
	i, ok := in.idx[s]
	return i, ok
}

// NewAccumulator returns an empty Accumulator.
func NewAccumulator() *Accumulator {
	return &Accumulator{tally: results.NewTally(), cellIdx: map[cellKey]int{}, groups: map[Arm]int32{}, units: map[unitKey]int32{}}
}

func condIndex(c study.Condition) int {
	return slices.Index(study.AllConditions, c)
}

// Add counts one decision row. A row with an unknown condition is counted
// in its cell but cannot be paired; a second row with the same decision key
// is counted (as results.Tally does) and reported by Duplicates.
func (a *Accumulator) Add(r *results.Row) {
	k := cellKey{r.Model, r.Prompt, study.Condition(r.Condition)}
	ci, ok := a.cellIdx[k]
	if !ok {
		k = cellKey{strings.Clone(r.Model), strings.Clone(r.Prompt), study.Condition(strings.Clone(r.Condition))}
		ci = len(a.perServer)
		a.cellIdx[k] = ci
		a.perServer = append(a.perServer, nil)
	}
	a.tally.Add(r)
	a.rows++

	si := a.servers.id(r.Server)
	ps := a.perServer[ci]
	for int(si) >= len(ps) {
		ps = append(ps, serverCounts{})
	}
	a.perServer[ci] = ps
	f := flagsOf(r)
	if f&flagOK != 0 {
		sc := &ps[si]
		sc.n++
		if f&flagLab != 0 {
			sc.lab++
			a.lab++
		}
		for i := range results.Columns {
			if v, ok := results.Columns[i].Value(r); ok {
				sc.col[i] += int(v)
			}
		}
		sc.extra += int(r.Replays)
	}

	cond := condIndex(study.Condition(r.Condition))
	if cond < 0 {
		a.unknown++
		return
	}
	gi, ok := a.groups[Arm{r.Model, r.Prompt}]
	if !ok {
		arm := Arm{strings.Clone(r.Model), strings.Clone(r.Prompt)}
		gi = int32(len(a.groupArm))
		a.groups[arm] = gi
		a.groupConds = append(a.groupConds, 0)
		a.groupArm = append(a.groupArm, arm)
	}
	a.groupConds[gi] |= 1 << cond
	uk := unitKey{gi, a.scenarios.id(r.Scenario), r.Replicate}
	ui, ok := a.units[uk]
	if !ok {
		ui = int32(len(a.unitKeys))
		a.units[uk] = ui
		a.unitKeys = append(a.unitKeys, uk)
		a.unitServer = append(a.unitServer, si)
		a.unitFlags = append(a.unitFlags, make([]uint16, len(study.AllConditions))...)
	}
	slot := &a.unitFlags[int(ui)*len(study.AllConditions)+cond]
	if *slot&flagSeen != 0 {
		a.duplicates++
		return
	}
	*slot = f
}

// Cells returns the counts of every cell in first-seen order (as results.Count).
func (a *Accumulator) Cells() []results.Cell { return a.tally.Cells() }

// Decisions is the number of rows added: decisions counted and error
// decisions.
func (a *Accumulator) Decisions() int { return a.rows }

// Lab reports whether some counted decision has lab outcomes (replay:
// live), so that the lab columns apply.
func (a *Accumulator) Lab() bool { return a.lab > 0 }

// Duplicates is the number of rows whose decision key was already seen;
// they are counted in the cells but not paired.
func (a *Accumulator) Duplicates() int { return a.duplicates }

// Arms returns the (model, prompt) arms in first-seen order.
func (a *Accumulator) Arms() []Arm { return slices.Clone(a.groupArm) }

// Servers returns the servers (the bootstrap's clusters), sorted.
func (a *Accumulator) Servers() []string {
	s := slices.Clone(a.servers.names)
	slices.Sort(s)
	return s
}

// serverOrder returns the server indices sorted by name, so that the
// bootstrap draws do not depend on the order the rows came in.
func (a *Accumulator) serverOrder() []int32 {
	order := make([]int32, len(a.servers.names))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int { return strings.Compare(a.servers.names[x], a.servers.names[y]) })
	return order
}

// hasCond reports whether arm g has rows of condition c.
func (a *Accumulator) hasCond(g int32, c study.Condition) bool {
	i := condIndex(c)
	return i >= 0 && a.groupConds[g]&(1<<i) != 0
}
