package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// This file holds the defaults table of a bundle. A call line leaves out
// what every line of its scenario repeats (the scenario's server,
// preferred policy, proven preferred set and non-harm set, left out
// together), its seed when it
// is the one derived from the study seed (simulator.Seed), and its turn
// when it is 0: together about a fifth of a line. defaults.json holds the
// scenario fields and the study seed, and which of the study's conditions
// express each scenario (for the like-for-like contrasts of analysis); it
// is written once, before the first call line, and never changes. A line
// whose fields are not the table's carries them.

// DefaultsFile is the name of the defaults table inside a bundle.
const DefaultsFile = "defaults.json"

// Defaults is what the call lines of a bundle leave out, and which of
// the study's conditions express each scenario.
type Defaults struct {
	// Seed is the study seed a line's seed is derived from.
	Seed uint64 `json:"seed"`
	// Conditions are the study's conditions, whose expression of each
	// scenario the table records (ScenarioFields.Unexpressed). Absent in
	// a table written before it recorded them (and in one results.Upgrade
	// wrote): then no scenario is known to be unexpressed, and every
	// contrast pairs every scenario.
	Conditions []study.Condition `json:"conditions,omitempty"`
	// Scenarios are the fields of each scenario's lines, by scenario id.
	Scenarios map[string]ScenarioFields `json:"scenarios"`
}

// ScenarioFields are the fields a call line leaves out when they are its
// scenario's, and the conditions that do not express the scenario.
type ScenarioFields struct {
	Server    string       `json:"server"`
	Preferred study.Policy `json:"preferred"`
	// PreferredSet is the scenario's proven preferred set (Call), absent
	// when it declares none.
	PreferredSet []study.Policy `json:"preferred_policies,omitempty"`
	NonHarm      []study.Policy `json:"non_harm"`
	// Unexpressed are the study's conditions (Defaults.Conditions) whose
	// rendering of the scenario does not carry what defines them
	// (conditions.Expresses), in the study's order; absent when every one
	// does. A like-for-like contrast leaves the scenario out
	// (docs/error-shapes.md). No call line carries it.
	Unexpressed []study.Condition `json:"unexpressed,omitempty"`
}

// NewDefaults is the defaults table of a study with seed, scenarios and
// conditions conds: each scenario's fields, and the conditions of conds
// that do not express it (conditions.Unexpressed).
func NewDefaults(seed uint64, scenarios []study.Scenario, conds []study.Condition) *Defaults {
	d := &Defaults{Seed: seed, Conditions: slices.Clone(conds), Scenarios: make(map[string]ScenarioFields, len(scenarios))}
	for i := range scenarios {
		s := &scenarios[i]
		d.Scenarios[s.ID] = ScenarioFields{Server: s.Server, Preferred: s.Preferred, PreferredSet: s.PreferredSet, NonHarm: s.NonHarm,
			Unexpressed: conditions.Unexpressed(s, conds)}
	}
	return d
}

// Coverage reports whether d records which conditions express each
// scenario (a table written before it did, or by results.Upgrade, does
// not).
func (d *Defaults) Coverage() bool { return len(d.Conditions) > 0 }

// WithoutCoverage returns a copy of d that records no coverage: the
// table of a bundle merged from shards of which some do not record it.
func (d *Defaults) WithoutCoverage() *Defaults {
	e := &Defaults{Seed: d.Seed, Scenarios: make(map[string]ScenarioFields, len(d.Scenarios))}
	for id, f := range d.Scenarios {
		f.Unexpressed = nil
		e.Scenarios[id] = f
	}
	return e
}

// LoadDefaults reads a defaults.json file.
func LoadDefaults(file string) (*Defaults, error) {
	b, err := input.ReadFile(file, input.BundleJSON)
	if err != nil {
		return nil, err
	}
	var d Defaults
	if err := json.Unmarshal(b, &d); err != nil {
		var torn *json.SyntaxError
		if errors.As(err, &torn) {
			// A run writes the table without an fsync (KeepDefaults).
			return nil, fmt.Errorf("%s: %w (a crash can leave it torn: stress run -resume %s rewrites it from the study)", file, err, filepath.Dir(file))
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for id, f := range d.Scenarios {
		if f.Server == "" {
			return nil, fmt.Errorf("%s: scenario %s has no server", file, id)
		}
	}
	return &d, nil
}

// KeepDefaults makes file hold d: it writes d when the file is missing or
// torn (not JSON: a crash after a write that was not fsynced), and
// otherwise requires the file to hold d already (a resumed or merged
// bundle's table never changes; Same), keeping a table written before
// tables recorded coverage as it is. sync says whether to fsync what it
// writes: a run need not, since d is derived from the study, which every
// resume loads, checks and keeps the table from again; a merged bundle
// has nothing to rebuild it from. wrote says it wrote the file.
func KeepDefaults(file string, d *Defaults, sync bool) (wrote bool, err error) {
	old, err := LoadDefaults(file)
	var torn *json.SyntaxError
	if errors.Is(err, os.ErrNotExist) || errors.As(err, &torn) {
		return true, writeJSON(file, d, sync)
	}
	if err != nil {
		return false, err
	}
	return false, old.Same(d, file)
}

// Same returns an error naming the first difference between d and e, the
// tables of two bundles that must be one study (file labels the error).
// The conditions that express each scenario are compared only when both
// tables record them (Coverage): a table written before they were
// recorded is the same study's, without them.
func (d *Defaults) Same(e *Defaults, file string) error {
	if d.Seed != e.Seed {
		return fmt.Errorf("%s: study seed %d, but this study's is %d", file, d.Seed, e.Seed)
	}
	both := d.Coverage() && e.Coverage()
	if both && !slices.Equal(d.Conditions, e.Conditions) {
		return fmt.Errorf("%s: conditions %v, but this study's are %v", file, d.Conditions, e.Conditions)
	}
	ids := slices.AppendSeq(slices.Collect(maps.Keys(d.Scenarios)), maps.Keys(e.Scenarios))
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		a, inD := d.Scenarios[id]
		b, inE := e.Scenarios[id]
		ua, ub := a.Unexpressed, b.Unexpressed
		a.Unexpressed, b.Unexpressed = nil, nil
		if !inD || !inE || !reflect.DeepEqual(a, b) {
			return fmt.Errorf("%s: scenario %s is %+v there, but this study's is %+v", file, id, a, b)
		}
		if both && !slices.Equal(ua, ub) {
			return fmt.Errorf("%s: scenario %s is not expressed by %v there, but by %v in this study (conditions.Expresses changed since the bundle was written?)", file, id, ua, ub)
		}
	}
	return nil
}

// carried says which of the fields a call line may leave out it
// carries.
type carried struct {
	scenario bool // server, preferred, preferred_policies and non_harm
	seed     bool
}

// all reports whether the line carries every field (it needs no table).
func (c carried) all() bool { return c.scenario && c.seed }

// errNoDefaults is a line that leaves out fields, read without a
// defaults table.
var errNoDefaults = errors.New("the line leaves out its scenario's fields or its seed, and there is no " + DefaultsFile + " beside the file (a bundle needs it)")

// fill sets the fields line h left out (c says which it carried) from d;
// it fails when d is nil (errNoDefaults) or does not know the line's
// scenario.
func (d *Defaults) fill(h *Head, c carried) error {
	if c.all() {
		return nil
	}
	if d == nil {
		return fmt.Errorf("decision %s turn %d: %w", h.Key, h.Turn, errNoDefaults)
	}
	if !c.scenario {
		f, ok := d.Scenarios[h.Key.Scenario]
		if !ok {
			return fmt.Errorf("decision %s turn %d: the line leaves out its scenario's fields, and %s has no scenario %s", h.Key, h.Turn, DefaultsFile, h.Key.Scenario)
		}
		h.Server, h.Preferred, h.PreferredSet, h.NonHarm = f.Server, f.Preferred, f.PreferredSet, f.NonHarm
	}
	if !c.seed {
		h.Seed = simulator.Seed(d.Seed, h.Key.Scenario, h.Key.Replicate, h.Turn)
	}
	return nil
}

// carries reports which fields of call c a line carries under d: the
// scenario fields unless they are the scenario's, the seed unless it is
// the derived one.
func (d *Defaults) carries(c *Call) carried {
	f, ok := d.Scenarios[c.Key.Scenario]
	return carried{
		scenario: !ok || f.Server == "" || f.Server != c.Server || f.Preferred != c.Preferred || !slices.Equal(f.PreferredSet, c.PreferredSet) || !slices.Equal(f.NonHarm, c.NonHarm),
		seed:     c.Seed != simulator.Seed(d.Seed, c.Key.Scenario, c.Key.Replicate, c.Turn),
	}
}

// defaultsBeside loads the defaults table beside the file name (nil when
// there is none).
func defaultsBeside(name string) (*Defaults, error) {
	d, err := LoadDefaults(filepath.Join(filepath.Dir(name), DefaultsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return d, err
}

// beside is a table a reader of a bundle's file needs (its messages, its
// defaults): given, or loaded from beside the file at first need.
type beside[T any] struct {
	file   string // the file read ("": not a file, the table must be given)
	load   func(file string) (*T, error)
	v      *T
	loaded bool // v was given or looked for
}

// set gives the table.
func (b *beside[T]) set(v *T) { b.v, b.loaded = v, true }

// get returns the table, loading it the first time (nil when there is
// none).
func (b *beside[T]) get() (*T, error) {
	if !b.loaded && b.file != "" {
		b.loaded = true
		v, err := b.load(b.file)
		if err != nil {
			return nil, err
		}
		b.v = v
	}
	return b.v, nil
}
