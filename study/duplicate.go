package study

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// duplicateMember returns the dotted path of the first member of the JSON
// value raw whose name an earlier member of the same object already has,
// and whether there is one. encoding/json keeps the last of two such
// members and conditions renders every member, so a record with one would
// be checked by one value and shown to the model with both. In the
// outermost object (a record's fields) names are compared without case,
// as encoding/json matches them ("ID" sets id); deeper, where a server's
// own payload may use both "id" and "ID", only as written.
func duplicateMember(raw []byte) (string, bool) {
	type frame struct {
		obj     bool
		keys    map[string]bool
		path    string
		key     string // the member being read (objects)
		wantKey bool
		index   int // the element being read (arrays)
	}
	var stack []*frame
	child := func() string { // the path of the value being read
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		step := f.key
		if !f.obj {
			step = strconv.Itoa(f.index)
		}
		if f.path == "" {
			return step
		}
		return f.path + "." + step
	}
	done := func() { // a value of the top container was read
		if len(stack) == 0 {
			return
		}
		if f := stack[len(stack)-1]; f.obj {
			f.wantKey = true
		} else {
			f.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, &frame{obj: t == '{', keys: map[string]bool{}, path: child(), wantKey: true})
			default:
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			if f := stack[len(stack)-1]; f.obj && f.wantKey {
				folded := t
				if len(stack) == 1 {
					folded = strings.ToLower(t)
				}
				f.key, f.wantKey = t, false
				if f.keys[folded] {
					return child(), true
				}
				f.keys[folded] = true
				continue
			}
			done()
		default:
			done()
		}
	}
}
