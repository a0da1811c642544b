package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// param is one argument of a tool: its JSON Schema and the checks the lab
// applies to it by hand, so that each failure names the argument and says
// whether its type (invalid_type) or its value (invalid_value) is wrong.
type param struct {
	name     string
	typ      string // "string", "integer" or "array" (of objects with items)
	desc     string
	required bool
	enum     []string // strings: the allowed values
	min, max int64    // integers: inclusive bounds
	maxLen   int      // strings: the most bytes (0: 256)
	items    []param  // arrays: the members of each item (an object)
	minItems int      // arrays: the fewest items
	maxItems int      // arrays: the most items
}

// schema returns the JSON Schema of an object with members ps.
func schema(ps []param) map[string]any {
	props := map[string]any{}
	var req []string
	for _, p := range ps {
		props[p.name] = p.schema()
		if p.required {
			req = append(req, p.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(req) > 0 {
		s["required"] = req
	}
	return s
}

func (p *param) schema() map[string]any {
	s := map[string]any{"type": p.typ}
	if p.desc != "" {
		s["description"] = p.desc
	}
	switch p.typ {
	case "string":
		if len(p.enum) > 0 {
			s["enum"] = p.enum
		}
		s["maxLength"] = p.limit()
	case "integer":
		s["minimum"], s["maximum"] = p.min, p.max
	case "array":
		s["items"] = schema(p.items)
		s["minItems"], s["maxItems"] = p.minItems, p.maxItems
	}
	return s
}

func (p *param) limit() int {
	if p.maxLen == 0 {
		return 256
	}
	return p.maxLen
}

// args are a call's validated arguments: strings, int64s and, for arrays,
// []args.
type args map[string]any

func (a args) str(name string) string  { s, _ := a[name].(string); return s }
func (a args) num(name string) int64   { n, _ := a[name].(int64); return n }
func (a args) has(name string) bool    { _, ok := a[name]; return ok }
func (a args) list(name string) []args { l, _ := a[name].([]args); return l }

// decodeArgs parses the raw arguments of a call (absent or null is the
// empty object) and checks them against ps. The failure names the argument
// by its JSON pointer.
func decodeArgs(raw json.RawMessage, ps []param) (args, *failure) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, typeFail("", "the arguments are not valid JSON")
	}
	if dec.More() {
		return nil, typeFail("", "the arguments hold more than one JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, typeFail("", "the arguments must be an object, got %s", jsonKind(v))
	}
	return checkObject(obj, ps, "")
}

// checkObject checks obj against ps; at is the pointer of obj.
func checkObject(obj map[string]any, ps []param, at string) (args, *failure) {
	out := args{}
	known := map[string]bool{}
	for i := range ps {
		p := &ps[i]
		known[p.name] = true
		v, ok := obj[p.name]
		ptr := at + "/" + statediff.EscapePointer(p.name)
		if !ok || v == nil {
			if p.required {
				return nil, typeFail(ptr, "%s is required", p.name)
			}
			continue
		}
		x, f := p.check(v, ptr)
		if f != nil {
			return nil, f
		}
		out[p.name] = x
	}
	var extra []string
	for k := range obj {
		if !known[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, typeFail(at+"/"+statediff.EscapePointer(extra[0]), "unexpected argument %s", quoteValue(extra[0]))
	}
	return out, nil
}

func (p *param) check(v any, ptr string) (any, *failure) {
	switch p.typ {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, typeFail(ptr, "%s must be a string, got %s", p.name, jsonKind(v))
		}
		if len(s) > p.limit() {
			return nil, valueFail(ptr, "%s is longer than %d bytes", p.name, p.limit())
		}
		if !utf8.ValidString(s) {
			return nil, valueFail(ptr, "%s is not valid UTF-8", p.name)
		}
		if len(p.enum) > 0 && !slices.Contains(p.enum, s) {
			return nil, valueFail(ptr, "%s must be one of %s, got %s", p.name, strings.Join(p.enum, ", "), quoteValue(s))
		}
		return s, nil
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return nil, typeFail(ptr, "%s must be an integer, got %s", p.name, jsonKind(v))
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(string(n), 64)
			switch {
			case ferr == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53:
				i = int64(f)
			case ferr == nil && f == math.Trunc(f), ferr != nil && !strings.ContainsAny(string(n), ".eE"):
				return nil, valueFail(ptr, "%s must be between %d and %d, got %s", p.name, p.min, p.max, clip(string(n), 40))
			default:
				return nil, typeFail(ptr, "%s must be an integer, got the number %s", p.name, clip(string(n), 40))
			}
		}
		if i < p.min || i > p.max {
			return nil, valueFail(ptr, "%s must be between %d and %d, got %d", p.name, p.min, p.max, i)
		}
		return i, nil
	case "array":
		l, ok := v.([]any)
		if !ok {
			return nil, typeFail(ptr, "%s must be an array, got %s", p.name, jsonKind(v))
		}
		if len(l) < p.minItems || len(l) > p.maxItems {
			return nil, valueFail(ptr, "%s must hold %d to %d items, got %d", p.name, p.minItems, p.maxItems, len(l))
		}
		out := make([]args, len(l))
		for i, it := range l {
			iptr := fmt.Sprintf("%s/%d", ptr, i)
			obj, ok := it.(map[string]any)
			if !ok {
				return nil, typeFail(iptr, "%s[%d] must be an object, got %s", p.name, i, jsonKind(it))
			}
			a, f := checkObject(obj, p.items, iptr)
			if f != nil {
				return nil, f
			}
			out[i] = a
		}
		return out, nil
	}
	panic("lab: unknown parameter type " + p.typ)
}

// typeFail is an invalid_type failure at pointer ptr.
func typeFail(ptr, format string, a ...any) *failure {
	return &failure{class: study.InvalidType, pointer: ptr, text: fmt.Sprintf(format, a...)}
}

// valueFail is an invalid_value failure at pointer ptr.
func valueFail(ptr, format string, a ...any) *failure {
	return &failure{class: study.InvalidValue, pointer: ptr, text: fmt.Sprintf(format, a...)}
}

func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", x)
	}
}

// clip shortens s to at most n bytes (on a rune boundary), marking a cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// quoteValue quotes a client-supplied value for a failure text, clipped.
func quoteValue(s string) string { return strconv.Quote(clip(s, 64)) }
