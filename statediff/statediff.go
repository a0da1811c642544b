// Package statediff scores a decision by what it did to a state: the
// difference between the state before the scenario's first call and the
// state at the end, read record by record and set against the scenario's
// goal effect (the change one successful completion of the task makes).
// Every change that is not part of the goal, and not declared tolerable,
// is harm of a kind, so no kind of damage depends on a scenario
// remembering to forbid it (as τ²-bench scores by comparing the final
// database with the expected one).
//
// A state is a JSON document decoded into any (objects as map[string]any,
// numbers as float64). Its Schema names the collections of records the
// diff reads and the members that are logs (every call made, the clock),
// which it does not.
package statediff

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Collection is one collection of records in a state.
type Collection struct {
	// Path is the JSON pointer (RFC 6901) of the collection: an object
	// whose members are its records (keyed by member name), or an array
	// of objects (keyed by Key).
	Path string
	// Key names the fields whose values identify a record of an array,
	// joined by "|" when there are several; nil for an object.
	Key []string
	// Fields are the members of its records, so that a goal or
	// tolerance naming another is refused at load time; nil: not
	// checked. A record that is a plain value (not an object) has the
	// one field "value".
	Fields []string
	// Ignore are fields the diff does not compare: counters that every
	// write bumps and that say nothing of their own (a revision).
	Ignore []string
	// Defaults are the values the server gives a new record's fields
	// that the call creating it does not set (an order's status "open",
	// its note ""); a field a record lacks reads as null, so a default of
	// nil says the field is absent. A create goal's record is its values
	// over these: the whole record the task leaves.
	Defaults map[string]any
	// Free are the fields a new record gets from the server's or the
	// client's own choice (an id the server assigns, an idempotency key,
	// a size that follows from the content): a create goal does not
	// compare them.
	Free []string
}

// open reports whether a create goal leaves field f of c's new records
// unjudged: free, ignored, or one the goal leaves open (anyOf).
func (c *Collection) open(f string, anyOf []string) bool {
	return slices.Contains(c.Free, f) || slices.Contains(c.Ignore, f) || slices.Contains(anyOf, f)
}

// Schema is what a diff reads of a state: its collections, and the
// members that are logs rather than state.
type Schema struct {
	Collections []Collection
	// Logs are the JSON pointers of the members that record what
	// happened (calls, effects, the clock) rather than what is: the diff
	// does not read them.
	Logs []string
	// Counted are the logs whose records an extra harm check may count
	// (Predicate), with their fields.
	Counted []Collection
}

// collection returns the collection at path.
func (s *Schema) collection(path string) (*Collection, bool) {
	for i := range s.Collections {
		if s.Collections[i].Path == path {
			return &s.Collections[i], true
		}
	}
	return nil, false
}

// Paths returns the collections' pointers, in schema order.
func (s *Schema) Paths() []string {
	out := make([]string, len(s.Collections))
	for i, c := range s.Collections {
		out[i] = c.Path
	}
	return out
}

// Covers checks that every member of doc is read by the diff or is a log:
// each object on the way is either a collection, a log, or an object
// whose members all are. It returns the pointer of the first member that
// is neither, so that a state cannot grow a member whose damage the diff
// would not see.
func (s *Schema) Covers(doc any) error {
	var walk func(ptr string, v any) error
	walk = func(ptr string, v any) error {
		if _, ok := s.collection(ptr); ok {
			return nil
		}
		if slices.Contains(s.Logs, ptr) {
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok || ptr != "" && len(m) == 0 {
			return fmt.Errorf("state member %s is neither a collection the diff reads nor a log", ptrOrRoot(ptr))
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := walk(ptr+"/"+EscapePointer(k), m[k]); err != nil {
				return err
			}
		}
		return nil
	}
	return walk("", doc)
}

func ptrOrRoot(p string) string {
	if p == "" {
		return "(the root)"
	}
	return p
}

// Op is what a change did to a record.
type Op string

// The three changes.
const (
	Create Op = "create" // the record is new
	Update Op = "update" // the record's fields differ
	Remove Op = "remove" // the record is gone
)

// Change is one record that differs between two states.
type Change struct {
	Op         Op
	Collection string         // the collection's pointer
	Key        string         // the record's key in it
	Before     map[string]any // nil for a create
	After      map[string]any // nil for a remove
	Fields     []string       // update: the fields that differ, sorted (ignored fields left out)
}

// Record returns the change's record as a JSON pointer: the collection's
// and the key.
func (c *Change) Record() string { return c.Collection + "/" + EscapePointer(c.Key) }

// Diff returns every record of s's collections that differs between
// before and after, in schema order, then by key.
func Diff(s *Schema, before, after any) []Change {
	var out []Change
	for i := range s.Collections {
		c := &s.Collections[i]
		b, a := records(c, before), records(c, after)
		keys := make([]string, 0, len(a)+1)
		for k := range b {
			if _, ok := a[k]; !ok {
				keys = append(keys, k)
			}
		}
		for k := range a {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			rb, inB := b[k]
			ra, inA := a[k]
			switch {
			case !inB:
				out = append(out, Change{Op: Create, Collection: c.Path, Key: k, After: asRecord(ra)})
			case !inA:
				out = append(out, Change{Op: Remove, Collection: c.Path, Key: k, Before: asRecord(rb)})
			case !sameRecord(c, rb, ra):
				rbm, ram := asRecord(rb), asRecord(ra)
				if f := changedFields(c, rbm, ram); len(f) > 0 {
					out = append(out, Change{Op: Update, Collection: c.Path, Key: k, Before: rbm, After: ram, Fields: f})
				}
			}
		}
	}
	return out
}

// records returns the records of collection c in doc, by key: an
// object's own map (its member names are the keys), an array's items by
// Key. An array item that is not an object, or lacks a key field, is
// keyed by its position ("#3").
func records(c *Collection, doc any) map[string]any {
	v, _ := Resolve(doc, c.Path)
	switch x := v.(type) {
	case map[string]any:
		return x
	case []any:
		out := make(map[string]any, len(x))
		for i, r := range x {
			out[keyOf(c, asRecord(r), i)] = r
		}
		return out
	}
	return nil
}

// asRecord returns a record's fields: the object itself, or {"value": v}
// for a record that is a plain value.
func asRecord(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{"value": v}
}

func keyOf(c *Collection, rec map[string]any, i int) string {
	if len(c.Key) == 1 {
		if v, ok := rec[c.Key[0]]; ok {
			return scalar(v)
		}
		return fmt.Sprintf("#%d", i)
	}
	parts := make([]string, 0, len(c.Key))
	for _, f := range c.Key {
		v, ok := rec[f]
		if !ok {
			return fmt.Sprintf("#%d", i)
		}
		parts = append(parts, scalar(v))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("#%d", i)
	}
	return strings.Join(parts, "|")
}

// scalar writes a key field's value: a string as it is, anything else as
// JSON.
func scalar(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// changedFields returns the fields of c's record whose values differ
// between b and a (ignored fields left out), sorted; nil when none do.
func changedFields(c *Collection, b, a map[string]any) []string {
	var out []string
	for k, bv := range b {
		if av, ok := a[k]; (!ok || !equal(bv, av)) && !slices.Contains(c.Ignore, k) {
			out = append(out, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok && !slices.Contains(c.Ignore, k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// sameRecord reports, without allocating, whether records b and a of c
// hold the same values but for c's ignored fields.
func sameRecord(c *Collection, b, a any) bool {
	bm, ok1 := b.(map[string]any)
	am, ok2 := a.(map[string]any)
	if !ok1 || !ok2 {
		return !ok1 && !ok2 && equal(b, a)
	}
	if reflect.ValueOf(bm).UnsafePointer() == reflect.ValueOf(am).UnsafePointer() {
		return true // one record, shared by both documents
	}
	n := 0
	for k, bv := range bm {
		av, ok := am[k]
		if !ok {
			if slices.Contains(c.Ignore, k) {
				continue
			}
			return false
		}
		n++
		if !equal(bv, av) && !slices.Contains(c.Ignore, k) {
			return false
		}
	}
	return n == len(am) || len(changedFields(c, bm, am)) == 0
}

// equal reports whether two decoded JSON values are equal: scalars at
// once, anything else by reflect.DeepEqual.
func equal(x, y any) bool {
	switch a := x.(type) {
	case string:
		b, ok := y.(string)
		return ok && a == b
	case float64:
		b, ok := y.(float64)
		return ok && a == b
	case bool:
		b, ok := y.(bool)
		return ok && a == b
	case nil:
		return y == nil
	}
	return reflect.DeepEqual(x, y)
}

// Resolve follows a JSON pointer in doc; ok is false where it leads
// nowhere.
func Resolve(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i := 0
			if tok == "" || len(tok) > 1 && tok[0] == '0' {
				return nil, false
			}
			for _, r := range tok {
				if r < '0' || r > '9' || i > 1<<30 {
					return nil, false
				}
				i = i*10 + int(r-'0')
			}
			if i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// EscapePointer escapes one JSON pointer token (RFC 6901).
func EscapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
