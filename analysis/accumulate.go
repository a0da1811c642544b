package analysis

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// Accumulator collects, in one pass over the decision rows, everything the
// sensitivity analysis needs: the counts of every cell, their per-server
// sufficient statistics (for the cluster bootstrap), and one packed outcome per
// decision (for pairing decisions across conditions or bundles). Rows can
// be streamed (results.ScanRows): the Accumulator copies what it keeps.
//
// Memory: O(cells × servers) for the counts, O(scenarios) for the ids,
// 4·(3 + len(PassKColumns)) bytes per (cell, scenario) for pass^k,
// and a record of 25 bytes per decision for the pairing, of which at most
// spillAt stay in memory (the rest in a temporary file, spill.go). Rows
// that are not in a finished bundle's order (each cell's rows together,
// by scenario and replicate) are paired through an in-memory table built
// from those records: about 20 bytes per (model, prompt, scenario,
// replicate) unit, and four per unit and condition the bundle has.
type Accumulator struct {
	tally *results.Tally
	// perServer[cell][server] are the counts of one cell on one server.
	perServer [][]serverCounts

	servers   interner
	groups    map[Arm]int32
	scenarios interner
	// records are the pairing's records, index where each cell's are.
	records recordLog
	index   recordIndex
	// passk counts each (cell, scenario)'s replicates and successes, for
	// pass^k (passk.go).
	passk passTally
	// tableOnce builds the pairing table from the records (table).
	tableOnce sync.Once
	tableErr  error
	// Pairing table: one unit per (group, scenario, replicate), with one
	// packed outcome per condition the bundle has: condFlags[c][u] for
	// condition c of study.AllConditions (nil for one without rows;
	// shorter than the units when the last units have none).
	units      unitIndex
	unitKeys   []unitKey
	unitServer []int32
	condFlags  [][]results.Flags
	groupConds []uint64 // per group: bit i set when condition i has a row
	groupArm   []Arm

	// last remembers the previous row's cell, arm, scenario and server:
	// a bundle's rows come cell by cell, scenario by scenario.
	last struct {
		ci                int
		gi                int32
		scenario, server  string
		scenarioID, srvID int32
		ok                bool
	}

	rows       int // rows added
	lab        int // counted rows with lab outcomes (live replay)
	duplicates int // rows whose decision key was already seen
	unknown    int // rows whose condition is not one of study.AllConditions

	// provenWide says some decision's scenario declares a proven
	// preferred set wider than its preferred policy (NoteProvenSet).
	provenWide bool

	// covered has bit i set for each condition i of study.AllConditions
	// whose expression of each scenario the bundle records
	// (NoteCoverage); unexpressed holds, by scenario id, the bits of the
	// covered conditions that do not express the scenario (only scenarios
	// with some: 8 bytes and the id each, never per decision).
	covered     uint64
	unexpressed map[string]uint64
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
// decisions with lab outcomes, then each column of simulator.Columns in
// order (a count, or a lab sum), then Extra.
type serverCounts struct {
	n     int
	lab   int
	col   [simulator.NumColumns]int
	extra int
}

type unitKey struct {
	group, scenario int32
	replicate       int64
}

// unitIndex maps unit keys to units: by (group, scenario), a slice by
// replicate for the usual small replicate numbers, and a map for others.
type unitIndex struct {
	byGS  map[[2]int32]*[]int32 // unit+1 by replicate; 0: none
	other map[unitKey]int32
	// last is the slice of the previous lookup's (group, scenario).
	lastGS [2]int32
	last   *[]int32
}

// maxDenseReplicate bounds the replicates a unitIndex keeps in slices.
const maxDenseReplicate = 1 << 12

// get returns the unit of k.
func (x *unitIndex) get(k unitKey) (int32, bool) {
	if k.replicate < 0 || k.replicate >= maxDenseReplicate {
		u, ok := x.other[k]
		return u, ok
	}
	// No memo here: lookups run concurrently (Analyze), after the Adds.
	reps := x.byGS[[2]int32{k.group, k.scenario}]
	if reps == nil || int(k.replicate) >= len(*reps) || (*reps)[k.replicate] == 0 {
		return 0, false
	}
	return (*reps)[k.replicate] - 1, true
}

// put records unit u for k.
func (x *unitIndex) put(k unitKey, u int32) {
	if k.replicate < 0 || k.replicate >= maxDenseReplicate {
		if x.other == nil {
			x.other = map[unitKey]int32{}
		}
		x.other[k] = u
		return
	}
	reps := x.reps(k)
	for int(k.replicate) >= len(*reps) {
		*reps = append(*reps, 0)
	}
	(*reps)[k.replicate] = u + 1
}

// reps is the slice of k's (group, scenario), created when missing.
func (x *unitIndex) reps(k unitKey) *[]int32 {
	gs := [2]int32{k.group, k.scenario}
	if x.last != nil && x.lastGS == gs {
		return x.last
	}
	p := x.byGS[gs]
	if p == nil {
		if x.byGS == nil {
			x.byGS = map[[2]int32]*[]int32{}
		}
		p = new([]int32)
		x.byGS[gs] = p
	}
	x.last, x.lastGS = p, gs
	return p
}

// interner maps strings to dense indices in first-seen order.
type interner struct {
	idx   map[string]int32
	names []string
}

// get returns the interned copy of s and its index.
func (in *interner) get(s string) (string, int32) {
	i := in.id(s)
	return in.names[i], i
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

// NewAccumulator returns an empty Accumulator.
func NewAccumulator() *Accumulator {
	return &Accumulator{tally: results.NewTally(), groups: map[Arm]int32{}}
}

func init() {
	if len(study.AllConditions) > 64 {
		panic("analysis: more than 64 conditions do not fit the bits of Accumulator.groupConds")
	}
}

// condIndex is c's index in study.AllConditions, -1 for an unknown one.
func condIndex(c study.Condition) int {
	return slices.Index(study.AllConditions, c)
}

// NoteProvenSet records the proven preferred set of a decision's
// scenario (results.Head.PreferredSet, the set the Proven column
// credits). Once one is wider than the preferred policy, the
// predeclared contrasts on Strict are computed on Proven too (see
// Predeclared); otherwise Proven is Strict on every decision, and its
// contrasts would be the Strict ones again.
func (a *Accumulator) NoteProvenSet(set []study.Policy) {
	if len(set) > 1 {
		a.provenWide = true
	}
}

// NoteCoverage records which of the study's conditions express each
// scenario, as the bundle's defaults table d holds it
// (results.ScenarioFields.Unexpressed): a like-for-like contrast
// (PairSpec.LikeForLike) pairs only the scenarios both of its conditions
// express, and Analysis.Coverage lists the conditions that do not express
// every scenario. A table that records none (nil, or written before
// tables did: results.Defaults.Coverage) restricts nothing.
func (a *Accumulator) NoteCoverage(d *results.Defaults) {
	if d == nil || !d.Coverage() {
		return
	}
	for _, c := range d.Conditions {
		if i := condIndex(c); i >= 0 {
			a.covered |= 1 << i
		}
	}
	for id, f := range d.Scenarios {
		var m uint64
		for _, c := range f.Unexpressed {
			if i := condIndex(c); i >= 0 {
				m |= 1 << i
			}
		}
		if m &= a.covered; m != 0 {
			if a.unexpressed == nil {
				a.unexpressed = map[string]uint64{}
			}
			a.unexpressed[id] = m
		}
	}
}

// unexpressedMasks returns, by scenario index, the bits of the
// conditions that do not express the scenario; nil when none is known
// not to express any scenario.
func (a *Accumulator) unexpressedMasks() []uint64 {
	if len(a.unexpressed) == 0 {
		return nil
	}
	m := make([]uint64, len(a.scenarios.names))
	for i, id := range a.scenarios.names {
		m[i] = a.unexpressed[id]
	}
	return m
}

// Add counts one decision row. A row with an unknown condition is counted
// in its cell but cannot be paired; a second row with the same decision key
// is counted (as results.Tally does) and reported by Duplicates.
func (a *Accumulator) Add(r *results.Row) {
	ci := a.tally.Add(r) // the cells of the tally and of perServer are one list
	last := &a.last
	if !last.ok || ci != last.ci {
		last.ci, last.gi, last.ok = ci, -1, true
	}
	if ci == len(a.perServer) {
		a.perServer = append(a.perServer, nil)
	}
	a.rows++

	if r.Server != last.server || last.server == "" {
		last.server, last.srvID = a.servers.get(r.Server)
	}
	si := last.srvID
	ps := a.perServer[ci]
	for int(si) >= len(ps) {
		ps = append(ps, serverCounts{})
	}
	a.perServer[ci] = ps
	f := results.FlagsOf(r)
	if f&results.FlagOK != 0 {
		sc := &ps[si]
		sc.n++
		if f&results.FlagLab != 0 {
			sc.lab++
			a.lab++
		}
		for i := range simulator.Columns {
			if v, ok := r.Outcome.Get(simulator.Col(i)); ok {
				sc.col[i] += int(v)
			}
		}
		sc.extra += int(r.Replays)
	}

	if r.Scenario != last.scenario || last.scenario == "" {
		last.scenario, last.scenarioID = a.scenarios.get(r.Scenario)
	}
	a.passk.add(ci, last.scenarioID, si, f)

	cond := condIndex(study.Condition(r.Condition))
	if cond < 0 {
		a.unknown++
		return
	}
	gi := last.gi
	if gi < 0 {
		var ok bool
		gi, ok = a.groups[Arm{r.Model, r.Prompt}]
		if !ok {
			arm := Arm{strings.Clone(r.Model), strings.Clone(r.Prompt)}
			gi = int32(len(a.groupArm))
			a.groups[arm] = gi
			a.groupConds = append(a.groupConds, 0)
			a.groupArm = append(a.groupArm, arm)
		}
		last.gi = gi
	}
	a.groupConds[gi] |= 1 << cond
	rec := unitRecord{group: gi, scenario: last.scenarioID, server: si, cond: int8(cond), replicate: r.Replicate, flags: f}
	a.index.note(a.records.len(), &rec)
	a.records.add(&rec)
}

// table builds the pairing table from the records, once: the pairing of
// rows that cannot be merged (recordIndex), and Compare's.
func (a *Accumulator) table() error {
	a.tableOnce.Do(func() {
		if a.tableErr = a.records.sealed(); a.tableErr != nil {
			return
		}
		rr := a.records.reader(0, a.records.len())
		for rr.next() {
			r := &rr.current
			a.addUnit(r.group, r.scenario, r.server, int(r.cond), r.replicate, r.flags)
		}
		a.tableErr = rr.err
	})
	return a.tableErr
}

// addUnit enters one row in the pairing table.
func (a *Accumulator) addUnit(gi, scenario, si int32, cond int, replicate int64, f results.Flags) {
	uk := unitKey{gi, scenario, replicate}
	ui, ok := a.units.get(uk)
	if !ok {
		ui = int32(len(a.unitKeys))
		a.units.put(uk, ui)
		a.unitKeys = append(a.unitKeys, uk)
		a.unitServer = append(a.unitServer, si)
	}
	if a.condFlags == nil {
		a.condFlags = make([][]results.Flags, len(study.AllConditions))
	}
	cf := a.condFlags[cond]
	if int(ui) >= len(cf) {
		for int(ui) >= len(cf) {
			cf = append(cf, 0)
		}
		a.condFlags[cond] = cf
	}
	slot := &cf[ui]
	if *slot&results.FlagSeen != 0 {
		a.duplicates++
		return
	}
	*slot = f
}

// merged says the pairing merges the records of two cells
// (joinPairing): every cell's records came together, in increasing
// scenario and replicate order, and each scenario on one server (or there
// are none). Otherwise it reads the pairing table (table).
func (a *Accumulator) merged() bool { return a.records.len() == 0 || a.index.mergeable }

// flags returns unit u's packed outcome at condition index c (0: no row).
func (a *Accumulator) flags(u, c int) results.Flags {
	if c < len(a.condFlags) && u < len(a.condFlags[c]) {
		return a.condFlags[c][u]
	}
	return 0
}

// Cells returns the counts of every cell in first-seen order (as results.Count).
func (a *Accumulator) Cells() []results.Cell { return a.tally.Cells() }

// Decisions is the number of rows added: decisions counted and error
// decisions.
func (a *Accumulator) Decisions() int { return a.rows }

// Lab reports whether some counted decision has lab outcomes (replay:
// live), so that the lab columns apply.
func (a *Accumulator) Lab() bool { return a.lab > 0 }

// DuplicatesWarning is the data-quality warning for the rows that repeat
// a decision (Duplicates), or "" when none does.
func (a *Accumulator) DuplicatesWarning() string {
	if a.merged() {
		return "" // each cell's keys strictly increase: none repeats
	}
	if err := a.table(); err != nil {
		return "data quality: repeated decisions could not be counted: " + err.Error()
	}
	if a.duplicates == 0 {
		return ""
	}
	return fmt.Sprintf("data quality: %d decision rows repeat a decision already read (in both %s and %s); each is counted in the cells, only the first is paired", a.duplicates, results.CallsFile, results.DecisionsFile)
}

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
