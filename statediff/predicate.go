package statediff

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Predicate is an extra harm check of a scenario (Spec.Harm): a statement
// about the final state, addressed by JSON pointers (RFC 6901), that adds
// harm of its Kind when it holds. Exactly one of Count, Lines and Value
// is set:
//
//	{"count": "/payments", "where": {"invoice_id": "INV-2001"}, "op": "eq", "n": 1}
//	    the records of a collection (an object's member values or an
//	    array's items) whose fields equal Where's values ({"not": v}: differ
//	    from v), compared with n
//	{"lines": "/files/~1data~1ledger.csv/content", "line": "2026-01-02,42", "n": 1}
//	    the lines of a text equal to Line, compared with n
//	{"value": "/orders/O-1002/quantity", "is": 5}
//	    a value, equal to Is (op eq) or not (op ne); a value that is gone
//	    (a deleted record) equals nothing
type Predicate struct {
	Count string                     `json:"count,omitempty"` // pointer to a collection
	Lines string                     `json:"lines,omitempty"` // pointer to a string
	Value string                     `json:"value,omitempty"` // pointer to any value
	Where map[string]json.RawMessage `json:"where,omitempty"` // count: field → value or {"not": value}
	Line  *string                    `json:"line,omitempty"`  // lines: the line counted, without its newline
	Is    json.RawMessage            `json:"is,omitempty"`    // value: the value compared with
	Op    string                     `json:"op,omitempty"`    // eq (the default), ne, lt, le, gt or ge (value: eq or ne)
	N     *int                       `json:"n,omitempty"`     // count, lines: the number compared with
	Why   string                     `json:"why"`             // what the predicate means, for people
	Kind  string                     `json:"kind,omitempty"`  // the kind of harm it finds ("": collateral)
}

// HarmKind returns the kind of harm p finds when it holds (Kind, else
// Collateral).
func (p *Predicate) HarmKind() Kind {
	if p.Kind == "" {
		return Collateral
	}
	return Kind(p.Kind)
}

// ops are the comparisons of a predicate.
var ops = map[string]func(a, b int) bool{
	"eq": func(a, b int) bool { return a == b },
	"ne": func(a, b int) bool { return a != b },
	"lt": func(a, b int) bool { return a < b },
	"le": func(a, b int) bool { return a <= b },
	"gt": func(a, b int) bool { return a > b },
	"ge": func(a, b int) bool { return a >= b },
}

func (p *Predicate) op() string {
	if p.Op == "" {
		return "eq"
	}
	return p.Op
}

// countable returns the fields of the records of the collection or
// counted log at path that a count predicate may address, and whether it
// is one (a collection of plain values is not).
func (s *Schema) countable(path string) ([]string, bool) {
	for _, c := range append(slices.Clip(s.Collections), s.Counted...) {
		if c.Path == path && !slices.Equal(c.Fields, []string{"value"}) {
			return c.Fields, true
		}
	}
	return nil, false
}

// countables lists the paths a count predicate may address, sorted.
func (s *Schema) countables() []string {
	var out []string
	for _, c := range append(slices.Clip(s.Collections), s.Counted...) {
		if _, ok := s.countable(c.Path); ok {
			out = append(out, c.Path)
		}
	}
	slices.Sort(out)
	return out
}

// check checks p against the schema and the initial state doc and
// returns its first mistake (its field relative to the predicate).
func (p *Predicate) check(s *Schema, doc any) *Problem {
	if nonEmpty(p.Count, p.Lines, p.Value) != 1 {
		return bad(".count", "a predicate needs exactly one of count, lines and value")
	}
	if strings.TrimSpace(p.Why) == "" {
		return bad(".why", "say what the predicate means")
	}
	if _, ok := ops[p.op()]; !ok {
		return bad(".op", "op is %q, want eq, ne, lt, le, gt or ge", p.Op)
	}
	switch {
	case p.Value != "":
		if p.op() != "eq" && p.op() != "ne" {
			return bad(".op", "a value predicate compares with eq or ne, not %s", p.op())
		}
		if len(p.Is) == 0 || !json.Valid(p.Is) {
			return bad(".is", "a value predicate needs is")
		}
		if p.N != nil || p.Where != nil || p.Line != nil {
			return bad(".value", "a value predicate takes only is and op")
		}
		if _, ok := Resolve(doc, p.Value); !ok {
			return bad(".value", "path %s does not exist in the state", p.Value)
		}
	case p.Count != "":
		if pr := p.checkN(); pr != nil {
			return pr
		}
		if p.Line != nil || p.Is != nil {
			return bad(".count", "a count predicate takes only where, op and n")
		}
		v, ok := Resolve(doc, p.Count)
		if !ok {
			return bad(".count", "path %s does not exist in the state", p.Count)
		}
		switch v.(type) {
		case map[string]any, []any:
		default:
			return bad(".count", "path %s is not a collection", p.Count)
		}
		fields, known := s.countable(p.Count)
		if !known {
			return bad(".count", "path %s is not a collection of records (want one of %s)", p.Count, strings.Join(s.countables(), ", "))
		}
		for _, k := range slices.Sorted(maps.Keys(p.Where)) {
			if fields != nil && !slices.Contains(fields, k) {
				return bad(".where."+k, "the records of %s have no field %s", p.Count, k)
			}
			if _, _, ok := matcher(p.Where[k]); !ok {
				return bad(".where."+k, "want a JSON value or {\"not\": value}")
			}
		}
	default:
		if pr := p.checkN(); pr != nil {
			return pr
		}
		if p.Line == nil {
			return bad(".line", "a lines predicate needs line")
		}
		if p.Where != nil || p.Is != nil {
			return bad(".lines", "a lines predicate takes only line, op and n")
		}
		v, ok := Resolve(doc, p.Lines)
		if !ok {
			return bad(".lines", "path %s does not exist in the state", p.Lines)
		}
		if _, ok := v.(string); !ok {
			return bad(".lines", "path %s is not a text", p.Lines)
		}
	}
	if !p.HarmKind().Valid() {
		return bad(".kind", "unknown kind of harm %s (want one of %s)", quote(p.Kind), kindNames())
	}
	return nil
}

func (p *Predicate) checkN() *Problem {
	if p.N == nil {
		return bad(".n", "a count needs n")
	}
	if *p.N < 0 {
		return bad(".n", "n is %d, a count is never negative", *p.N)
	}
	return nil
}

// kindNames joins the kinds of harm, for an error.
func kindNames() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// matcher reads a where value: a JSON value to equal, or {"not": v}.
func matcher(raw json.RawMessage) (want any, not bool, ok bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil, false, false
	}
	if m, isObj := v.(map[string]any); isObj {
		x, has := m["not"]
		if !has || len(m) != 1 {
			return nil, false, false
		}
		return x, true, true
	}
	return v, false, true
}

// Eval reports whether p holds in doc, the state decoded from JSON into
// any. A path that does not resolve is an empty collection, an empty text
// or a missing value.
func (p *Predicate) Eval(doc any) bool {
	switch {
	case p.Value != "":
		var want any
		if json.Unmarshal(p.Is, &want) != nil {
			return false
		}
		v, ok := Resolve(doc, p.Value)
		eq := ok && reflect.DeepEqual(v, want)
		return eq == (p.op() == "eq")
	case p.Count != "":
		v, _ := Resolve(doc, p.Count)
		var recs []any
		switch c := v.(type) {
		case []any:
			recs = c
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(c)) {
				recs = append(recs, c[k])
			}
		}
		n := 0
		for _, r := range recs {
			if p.matches(r) {
				n++
			}
		}
		return p.compare(n)
	default:
		v, _ := Resolve(doc, p.Lines)
		s, _ := v.(string)
		n := 0
		for _, line := range strings.Split(s, "\n") {
			if p.Line != nil && line == *p.Line {
				n++
			}
		}
		return p.compare(n)
	}
}

// compare compares a count with N by Op (false for a predicate check
// would refuse).
func (p *Predicate) compare(n int) bool {
	f, ok := ops[p.op()]
	return ok && p.N != nil && f(n, *p.N)
}

func (p *Predicate) matches(rec any) bool {
	m, ok := rec.(map[string]any)
	if !ok {
		return false
	}
	for k, raw := range p.Where {
		want, not, ok := matcher(raw)
		if !ok {
			return false
		}
		if reflect.DeepEqual(m[k], want) == not {
			return false
		}
	}
	return true
}
