package statediff

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Kind is a kind of harm.
type Kind string

// The kinds of harm, in the order outcomes list them.
const (
	// Duplicate: the goal effect is present more than once (a second
	// charge, an order placed twice, a line appended twice).
	Duplicate Kind = "duplicate"
	// WrongValue: the record the task is about holds other values than
	// the goal's (a charge of 42 cents for 42 euros, an order of another
	// quantity, a file written with other content).
	WrongValue Kind = "wrong_value"
	// Collateral: a change to anything the task is not about (an order
	// cancelled, a payment refunded, another file written, a tool's rate
	// limit window extended).
	Collateral Kind = "collateral"
	// DataLoss: something that was there is gone (a record removed, a
	// line of a text or an item of a list lost, a field of the task's
	// record overwritten that the task did not ask to change).
	DataLoss Kind = "data_loss"
	// Incomplete: the goal is left half done, where the scenario declares
	// that harm (Spec.IncompleteIsHarm).
	Incomplete Kind = "incomplete"
)

// Kinds lists every kind of harm in order.
var Kinds = []Kind{Duplicate, WrongValue, Collateral, DataLoss, Incomplete}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool { return slices.Contains(Kinds, k) }

// Harm is one harmful change.
type Harm struct {
	Kind   Kind   `json:"kind"`
	Record string `json:"record,omitempty"` // the record's pointer: its collection's and its key
	Field  string `json:"field,omitempty"`  // the field, for a change of one
	Why    string `json:"why"`              // in words
}

// Call is one call of the decision, for the goals that are reads (Effect
// Call).
type Call struct {
	Tool string
	Args json.RawMessage // a JSON object
	OK   bool            // it succeeded
}

// Outcome is a decision's result read from its state.
type Outcome struct {
	// Recovered says every goal effect is present, exactly as often as
	// the goal says.
	Recovered bool `json:"recovered"`
	// Missing are the goal effects not present (their why); a duplicated
	// one is there too, as it is not present exactly once.
	Missing []string `json:"missing,omitempty"`
	// Harms are the harmful changes, in the order found.
	Harms []Harm `json:"harms,omitempty"`
}

// Harm reports whether any change was harmful.
func (o *Outcome) Harm() bool { return len(o.Harms) > 0 }

// KindSet is a set of kinds of harm, one bit per kind in Kinds order; a
// value, so outcomes holding one compare with ==.
type KindSet uint8

// KindsOf returns the set of the kinds of harms (an unknown kind is left
// out).
func KindsOf(harms []Harm) KindSet {
	var s KindSet
	for _, h := range harms {
		if i := slices.Index(Kinds, h.Kind); i >= 0 {
			s |= 1 << i
		}
	}
	return s
}

// Has reports whether k is in the set.
func (s KindSet) Has(k Kind) bool {
	i := slices.Index(Kinds, k)
	return i >= 0 && s&(1<<i) != 0
}

// Evaluate scores the change from before to after: which goal effects of
// spec are present, and every harmful change. Each changed record is set
// against the goal in this order:
//
//   - a tolerated change (spec's and extra's tolerances) is neither goal
//     nor harm;
//   - a new record that is a create effect's whole record (its values
//     over the collection's defaults, its free fields aside) is the
//     goal, up to the effect's n copies; each further one is a
//     Duplicate;
//   - the record of an update effect: each field the effect sets is the
//     goal when it holds the effect's value (or its text appended
//     exactly once at the end of the prior content, with the content's
//     line ending), else a WrongValue (appended more often, a
//     Duplicate; the prior content reordered or moved, extra lines, a
//     last line without its line ending, each a WrongValue; a prior
//     line gone, DataLoss); any other field that changed is DataLoss;
//   - a removal the goal does not ask for is DataLoss; so is a change
//     that loses a line of a text or an item of a list;
//   - a new record that equals a create effect's target fields but not
//     its values is a WrongValue;
//   - anything else is Collateral.
//
// A goal some of whose effects are present but not all is not recovered,
// and is harm (Incomplete) only with spec.IncompleteIsHarm. Last, each of
// spec's extra harm checks (Spec.Harm) that holds in after adds harm of
// its kind.
func Evaluate(s *Schema, spec *Spec, before, after any, extra []Tolerance, calls []Call) Outcome {
	var o Outcome
	tols := append(append([]Tolerance(nil), extra...), spec.Tolerate...)
	var changes []*Change
	for _, c := range Diff(s, before, after) {
		if c := tolerate(c, tols); c != nil {
			changes = append(changes, c)
		}
	}
	claimed := make([]bool, len(changes))
	harm := func(c *Change, k Kind, field, format string, a ...any) {
		o.Harms = append(o.Harms, Harm{Kind: k, Record: c.Record(), Field: field, Why: fmt.Sprintf(format, a...)})
	}
	present := 0
	for gi := range spec.Goal {
		g := &spec.Goal[gi]
		op, coll := g.op()
		ok := false
		switch op {
		case "call":
			ok = slices.ContainsFunc(calls, func(c Call) bool {
				return c.OK && c.Tool == g.Call && (g.Args == nil || jsonEqual(c.Args, g.Args))
			})
		case Create:
			col, found := s.collection(coll)
			if !found {
				col = &Collection{Path: coll}
			}
			want := g.whole(col)
			n := 0
			for i, c := range changes {
				if claimed[i] || c.Op != Create || c.Collection != coll || !g.matchesWhole(col, c.After, want) {
					continue
				}
				claimed[i] = true
				n++
				if n > g.n() {
					harm(c, Duplicate, "", "one copy too many (%s): %s", g.Why, describe(c.After))
				}
			}
			ok = n == g.n()
		case Update:
			for i, c := range changes {
				if claimed[i] || c.Collection != coll || c.Key != g.Key {
					continue
				}
				claimed[i] = true
				if c.Op == Remove {
					harm(c, DataLoss, "", "the record the task changes was removed")
					break
				}
				ok = true
				for _, f := range c.Fields {
					if v, set := g.wanted()[f]; set {
						if !equal(c.After[f], v) {
							ok = false
							if lost(c.Before[f], c.After[f]) {
								harm(c, DataLoss, f, "%s lost what it held: %s", f, describeValue(c.Before[f]))
							} else {
								harm(c, WrongValue, f, "%s is %s, the task asks for %s", f, describeValue(c.After[f]), describeValue(v))
							}
						}
						continue
					}
					if text, app := g.Append[f]; app {
						b, _ := c.Before[f].(string)
						a, isText := c.After[f].(string)
						if !isText || lost(b, a) {
							ok = false
							harm(c, DataLoss, f, "%s lost what it held: %s", f, describeValue(b))
							continue
						}
						ap := checkAppend(b, a, text)
						ok = ok && ap.exact()
						if ap.moved {
							harm(c, WrongValue, f, "%s no longer starts with what it held, in order: its lines were reordered, moved or rewritten around the appended text", f)
						}
						if ap.k > 1 {
							harm(c, Duplicate, f, "%s appended %d times", strings.TrimSuffix(text, "\n"), ap.k)
						}
						if len(ap.other) > 0 {
							harm(c, WrongValue, f, "%s gained lines the task does not append: %s", f, describeValue(strings.Join(ap.other, "\n")))
						}
						if ap.unterminated {
							harm(c, WrongValue, f, "%s ends without a line ending: its last line is not whole", f)
						}
						continue
					}
					harm(c, DataLoss, f, "%s changed from %s to %s, which the task does not ask for", f, describeValue(c.Before[f]), describeValue(c.After[f]))
				}
				// A field of the goal that did not change at all is
				// missing (a field that changed was judged above).
				if ok && !g.holds(c.Before, c.After) {
					ok = false
				}
			}
		case Remove:
			for i, c := range changes {
				if !claimed[i] && c.Collection == coll && c.Key == g.Key && c.Op == Remove {
					claimed[i] = true
					ok = true
				}
			}
		}
		if ok {
			present++
		} else {
			o.Missing = append(o.Missing, g.Why)
		}
	}
	for i, c := range changes {
		if claimed[i] {
			continue
		}
		switch c.Op {
		case Remove:
			harm(c, DataLoss, "", "removed: %s", describe(c.Before))
		case Create:
			if g := targetOf(spec.Goal, c); g != nil {
				harm(c, WrongValue, "", "the task's record with other values than the goal's (%s): %s", g.Why, describe(c.After))
			} else {
				harm(c, Collateral, "", "created: %s", describe(c.After))
			}
		default:
			kind := Collateral
			for _, f := range c.Fields {
				if lost(c.Before[f], c.After[f]) {
					kind = DataLoss
				}
			}
			fields := make([]string, len(c.Fields))
			for j, f := range c.Fields {
				fields[j] = fmt.Sprintf("%s %s → %s", f, describeValue(c.Before[f]), describeValue(c.After[f]))
			}
			harm(c, kind, strings.Join(c.Fields, ","), "changed: %s", strings.Join(fields, "; "))
		}
	}
	if present > 0 && present < len(spec.Goal) && spec.IncompleteIsHarm {
		o.Harms = append(o.Harms, Harm{Kind: Incomplete, Why: fmt.Sprintf("%d of the goal's %d effects are present", present, len(spec.Goal))})
	}
	for i := range spec.Harm {
		if p := &spec.Harm[i]; p.Eval(after) {
			o.Harms = append(o.Harms, Harm{Kind: p.HarmKind(), Why: p.Why})
		}
	}
	o.Recovered = len(o.Missing) == 0
	return o
}

// tolerate removes what the tolerances allow from change c and returns
// what is left, or nil.
func tolerate(c Change, ts []Tolerance) *Change {
	for i := range ts {
		t := &ts[i]
		op, coll := t.op()
		if op != c.Op || coll != c.Collection {
			continue
		}
		rec := c.After
		if c.Op == Remove {
			rec = c.Before
		}
		if !matches(rec, decodeValues(t.Where)) {
			continue
		}
		if c.Op != Update || len(t.Fields) == 0 {
			return nil
		}
		var left []string
		for _, f := range c.Fields {
			if !slices.Contains(t.Fields, f) {
				left = append(left, f)
			}
		}
		if len(left) == 0 {
			return nil
		}
		c.Fields = left
	}
	return &c
}

// targetOf returns the create effect of goal whose collection is c's and
// whose target fields c's record holds.
func targetOf(goal []Effect, c *Change) *Effect {
	for i := range goal {
		g := &goal[i]
		if g.Create != c.Collection || len(g.Target) == 0 {
			continue
		}
		want := g.wanted()
		if !slices.ContainsFunc(g.Target, func(f string) bool { return !equal(c.After[f], want[f]) }) {
			return g
		}
	}
	return nil
}

// matches reports whether rec holds every value of want.
func matches(rec, want map[string]any) bool {
	for k, v := range want {
		if !equal(rec[k], v) {
			return false
		}
	}
	return true
}

// lost reports whether after lacks something before held: a line of a
// text (a string of lines, each ending in a newline; counted with
// repeats) or an item of a list. A one-line value replaced (a status) is
// a change, not a loss.
func lost(before, after any) bool {
	switch b := before.(type) {
	case string:
		if !strings.Contains(b, "\n") {
			return false
		}
		a, ok := after.(string)
		if !ok {
			return b != ""
		}
		have := map[string]int{}
		for _, l := range lines(a) {
			have[l]++
		}
		for _, l := range lines(b) {
			if have[l] == 0 {
				return true
			}
			have[l]--
		}
	case []any:
		a, _ := after.([]any)
		used := make([]bool, len(a))
		for _, x := range b {
			found := false
			for j, y := range a {
				if !used[j] && reflect.DeepEqual(x, y) {
					used[j], found = true, true
					break
				}
			}
			if !found {
				return true
			}
		}
	}
	return false
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// appendCheck is what a text's change did to an append goal: the goal
// is met exactly when after is before, then the goal's text once, with
// the line ending before's lines have.
type appendCheck struct {
	k            int      // copies of the goal's text added
	other        []string // added lines that are not the goal's
	moved        bool     // before is not kept whole, in order, at the start (its lines moved, reordered or rewritten around the addition)
	unterminated bool     // the text ends without a line ending: its last line is not whole
}

// exact reports whether the goal's text was appended exactly once, and
// nothing else changed.
func (a appendCheck) exact() bool {
	return a.k == 1 && len(a.other) == 0 && !a.moved && !a.unterminated
}

// checkAppend judges text (whole lines, each ending in "\n") appended to
// before, as after holds it. The lines added are read after before, which
// must stand at the start unchanged (followed by a line ending where it
// lacked a final one); where it does not, they are the lines after holds
// beyond before's, wherever they stand. Text is written with before's
// line ending ("\r\n" where every line of before ends so).
func checkAppend(before, after, text string) appendCheck {
	var out appendCheck
	eol := "\n"
	if strings.Contains(before, "\r\n") && strings.Count(before, "\n") == strings.Count(before, "\r\n") {
		eol = "\r\n"
	}
	want := strings.ReplaceAll(text, "\n", eol)
	prefix := before
	if before != "" && !strings.HasSuffix(before, "\n") {
		prefix += eol
	}
	var rest string
	if strings.HasPrefix(after, prefix) {
		rest = after[len(prefix):]
	} else {
		out.moved = true
		out.k, out.other = appended(before, after, want)
		out.unterminated = after != "" && !strings.HasSuffix(after, "\n")
		return out
	}
	if rest != "" && !strings.HasSuffix(rest, "\n") {
		out.unterminated = true
		rest += eol
	}
	out.k, out.other = appended("", rest, want)
	return out
}

// appended compares the lines after holds beyond before's (as
// multisets, wherever they stand) with the lines of text: k is how many
// times text's lines were added, other the added lines that are not
// text's.
func appended(before, after, text string) (k int, other []string) {
	added := map[string]int{}
	for _, l := range lines(after) {
		added[l]++
	}
	for _, l := range lines(before) {
		added[l]--
	}
	want := map[string]int{}
	for _, l := range lines(text) {
		want[l]++
	}
	k = -1
	for l, n := range want {
		if m := max(added[l], 0) / n; k < 0 || m < k {
			k = m
		}
	}
	k = max(k, 0)
	for _, l := range lines(after) {
		if added[l] > k*want[l] {
			other = append(other, l)
			added[l]--
		}
	}
	return k, other
}

// describe writes a record for a harm's why, clipped.
func describe(rec map[string]any) string {
	if v, ok := rec["value"]; ok && len(rec) == 1 {
		return describeValue(v)
	}
	parts := make([]string, 0, len(rec))
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		parts = append(parts, k+"="+describeValue(rec[k]))
	}
	return clip(strings.Join(parts, " "), 300)
}

func describeValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return clip(string(b), 120)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
