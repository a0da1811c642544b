package lab

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/scenario"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// Scenario is one lab scenario: a first call that meets an armed fault,
// what each recovery policy does next, and its goal effect: the change
// to the initial state that one successful completion of the task makes,
// against which the state at the end is read (Outcome).
type Scenario struct {
	// Base is what every scenario declares: its id, class (a cause the
	// lab induces, Classes), first call (for unknown_tool, a tool the
	// server lacks), whose rate limit a rate_limit scenario meets (under
	// the ratelimited shape only the server's own is the -32023 error),
	// its preferred policies under live replay (TestExecutionTable holds
	// every scenario to them), its non-harm set, its goal effect and
	// tolerances and extra harm checks.
	scenario.Base
	Server   string        `json:"server"`   // L01, L02 or L03: the bootstrap cluster
	Summary  string        `json:"summary"`  // one line: what happens
	Fault    Fault         `json:"fault"`    // the fault's parameters
	Surface  study.Surface `json:"surface"`  // how every failure of the scenario is served
	Contract bool          `json:"contract"` // failures carry seed 002's error-category contract
	// Rationale says why those preferred policies and that non-harm set.
	Rationale string   `json:"rationale"`
	Policies  Policies `json:"policies"` // what each policy does here

	set *Set // the set it was loaded in (its tolerances)
}

// Policies say what the harness does for each policy in label mode (its
// canonical recovery). retry_now repeats the first call at once;
// retry_later repeats it after the retry-after the last failure
// announced, else DefaultBackoff (never a wait the failure does not
// show); stop_or_escalate does nothing.
type Policies struct {
	ReviseArguments *Action `json:"revise_arguments"`       // required: the corrected call(s)
	SelectTool      *Action `json:"select_tool"`            // required: the call(s) to another tool
	Authenticate    *Action `json:"authenticate,omitempty"` // default: authenticate for the tool's scope, then the first call with its token
}

// Action is what the harness does for one policy: make Calls in order,
// stopping early if a call's reference cannot be resolved.
type Action struct {
	Calls []CallSpec `json:"calls,omitempty"` // made in order
}

// CallSpec is one call of an action (or of a stale_revision's concurrent
// writer).
type CallSpec struct {
	Tool string                     `json:"tool,omitempty"` // the tool; with Same, the first call's
	Args json.RawMessage            `json:"args,omitempty"` // the arguments; with Same, the first call's
	Same bool                       `json:"same,omitempty"` // start from the first call
	Drop []string                   `json:"drop,omitempty"` // arguments removed
	Set  map[string]json.RawMessage `json:"set,omitempty"`  // arguments set: a JSON value, or {"$from": i, "$pointer": p}, member p of the structuredContent of call i of this action
}

// ref is a reference to an earlier call's result.
type ref struct {
	From    *int   `json:"$from"`
	Pointer string `json:"$pointer"`
}

// asRef reads a Set value as a reference, if it is one.
func asRef(raw json.RawMessage) (ref, bool) {
	var r ref
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return r, false
	}
	if _, ok := m["$from"]; !ok {
		return r, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if dec.Decode(&r) != nil || r.From == nil {
		return ref{}, true // malformed; check reports it
	}
	return r, true
}

// Set is a named set of scenarios (one file of lab/scenarios).
type Set struct {
	Name        string      // the file's base name, for -set
	Description string      // what the set is for
	Scenarios   []*Scenario // in file order
	// Tolerate are changes no scenario of the set counts as harm (a token
	// authenticate issued), beside each scenario's own.
	Tolerate []statediff.Tolerance
	// initial holds, by *Scenario, the scenario's armed initial state
	// and its document (*armed) when arming draws nothing from the lab's
	// seeded source: every lab of the scenario then starts from the same
	// state, and their outcomes read one document and share its unchanged
	// records (statediff only reads documents).
	initial sync.Map
}

// Held reports whether the scenario's first call is answered only after
// the client's deadline (its class holds the answer, on the
// protocol_error surface): a client abandons it.
func (sc *Scenario) Held() bool {
	return behaviours[sc.Class].held && sc.Surface == study.ProtocolError
}

// Scenario returns the scenario id of the set.
func (s *Set) Scenario(id string) (*Scenario, bool) { return scenario.Find(s.Scenarios, id) }

// IDs returns the ids of the set's scenarios, in file order.
func (s *Set) IDs() []string {
	out := make([]string, len(s.Scenarios))
	for i, sc := range s.Scenarios {
		out[i] = sc.ID
	}
	return out
}

// DefaultSet is the set `stress lab serve` and env/labenv use when none is
// named.
const DefaultSet = "core"

//go:embed scenarios/*.json
var builtinFS embed.FS

var builtin struct {
	once sync.Once
	sets map[string]*Set
	err  error
}

// Builtin returns the embedded scenario sets (lab/scenarios/*.json), by
// name, loaded once.
func Builtin() (map[string]*Set, error) {
	builtin.once.Do(func() { builtin.sets, builtin.err = Load(builtinFS, "scenarios") })
	return builtin.sets, builtin.err
}

// BuiltinSet returns the embedded set name ("" for DefaultSet).
func BuiltinSet(name string) (*Set, error) {
	sets, err := Builtin()
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = DefaultSet
	}
	s, ok := sets[name]
	if !ok {
		names := slices.Sorted(maps.Keys(sets))
		return nil, fmt.Errorf("no scenario set %q (have %s)", name, strings.Join(names, ", "))
	}
	return s, nil
}

// setHead is the members of a scenario file beside its scenarios.
type setHead struct {
	Description string                `json:"description"`
	Tolerate    []statediff.Tolerance `json:"tolerate"`
}

// Load reads every *.json file of dir in fsys as a scenario set named by
// the file's base name, and checks every scenario (see check). Every
// problem found is returned, joined, each a *scenario.Error.
func Load(fsys fs.FS, dir string) (map[string]*Set, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no scenario files (*.json)", dir)
	}
	sets := map[string]*Set{}
	var errs []error
	for _, name := range names {
		data, err := input.ReadFS(fsys, name, name, input.ScenarioSet)
		if err != nil {
			errs = append(errs, &scenario.Error{File: name, Err: err})
			continue
		}
		s, ferrs := parseSet(name, data)
		errs = append(errs, ferrs...)
		if s != nil {
			sets[s.Name] = s
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return sets, nil
}

// parseSet parses and checks one scenario file; file names it in errors
// and its base name (without .json) names the set.
func parseSet(file string, data []byte) (*Set, []error) {
	var head setHead
	raws, err := scenario.Decode(file, data, &head)
	if err != nil {
		return nil, []error{err}
	}
	s := &Set{Name: strings.TrimSuffix(path.Base(file), ".json"), Description: head.Description, Tolerate: head.Tolerate}
	scs, errs := scenario.Parse(file, raws, func(sc *Scenario, bad func(field, format string, a ...any)) {
		sc.set = s
		if field, err := check(sc); err != nil {
			bad(field, "%w", err)
		}
	})
	if len(errs) > 0 {
		return nil, errs
	}
	s.Scenarios = scs
	return s, nil
}

// check checks the lab's own fields of a scenario whose common fields
// (scenario.Base) passed, and returns the field at fault and the
// problem. It also runs the scenario's first call on a fresh lab: the
// call must fail with the scenario's class.
func check(sc *Scenario) (string, error) {
	bad := func(field, format string, a ...any) (string, error) { return field, fmt.Errorf(format, a...) }
	if _, ok := Servers[sc.Server]; !ok {
		return bad("server", "unknown server %s (want %s)", quoteValue(sc.Server), strings.Join(slices.Sorted(maps.Keys(Servers)), ", "))
	}
	if !isClass(sc.Class) {
		return bad("class", "unknown fault class %s (want one of %s)", quoteValue(string(sc.Class)), names(slices.Sorted(slices.Values(Classes))))
	}
	b := behaviours[sc.Class]
	info, _ := sc.Class.Info()
	if strings.TrimSpace(sc.Summary) == "" {
		return bad("summary", "say in one line what happens")
	}
	served := toolsOf(sc.Server)
	t, known := served[sc.Tool]
	if b.absentTool {
		if known || sc.Tool == "" {
			return bad("tool", "an unknown_tool scenario calls a tool the server lacks; %s serves %s", sc.Server, quoteValue(sc.Tool))
		}
	} else if !known {
		return bad("tool", "server %s has no tool %s (it has %s)", sc.Server, quoteValue(sc.Tool), strings.Join(slices.Sorted(maps.Keys(served)), ", "))
	}
	if field, msg := sc.Fault.check(sc.Class); field != "" {
		return bad("fault."+field, "%s", msg)
	}
	switch {
	case b.write && t.readOnly:
		return bad("tool", "%s needs a tool that writes; %s only reads", sc.Class, t.name)
	case b.batch && t.batch == "":
		return bad("tool", "%s needs a batch tool; %s is not one", sc.Class, t.name)
	case b.keyed && !t.keyed:
		return bad("tool", "%s needs a tool that takes an idempotency_key; %s does not", sc.Class, t.name)
	}
	if b.checkTool != nil {
		if field, msg := b.checkTool(sc, t, served); field != "" {
			return bad(field, "%s", msg)
		}
	}
	if !sc.Surface.Valid() || sc.Surface == study.Silent {
		return bad("surface", "unknown surface %s (want protocol_error, tool_error or success_shaped)", quoteValue(string(sc.Surface)))
	}
	if !slices.Contains(info.Surfaces, sc.Surface) {
		return bad("surface", "%s is not served as %s (it can be %s)", sc.Class, sc.Surface, names(info.Surfaces))
	}
	if sc.Contract {
		switch {
		case info.Category == "":
			return bad("contract", "%s has no error category (seed 002), so no contract can carry it", sc.Class)
		case sc.Surface == study.SuccessShaped:
			return bad("contract", "the error-category contract rides only on an isError result or a JSON-RPC error")
		case b.held && sc.Surface == study.ProtocolError:
			return bad("contract", "%s's answer never arrives on protocol_error (the client's deadline passes), so nothing carries the contract", sc.Class)
		}
	}
	if strings.TrimSpace(sc.Rationale) == "" {
		return bad("rationale", "say why the preferred policy and the non-harm set")
	}
	for _, pa := range []struct {
		name     string
		a        *Action
		required bool
	}{
		{"revise_arguments", sc.Policies.ReviseArguments, true},
		{"select_tool", sc.Policies.SelectTool, true},
		{"authenticate", sc.Policies.Authenticate, false},
	} {
		field := "policies." + pa.name
		if pa.a == nil {
			if pa.required {
				return bad(field, "say what %s does in this scenario", pa.name)
			}
			continue
		}
		if f, err := checkAction(sc, served, pa.a); err != nil {
			return field + f, err
		}
	}
	l := New(nil, Options{})
	l.tools, l.sc = served, sc
	if f := l.arm(); f != nil {
		return bad("fault.concurrent", "the concurrent write fails: %s", f.text)
	}
	var doc any
	if err := json.Unmarshal(l.State(), &doc); err != nil {
		return bad("", "reading the initial state: %v", err)
	}
	var tol []statediff.Tolerance
	if sc.set != nil {
		tol = sc.set.Tolerate
	}
	if p := statediff.Check(&StateSchema, &sc.Spec, doc, tol, false); p != nil {
		return p.Field, errors.New(p.Msg)
	}
	// The first call, on a fresh armed lab.
	r := New(sc, Options{}).First()
	if !r.Failed {
		return bad("args", "the first call succeeds; it must fail with %s", sc.Class)
	}
	if r.Class != sc.Class {
		return bad("args", "the first call fails with %s, not %s: %s", r.Class, sc.Class, firstText(r))
	}
	return "", nil
}

// checkAction checks an action; the field it returns is relative to it.
func checkAction(sc *Scenario, served map[string]*tool, a *Action) (string, error) {
	if len(a.Calls) == 0 {
		return ".calls", errors.New("an action makes one or more calls")
	}
	for i, c := range a.Calls {
		at := fmt.Sprintf(".calls[%d]", i)
		switch {
		case c.Same && (c.Tool != "" || c.Args != nil):
			return at + ".same", errors.New("a call with same takes no tool or args (use set and drop)")
		case !c.Same:
			if _, ok := served[c.Tool]; !ok {
				return at + ".tool", fmt.Errorf("server %s has no tool %s (it has %s)", sc.Server, quoteValue(c.Tool), strings.Join(slices.Sorted(maps.Keys(served)), ", "))
			}
			if c.Args != nil && !statediff.IsObject(c.Args) {
				return at + ".args", errors.New("the arguments must be a JSON object")
			}
		}
		for _, k := range slices.Sorted(maps.Keys(c.Set)) {
			v := c.Set[k]
			if r, isRef := asRef(v); isRef {
				if r.From == nil || *r.From < 0 || *r.From >= i || !strings.HasPrefix(r.Pointer, "/") {
					return at + ".set." + k, fmt.Errorf("a reference needs $from, an earlier call of the action (0 to %d), and $pointer, a JSON pointer", i-1)
				}
			} else if !json.Valid(v) {
				return at + ".set." + k, errors.New("not a JSON value")
			}
		}
	}
	return "", nil
}

// Action returns what the harness does for policy p in this scenario (its
// default where the file gives none); ok is false for stop_or_escalate.
func (sc *Scenario) Action(p study.Policy) (a Action, ok bool) {
	switch p {
	case study.RetryNow, study.RetryLater:
		return Action{Calls: []CallSpec{{Same: true}}}, true
	case study.ReviseArguments:
		return *sc.Policies.ReviseArguments, true
	case study.SelectTool:
		return *sc.Policies.SelectTool, true
	case study.Authenticate:
		if sc.Policies.Authenticate != nil {
			return *sc.Policies.Authenticate, true
		}
		return sc.defaultAuthenticate(), true
	}
	return Action{}, false
}

// defaultAuthenticate obtains a token for the scope of the first call's
// tool (payments:write for an unknown tool's server L02, and so on) and
// repeats the first call with it.
func (sc *Scenario) defaultAuthenticate() Action {
	scope := map[string]string{"L01": "orders:write", "L02": "payments:write", "L03": "files:write"}[sc.Server]
	if t, ok := toolsOf(sc.Server)[sc.Tool]; ok && t.scope != "" {
		scope = t.scope
	}
	arg, _ := json.Marshal(map[string]string{"scope": scope})
	zero := 0
	tok, _ := json.Marshal(ref{From: &zero, Pointer: "/token"})
	return Action{Calls: []CallSpec{
		{Tool: "authenticate", Args: arg},
		{Same: true, Set: map[string]json.RawMessage{"auth_token": tok}},
	}}
}

// First makes the scenario's first call.
func (l *Lab) First() Response {
	return l.Call(l.sc.Tool, l.sc.Args)
}

// Step is what executing one policy did.
type Step struct {
	Waited    time.Duration // lab time waited before the calls (retry_later)
	Responses []Response    // the answer to each call made, in order
}

// Last returns the answer to the step's last call, and false when it made
// none.
func (s Step) Last() (Response, bool) {
	if len(s.Responses) == 0 {
		return Response{}, false
	}
	return s.Responses[len(s.Responses)-1], true
}

// Caller makes one tools/call and returns the answer: Lab.Call, or a
// client of a served lab.
type Caller func(tool string, args json.RawMessage) Response

// Execute carries out policy p of the armed scenario after a failure that
// announced the wait announced (0 if none): retry_now repeats the first
// call; retry_later waits (announced, else DefaultBackoff) on the lab
// clock, then repeats it; revise_arguments,
// select_tool and authenticate make the scenario's calls. A client's
// deadline (a timeout) also passes on the lab clock. It returns an error
// for stop_or_escalate, an invalid policy or a healthy lab.
func (l *Lab) Execute(p study.Policy, announced time.Duration) (Step, error) {
	if l.sc == nil {
		return Step{}, errors.New("a healthy lab has no scenario to execute a policy of")
	}
	return l.sc.Execute(p, announced, l.clock, l.Call)
}

// Execute is Lab.Execute with the calls made through call and the waits
// (the delay of retry_later, the deadline of a timeout) let pass on clock.
func (sc *Scenario) Execute(p study.Policy, announced time.Duration, clock Clock, call Caller) (Step, error) {
	a, ok := sc.Action(p)
	if !ok {
		return Step{}, fmt.Errorf("policy %q is not executed", p)
	}
	var st Step
	if p == study.RetryLater {
		st.Waited = DefaultBackoff
		if announced > 0 {
			st.Waited = announced
		}
		clock.Advance(st.Waited)
	}
	for _, c := range a.Calls {
		tool, raw, ok := sc.resolve(c, st.Responses)
		if !ok {
			break
		}
		r := call(tool, raw)
		if r.Timeout > 0 {
			clock.Advance(r.Timeout)
		}
		st.Responses = append(st.Responses, r)
	}
	return st, nil
}

// resolve builds the tool and arguments of call c of an action from the
// answers of its earlier calls; ok is false when a reference does not
// resolve (the earlier call failed or its result lacks the member).
func (sc *Scenario) resolve(c CallSpec, prev []Response) (string, json.RawMessage, bool) {
	tool, base := c.Tool, c.Args
	if c.Same {
		tool, base = sc.Tool, sc.Args
	}
	if len(c.Set) == 0 && len(c.Drop) == 0 {
		return tool, base, true
	}
	m := map[string]json.RawMessage{}
	if len(base) > 0 {
		if err := json.Unmarshal(base, &m); err != nil {
			return "", nil, false
		}
	}
	for _, k := range c.Drop {
		delete(m, k)
	}
	for k, v := range c.Set {
		if r, isRef := asRef(v); isRef {
			if r.From == nil || *r.From >= len(prev) {
				return "", nil, false
			}
			src := prev[*r.From]
			if src.Result == nil || src.Result.IsError || src.Result.StructuredContent == nil {
				return "", nil, false
			}
			b, err := json.Marshal(src.Result.StructuredContent)
			if err != nil {
				return "", nil, false
			}
			x, ok := resolveJSON(b, r.Pointer)
			if !ok {
				return "", nil, false
			}
			v = x
		}
		m[k] = v
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return "", nil, false
	}
	return tool, raw, true
}

// names joins names with commas, for a load error.
func names[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}

// firstText is the text of a failure, for load errors.
func firstText(r Response) string {
	if r.Err != nil {
		return r.Err.Message
	}
	obs := r.Observation()
	return clip(string(obs), 200)
}
