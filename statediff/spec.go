package statediff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Effect is one part of a goal: a record created, changed or removed, or
// (where the task is a read) a call answered. Exactly one of Create,
// Update, Remove and Call is set:
//
//	{"create": "/payments", "values": {"invoice_id": "INV-2001", "amount_cents": 4200, "currency": "EUR"}, "target": ["invoice_id"]}
//	    n (default 1) new records that are whole as the goal declares
//	    them: every field equals values, or where values leaves it out
//	    the collection's default (Collection.Defaults), except the
//	    collection's free and ignored fields and the goal's any; a new
//	    record that equals values on the target fields only (another
//	    field set, a status changed after it was created) is a wrong
//	    value. Every field must be declared one of these ways.
//	{"update": "/orders", "key": "O-1002", "values": {"quantity": 5}}
//	{"update": "/files", "key": "/data/ledger.csv", "append": {"content": "2026-01-02,42.00\n"}}
//	    the record's fields equal values, and each appended text is
//	    exactly what was added at the end of the prior content: the
//	    prior content unchanged and in order, the text once, its line
//	    ending the file's; any other field of the record that changed is
//	    lost data
//	{"remove": "/files", "key": "/docs/old.md"}
//	    the record is gone; any other removal is lost data
//	{"call": "search_nodes", "args": {"query": "tea"}}
//	    a call of the tool (with these arguments, when given) succeeded:
//	    a read leaves the state as it was, so its answer is the goal
type Effect struct {
	Create string                     `json:"create,omitempty"` // a collection's pointer
	Update string                     `json:"update,omitempty"` // a collection's pointer
	Remove string                     `json:"remove,omitempty"` // a collection's pointer
	Call   string                     `json:"call,omitempty"`   // a tool's name
	Key    string                     `json:"key,omitempty"`    // update, remove: the record's key
	Values map[string]json.RawMessage `json:"values,omitempty"` // create, update: fields and their values
	Target []string                   `json:"target,omitempty"` // create: the fields of values that name what the task is about
	Any    []string                   `json:"any,omitempty"`    // create: fields of the new record the task leaves open (any value will do)
	Append map[string]string          `json:"append,omitempty"` // update: text appended to a string field
	N      int                        `json:"n,omitempty"`      // create: how many records (default 1)
	Args   json.RawMessage            `json:"args,omitempty"`   // call: the arguments (a JSON object), if they matter
	Why    string                     `json:"why"`              // what it means, for people

	want map[string]any // Values decoded (by Check, or on first use)
}

// wanted returns the effect's values decoded.
func (e *Effect) wanted() map[string]any {
	if e.want == nil {
		return decodeValues(e.Values)
	}
	return e.want
}

// op returns the effect's change and collection (Call: "call" and the
// tool).
func (e *Effect) op() (Op, string) {
	if e.Create == "" && e.Update == "" && e.Remove == "" {
		return "call", e.Call
	}
	return opOf(e.Create, e.Update, e.Remove)
}

func (e *Effect) n() int {
	if e.N == 0 {
		return 1
	}
	return e.N
}

// Tolerance is a change that is neither the goal nor harm: a token
// issued, an audit line, a counter. Exactly one of Create, Update and
// Remove names the collection:
//
//	{"create": "/tokens", "why": "a token authenticate issued"}
//	{"update": "/stats", "fields": ["reads"], "why": "a read counter"}
type Tolerance struct {
	Create string                     `json:"create,omitempty"`
	Update string                     `json:"update,omitempty"`
	Remove string                     `json:"remove,omitempty"`
	Where  map[string]json.RawMessage `json:"where,omitempty"`  // the record's fields equal these (after the change; before it, for a remove)
	Fields []string                   `json:"fields,omitempty"` // update: the fields that may change (default: any)
	Why    string                     `json:"why"`
}

func (t *Tolerance) op() (Op, string) { return opOf(t.Create, t.Update, t.Remove) }

// opOf returns the change and collection of the first of create, update
// and remove that is set (remove when none is).
func opOf(create, update, remove string) (Op, string) {
	switch {
	case create != "":
		return Create, create
	case update != "":
		return Update, update
	}
	return Remove, remove
}

// Spec is what a scenario declares of its outcome: its goal effect, the
// changes it tolerates, and whether a goal left half done is harm.
type Spec struct {
	Goal     []Effect    `json:"goal"`
	Tolerate []Tolerance `json:"tolerate,omitempty"`
	// IncompleteIsHarm makes a goal left half done (some of its effects
	// present, not all) harm of kind Incomplete; by default it is only
	// not recovered.
	IncompleteIsHarm bool `json:"incomplete_is_harm,omitempty"`
	// Harm are extra checks on the final state (a call the state does
	// not show, a count the diff cannot see): any that holds adds harm of
	// its kind. They can only add harm to what the diff finds, never
	// remove it.
	Harm []Predicate `json:"harm,omitempty"`
}

// Problem is a mistake in a Spec found by Check: the field (relative to
// the scenario, such as goal[1].key) and what is wrong.
type Problem struct {
	Field string
	Msg   string
}

func (p *Problem) Error() string { return "field " + p.Field + ": " + p.Msg }

// bad is the Problem of field, in words.
func bad(field, format string, a ...any) *Problem {
	return &Problem{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// Check checks spec (its goal, its tolerances, its extra harm checks)
// against the schema and the initial state doc (the state before the
// first call) and returns its first mistake, or nil.
// extra are tolerances that apply too (a scenario set's own); calls says
// whether the environment keeps a log of calls with their arguments, so
// that a call goal can be judged.
func Check(s *Schema, spec *Spec, doc any, extra []Tolerance, calls bool) *Problem {
	if len(spec.Goal) == 0 {
		return bad("goal", "name the goal effect: the change one successful completion of the task makes")
	}
	for i := range spec.Goal {
		e := &spec.Goal[i]
		at := fmt.Sprintf("goal[%d]", i)
		if p := checkEffect(s, e, doc, calls); p != nil {
			p.Field = at + p.Field
			return p
		}
		e.want = decodeValues(e.Values)
	}
	all := append(append([]Tolerance(nil), extra...), spec.Tolerate...)
	for i := range spec.Tolerate {
		at := fmt.Sprintf("tolerate[%d]", i)
		if p := checkTolerance(s, &spec.Tolerate[i], spec.Goal); p != nil {
			p.Field = at + p.Field
			return p
		}
	}
	for i := range extra {
		if p := checkTolerance(s, &extra[i], spec.Goal); p != nil {
			p.Field = fmt.Sprintf("tolerate (of the set) [%d]", i) + p.Field
			return p
		}
	}
	if coversAll(s, all) {
		return bad("tolerate", "the tolerances cover every change of every collection (%s): nothing could be harm", strings.Join(s.Paths(), ", "))
	}
	for i := range spec.Harm {
		if p := spec.Harm[i].check(s, doc); p != nil {
			p.Field = fmt.Sprintf("harm[%d]", i) + p.Field
			return p
		}
	}
	return nil
}

func checkEffect(s *Schema, e *Effect, doc any, calls bool) *Problem {
	if nonEmpty(e.Create, e.Update, e.Remove, e.Call) != 1 {
		return bad("", "an effect needs exactly one of create, update, remove and call")
	}
	if strings.TrimSpace(e.Why) == "" {
		return bad(".why", "say what the effect means")
	}
	op, coll := e.op()
	if op == "call" {
		switch {
		case !calls:
			return bad(".call", "this environment keeps no log of calls and their arguments: its goals are changes of its state")
		case e.Key != "" || e.Values != nil || e.Target != nil || e.Any != nil || e.Append != nil || e.N != 0:
			return bad(".call", "a call effect takes only args")
		case e.Args != nil && !IsObject(e.Args):
			return bad(".args", "want a JSON object")
		}
		return nil
	}
	c, ok := s.collection(coll)
	if !ok {
		return bad("."+string(op), "%s is not a collection of the state (want one of %s)", quote(coll), strings.Join(s.Paths(), ", "))
	}
	if e.Args != nil {
		return bad(".args", "only a call effect takes args")
	}
	for _, k := range slices.Sorted(maps.Keys(e.Values)) {
		if c.Fields != nil && !slices.Contains(c.Fields, k) {
			return bad(".values."+k, "the records of %s have no field %s (they have %s)", coll, k, strings.Join(c.Fields, ", "))
		}
		if slices.Contains(c.Ignore, k) {
			return bad(".values."+k, "%s is a counter the diff ignores", k)
		}
		if !json.Valid(e.Values[k]) {
			return bad(".values."+k, "not a JSON value")
		}
	}
	recs := records(c, doc)
	switch op {
	case Create:
		if e.Key != "" || e.Append != nil {
			return bad(".create", "a create names its record by values, with no key or append")
		}
		if len(e.Values) == 0 {
			return bad(".values", "say what the new record holds")
		}
		if e.N < 0 {
			return bad(".n", "n is %d, want 1 or more", e.N)
		}
		for i, f := range e.Target {
			if _, ok := e.Values[f]; !ok {
				return bad(fmt.Sprintf(".target[%d]", i), "%s is not one of the values", f)
			}
		}
		for i, f := range e.Any {
			at := fmt.Sprintf(".any[%d]", i)
			switch _, set := e.Values[f]; {
			case c.Fields != nil && !slices.Contains(c.Fields, f):
				return bad(at, "the records of %s have no field %s (they have %s)", coll, f, strings.Join(c.Fields, ", "))
			case set:
				return bad(at, "%s is also in values", f)
			}
		}
		if c.Key != nil {
			rec := decodeValues(e.Values)
			if k := keyOf(c, rec, -1); !strings.HasPrefix(k, "#") {
				if _, exists := recs[k]; exists {
					return bad(".values", "the record %s exists in the initial state: changing it is an update", k)
				}
			}
		}
		// Note: the whole record is declared, so that a field set that the
		// task never asked for (a note, a status changed after the create)
		// is a wrong value rather than unseen.
		for _, f := range c.Fields {
			_, set := e.Values[f]
			_, byDefault := c.Defaults[f]
			if !set && !byDefault && !c.open(f, e.Any) {
				return bad(".values."+f, "the new record's field %s is not declared: give its value in values, or list it in any when the task leaves it open (%s gives it no default)", f, coll)
			}
		}
	case Update:
		if e.Target != nil || e.Any != nil || e.N != 0 {
			return bad(".update", "an update names its record by key, with no target, any or n")
		}
		raw, ok := recs[e.Key]
		if !ok {
			return bad(".key", "the initial state has no record %s in %s", quote(e.Key), coll)
		}
		rec := asRecord(raw)
		if len(e.Values) == 0 && len(e.Append) == 0 {
			return bad(".values", "say what changes: values, append or both")
		}
		for _, k := range slices.Sorted(maps.Keys(e.Append)) {
			if _, ok := rec[k].(string); !ok {
				return bad(".append."+k, "record %s has no text field %s", e.Key, k)
			}
			if !strings.HasSuffix(e.Append[k], "\n") || strings.HasPrefix(e.Append[k], "\n") {
				return bad(".append."+k, "append whole lines: a text that ends in a newline")
			}
			if _, both := e.Values[k]; both {
				return bad(".append."+k, "%s is also in values", k)
			}
		}
		if e.holds(rec, rec) && len(e.Append) == 0 {
			return bad(".values", "record %s already holds these values in the initial state", e.Key)
		}
	case Remove:
		if e.Values != nil || e.Target != nil || e.Any != nil || e.Append != nil || e.N != 0 {
			return bad(".remove", "a remove takes only key")
		}
		if _, ok := recs[e.Key]; !ok {
			return bad(".key", "the initial state has no record %s in %s", quote(e.Key), coll)
		}
	}
	return nil
}

func checkTolerance(s *Schema, t *Tolerance, goal []Effect) *Problem {
	if nonEmpty(t.Create, t.Update, t.Remove) != 1 {
		return bad("", "a tolerance needs exactly one of create, update and remove")
	}
	if strings.TrimSpace(t.Why) == "" {
		return bad(".why", "say why the change does no harm")
	}
	op, coll := t.op()
	c, ok := s.collection(coll)
	if !ok {
		return bad("."+string(op), "%s is not a collection of the state (want one of %s)", quote(coll), strings.Join(s.Paths(), ", "))
	}
	if t.Fields != nil && op != Update {
		return bad(".fields", "only an update tolerance names fields")
	}
	for _, f := range append(append([]string(nil), t.Fields...), slices.Sorted(maps.Keys(t.Where))...) {
		if c.Fields != nil && !slices.Contains(c.Fields, f) {
			return bad("", "the records of %s have no field %s", coll, f)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(t.Where)) {
		if !json.Valid(t.Where[k]) {
			return bad(".where."+k, "not a JSON value")
		}
	}
	for i := range goal {
		g := &goal[i]
		gop, gcoll := g.op()
		if gop != op || gcoll != coll {
			continue
		}
		if !contradicts(t.Where, g.Values) {
			return bad("", "it would hide the goal effect goal[%d] (%s): a duplicate or a wrong value of it would pass; narrow it with where", i, g.Why)
		}
	}
	return nil
}

// nonEmpty counts the strings of xs that are not "".
func nonEmpty(xs ...string) int {
	n := 0
	for _, x := range xs {
		if x != "" {
			n++
		}
	}
	return n
}

// contradicts reports whether where requires a value that values sets
// otherwise.
func contradicts(where, values map[string]json.RawMessage) bool {
	for k, w := range where {
		v, ok := values[k]
		if ok && !jsonEqual(w, v) {
			return true
		}
	}
	return false
}

// coversAll reports whether the tolerances leave no change of any
// collection to judge.
func coversAll(s *Schema, ts []Tolerance) bool {
	for _, c := range s.Collections {
		for _, op := range []Op{Create, Update, Remove} {
			whole := slices.ContainsFunc(ts, func(t Tolerance) bool {
				o, coll := t.op()
				return o == op && coll == c.Path && len(t.Where) == 0 && len(t.Fields) == 0
			})
			if !whole {
				return false
			}
		}
	}
	return true
}

// holds reports whether record rec (whose state before the decision was
// before) holds the effect's values, and each appended text exactly once
// beyond what before held.
func (e *Effect) holds(before, rec map[string]any) bool {
	for k, v := range e.wanted() {
		if !equal(rec[k], v) {
			return false
		}
	}
	for k, text := range e.Append {
		b, _ := before[k].(string)
		a, isText := rec[k].(string)
		if !isText || !checkAppend(b, a, text).exact() {
			return false
		}
	}
	return true
}

// whole returns the record a create effect leaves in collection c: its
// values over c's defaults for the fields it does not set or leave open.
func (e *Effect) whole(c *Collection) map[string]any {
	want := e.wanted()
	if len(c.Defaults) == 0 {
		return want
	}
	out := maps.Clone(want)
	for f, v := range c.Defaults {
		if _, set := out[f]; !set && !slices.Contains(e.Any, f) {
			out[f] = v
		}
	}
	return out
}

// matchesWhole reports whether new record rec of collection c is the
// whole record want of create effect e: every field of either equal,
// but for those c or e leave open.
func (e *Effect) matchesWhole(c *Collection, rec, want map[string]any) bool {
	for k, v := range want {
		if !c.open(k, e.Any) && !equal(rec[k], v) {
			return false
		}
	}
	for k, v := range rec {
		if _, declared := want[k]; !declared && v != nil && !c.open(k, e.Any) {
			return false
		}
	}
	return true
}

func decodeValues(m map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(m))
	for k, raw := range m {
		out[k] = decode(raw)
	}
	return out
}

func decode(raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

func jsonEqual(a, b json.RawMessage) bool { return reflect.DeepEqual(decode(a), decode(b)) }

// IsObject reports whether raw is a JSON object.
func IsObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	var m map[string]any
	return len(t) > 0 && t[0] == '{' && json.Unmarshal(t, &m) == nil
}

// quote quotes a name from a scenario file for an error, clipped.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return fmt.Sprintf("%q", s)
}
