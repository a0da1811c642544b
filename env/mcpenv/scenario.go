package mcpenv

import (
	"cmp"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/mcpstress/stress/env"
	"github.com/mcpstress/stress/scenario"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// Scenario is one act scenario on a reference server: the shared act
// scenario (its id, class, task, failing call, argument at fault,
// preferred policies, non-harm set, canonical repairs, goal effect,
// tolerances and extra harm checks on the calls, whose effect the state
// may not show) on one of Servers, with the files and setup it starts
// from.
type Scenario struct {
	env.ActScenario
	Server string               `json:"server"`          // a key of Servers
	Files  map[string]string    `json:"files,omitempty"` // files seeded in the allowed directory, by path relative to it
	Setup  []simulator.ToolCall `json:"setup,omitempty"` // calls made before the first (they must succeed)
}

// Set is the scenarios of one file of env/mcpenv/scenarios.
type Set struct {
	Name      string
	Scenarios []*Scenario
}

// Scenario returns scenario id of the set.
func (s *Set) Scenario(id string) (*Scenario, bool) { return scenario.Find(s.Scenarios, id) }

//go:embed scenarios/*.json
var builtin embed.FS

// DefaultSet is the set of the reference scenarios.
const DefaultSet = "reference"

// BuiltinSet loads the embedded set name ("" for DefaultSet).
func BuiltinSet(name string) (*Set, error) {
	name = cmp.Or(name, DefaultSet)
	file, data, err := scenario.Builtin(builtin, "env/mcpenv", name)
	if err != nil {
		return nil, fmt.Errorf("mcpenv: %w", err)
	}
	return Parse(file, name, data)
}

// stateSchema is what the outcome's diff reads of a sandbox's state
// (State): the memory graph's entities (by name) and relations, the files
// and directories of the allowed directory (by path); the calls are a
// log, and so is capped (what the reader left out at its caps). A new
// file is a regular file read whole (no link, no kind, not truncated),
// its size what its content makes it; a new entity or relation has the
// type server-memory writes. The extra harm checks may count the calls.
var stateSchema = statediff.Schema{
	Collections: []statediff.Collection{
		{Path: "/memory/entities", Key: []string{"name"}, Fields: []string{"type", "name", "entityType", "observations"}, Defaults: map[string]any{"type": "entity"}},
		{Path: "/memory/relations", Key: []string{"from", "relationType", "to"}, Fields: []string{"type", "from", "to", "relationType"}, Defaults: map[string]any{"type": "relation"}},
		{Path: "/files", Key: []string{"path"}, Fields: []string{"path", "content", "size", "truncated", "link", "kind"},
			Defaults: map[string]any{"truncated": nil, "link": nil, "kind": nil}, Free: []string{"size"}},
		{Path: "/directories", Key: []string{"path"}, Fields: []string{"path"}},
	},
	Logs:    []string{"/calls", "/capped"},
	Counted: []statediff.Collection{{Path: "/calls", Fields: []string{"seq", "tool", "arguments", "args", "ok"}}},
}

// Parse reads and checks a scenario set (the format of package
// scenario); errors name the file, the scenario and the field.
func Parse(file, name string, data []byte) (*Set, error) {
	raws, err := scenario.Decode(file, data, nil)
	if err != nil {
		return nil, err
	}
	scs, errs := scenario.Parse(file, raws, check)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Set{Name: name, Scenarios: scs}, nil
}

// check checks the fields of a reference scenario beside
// scenario.Base's, its goal and harm checks against the state it starts
// in (expectedInitial).
func check(sc *Scenario, bad func(field, format string, a ...any)) {
	sc.ActScenario.Check(bad)
	if _, ok := Servers[sc.Server]; !ok {
		bad("server", "unknown server %q (want memory, filesystem or everything)", sc.Server)
	}
	if _, ok := classProbes[sc.Class]; !ok {
		bad("class", "unknown class %q (want invalid_type, missing_field, unknown_tool or invalid_value)", sc.Class)
	}
	if (sc.Class == study.UnknownTool) != (sc.Pointer == "") {
		bad("pointer", "want a JSON pointer to the argument at fault for every class but unknown_tool, got %q", sc.Pointer)
	}
	if p := statediff.Check(&stateSchema, &sc.Spec, sc.expectedInitial(), nil, true); p != nil {
		bad(p.Field, "%s", p.Msg)
	}
	for j, c := range sc.Setup {
		if c.Tool == "" || !json.Valid(c.Arguments) {
			bad(fmt.Sprintf("setup[%d]", j), "want a tool and JSON arguments")
		}
	}
}

// expectedInitial is the state a sandbox of sc starts the decision in, as
// far as the scenario itself says: its seeded files and the entities and
// relations its setup creates. Parse checks the goal against it; Start
// checks it again against the state it reads.
func (sc *Scenario) expectedInitial() any {
	files, dirs := []any{}, []any{}
	seenDir := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(sc.Files)) {
		files = append(files, map[string]any{"path": "/" + p, "content": sc.Files[p], "size": float64(len(sc.Files[p]))})
		for d := path.Dir("/" + p); d != "/" && !seenDir[d]; d = path.Dir(d) {
			seenDir[d] = true
			dirs = append(dirs, map[string]any{"path": d})
		}
	}
	ents, rels := []any{}, []any{}
	for _, c := range sc.Setup {
		var a struct {
			Entities  []map[string]any `json:"entities"`
			Relations []map[string]any `json:"relations"`
		}
		json.Unmarshal(c.Arguments, &a)
		switch c.Tool {
		case "create_entities":
			for _, e := range a.Entities {
				e["type"] = "entity"
				ents = append(ents, e)
			}
		case "create_relations":
			for _, r := range a.Relations {
				r["type"] = "relation"
				rels = append(rels, r)
			}
		}
	}
	return map[string]any{"memory": map[string]any{"entities": ents, "relations": rels}, "files": files, "directories": dirs, "calls": []any{}}
}
