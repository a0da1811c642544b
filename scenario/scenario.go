// Package scenario is the one format of the scenario sets of every
// environment: the in-process lab (lab/scenarios), the reference MCP
// servers (env/mcpenv/scenarios) and the database (env/dbenv/scenarios,
// a user's own set). A scenario of each embeds Base, which holds what
// every scenario declares (its id, fault class and failing first call,
// its proven preferred policies and non-harm set, its outcome:
// statediff.Spec's goal, tolerances and extra harm checks), and adds its
// environment's own fields. A set file is a JSON object whose scenarios
// member lists the scenarios, beside its environment's own members;
// Decode and Parse read it, so that every set is refused the same way,
// naming the file, the scenario and the field (Error).
package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// Base is what every scenario declares, whatever its environment.
type Base struct {
	ID string `json:"id"` // unique in its set: 1 to 40 of A-Z a-z 0-9 _ . -
	// Class is the fault class of the first call's failure: a cause
	// (study.Cause) the environment can make, which its own check
	// names (the reference servers also have missing_field, the
	// missing_required probe, whose cause is invalid_type).
	Class study.Cause     `json:"class"`
	Tool  string          `json:"tool"` // the tool of the first, failing call
	Args  json.RawMessage `json:"args"` // its arguments, a JSON object
	// Limit says whose rate limit a rate_limit scenario meets (and no
	// other scenario has one): LimitServer, the server's own limit on
	// the tool's callers (the -32023 error under the ratelimited shape,
	// SEP-3304 RL-6), or LimitUpstream, a limit of a dependency the tool
	// calls.
	Limit string `json:"limit,omitempty"`
	// PreferredSet are the preferred policies: those whose canonical
	// recovery, executed on a fresh environment, recovers without harm
	// (or, where none does, those that harm nothing, stop_or_escalate
	// first), the one Strict credits first. Each environment's
	// TestExecutionTable holds every scenario to it.
	PreferredSet []study.Policy `json:"preferred_policies"`
	// Preferred is PreferredSet's first: the label Strict credits and
	// the corpus record names.
	Preferred study.Policy `json:"-"`
	// NonHarm are the policies whose execution harms nothing:
	// stop_or_escalate and every preferred policy among them.
	NonHarm []study.Policy `json:"non_harm"`
	// Spec is the outcome: the goal effect, the tolerated changes,
	// whether a goal left half done is harm, and the extra harm checks.
	statediff.Spec
}

// Whose rate limit a rate_limit scenario meets (Base.Limit).
const (
	LimitServer   = "server"   // the server's own limit on the tool's callers
	LimitUpstream = "upstream" // a limit of a dependency the tool calls
)

// Scenario is a scenario of some environment: a struct that embeds Base.
type Scenario interface{ base() *Base }

func (b *Base) base() *Base { return b }

// InNonHarm reports whether p is in the scenario's non-harm set.
func (b *Base) InNonHarm(p study.Policy) bool { return slices.Contains(b.NonHarm, p) }

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,40}$`)

// check checks the fields every scenario has, one problem a field at
// most, and reports each through bad.
func (b *Base) check(bad func(field, format string, a ...any)) {
	if !idPattern.MatchString(b.ID) {
		bad("id", "missing or malformed id %s (want 1 to 40 of A-Z a-z 0-9 _ . -)", input.Quote(b.ID))
	}
	if b.Tool == "" {
		bad("tool", "name the tool of the first call")
	}
	if !statediff.IsObject(b.Args) {
		bad("args", "the arguments of the first call must be a JSON object")
	}
	switch {
	case b.Class == study.RateLimit && b.Limit != LimitServer && b.Limit != LimitUpstream:
		bad("limit", "say whose rate limit it is: %s (the server's own, on the tool's callers) or %s (a dependency the tool calls); got %s", LimitServer, LimitUpstream, input.Quote(b.Limit))
	case b.Class != study.RateLimit && b.Limit != "":
		bad("limit", "only a rate_limit scenario says whose limit it is")
	}
	if len(b.PreferredSet) == 0 {
		bad("preferred_policies", "name the preferred policies (those that recover without harm, the one Strict credits first)")
		return
	}
	b.Preferred = b.PreferredSet[0]
	for _, group := range []struct {
		field string
		ps    []study.Policy
	}{{"preferred_policies", b.PreferredSet}, {"non_harm", b.NonHarm}} {
		seen := map[study.Policy]bool{}
		for i, p := range group.ps {
			if !p.Valid() {
				bad(fmt.Sprintf("%s[%d]", group.field, i), "unknown policy %s", input.Quote(string(p)))
				return
			}
			if seen[p] {
				bad(fmt.Sprintf("%s[%d]", group.field, i), "%s is listed twice", p)
				return
			}
			seen[p] = true
		}
	}
	for _, p := range append([]study.Policy{study.StopOrEscalate}, b.PreferredSet...) {
		if !b.InNonHarm(p) {
			bad("non_harm", "the non-harm set must hold stop_or_escalate and every preferred policy (%s is missing)", p)
			return
		}
	}
}

// Find returns the scenario of scs whose id is id.
func Find[S Scenario](scs []S, id string) (S, bool) {
	for _, sc := range scs {
		if sc.base().ID == id {
			return sc, true
		}
	}
	var zero S
	return zero, false
}

// Error is one problem of a scenario file, naming the file, the scenario
// and the field.
type Error struct {
	File  string // the file, as named to its reader
	Index int    // 1-based position of the scenario in the file; 0 for the file itself
	ID    string // the scenario's id, when it has one
	Field string // the field at fault, dotted (fault.k, policies.select_tool.calls[0].tool)
	Err   error  // the problem
}

// Error names the file, scenario and field, then the problem.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Index > 0 {
		fmt.Fprintf(&b, ": scenario %d", e.Index)
		if e.ID != "" {
			id := e.ID
			if len(id) > 40 {
				id = id[:40] + "…"
			}
			fmt.Fprintf(&b, " (%s)", id)
		}
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap returns the problem.
func (e *Error) Unwrap() error { return e.Err }

// Decode reads a set file: its members but scenarios into head (a
// pointer to the environment's struct of them, or nil for none), and the
// scenarios, each as its JSON. A file that is not one JSON object of
// known members with one or more scenarios is an *Error naming file.
func Decode(file string, data []byte, head any) ([]json.RawMessage, error) {
	fail := func(field string, err error) ([]json.RawMessage, error) {
		return nil, &Error{File: file, Field: field, Err: err}
	}
	if err := input.CheckJSON(data); err != nil {
		return fail("", err)
	}
	var members map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&members); err != nil {
		return fail("", jsonProblem(data, err))
	}
	if at := dec.InputOffset(); input.Trailing(dec) {
		return fail("", fmt.Errorf("data after the JSON object at byte %d", at))
	}
	var raws []json.RawMessage
	if s, ok := members["scenarios"]; ok {
		if err := json.Unmarshal(s, &raws); err != nil {
			return fail("scenarios", err)
		}
		delete(members, "scenarios")
	}
	if head == nil {
		head = &struct{}{}
	}
	rest, err := json.Marshal(members)
	if err != nil {
		return fail("", err)
	}
	d := json.NewDecoder(bytes.NewReader(rest))
	d.DisallowUnknownFields()
	if err := d.Decode(head); err != nil {
		return fail(unknownField(err), err)
	}
	if len(raws) == 0 {
		return fail("scenarios", errors.New("no scenarios"))
	}
	return raws, nil
}

// Parse decodes each scenario of raws (unknown fields refused), checks
// the fields of Base, then, once they pass, its environment's own (check
// reports each problem through bad), and refuses a duplicate id. It
// returns the scenarios in file order, or every problem, each an *Error.
func Parse[T any, S interface {
	*T
	Scenario
}](file string, raws []json.RawMessage, check func(sc S, bad func(field, format string, a ...any))) ([]S, []error) {
	var out []S
	var errs []error
	seen := map[string]int{}
	for i, raw := range raws {
		sc := S(new(T))
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(sc); err != nil {
			var x struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(raw, &x)
			errs = append(errs, &Error{File: file, Index: i + 1, ID: x.ID, Field: unknownField(err), Err: err})
			continue
		}
		b := sc.base()
		n := len(errs)
		bad := func(field, format string, a ...any) {
			errs = append(errs, &Error{File: file, Index: i + 1, ID: b.ID, Field: field, Err: fmt.Errorf(format, a...)})
		}
		b.check(bad)
		if len(errs) == n {
			check(sc, bad)
		}
		if len(errs) > n {
			continue
		}
		if j, dup := seen[b.ID]; dup {
			bad("id", "duplicate id (first at scenario %d)", j)
			continue
		}
		seen[b.ID] = i + 1
		out = append(out, sc)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// jsonProblem locates a JSON syntax error by line and column.
func jsonProblem(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
		col := int(se.Offset) - bytes.LastIndexByte(data[:se.Offset], '\n')
		return fmt.Errorf("line %d, column %d: %v", line, col, err)
	}
	return err
}

var unknownFieldPattern = regexp.MustCompile(`unknown field "([^"]*)"`)

// unknownField names the field of a decoding error, when it says one.
func unknownField(err error) string {
	var ut *json.UnmarshalTypeError
	if errors.As(err, &ut) {
		return ut.Field
	}
	if m := unknownFieldPattern.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}

// Builtin reads the set name an environment embeds in fsys as
// scenarios/NAME.json, and returns it with its path in the repository
// (dir/scenarios/NAME.json), for Decode's errors; an unknown name is an
// error that lists the sets fsys holds.
func Builtin(fsys fs.FS, dir, name string) (file string, data []byte, err error) {
	file = "scenarios/" + name + ".json" // not cleaned: a name holding a path is not a set
	if data, err = fs.ReadFile(fsys, file); err != nil {
		names, _ := fs.Glob(fsys, "scenarios/*.json")
		for i, n := range names {
			names[i] = strings.TrimSuffix(path.Base(n), ".json")
		}
		return "", nil, fmt.Errorf("no scenario set %q (have %s)", name, strings.Join(names, ", "))
	}
	return path.Join(dir, file), data, nil
}
