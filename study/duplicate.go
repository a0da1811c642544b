package study

import (
	"errors"
	"strconv"
	"strings"

	"github.com/buger/jsonparser"
)

// duplicateMember returns the dotted path of the first member of the JSON
// value raw whose name an earlier member of the same object already has,
// and whether there is one. encoding/json keeps the last of two such
// members and conditions renders every member, so a record with one would
// be checked by one value and shown to the model with both. In the
// outermost object (a record's fields) names are compared without case,
// as encoding/json matches them ("ID" sets id); deeper, where a server's
// own payload may use both "id" and "ID", only as written. Malformed
// JSON has no duplicate here: the record's decoder reports it.
//
// Note: github.com/buger/jsonparser walks the members without building
// tokens; json.Decoder.Token made loading the paper corpus 40% slower.
func duplicateMember(raw []byte) (string, bool) {
	return duplicateIn(raw, jsonparser.Object, "", true)
}

// duplicateIn is duplicateMember for the value raw of type typ at path;
// fold compares an object's member names without case.
func duplicateIn(raw []byte, typ jsonparser.ValueType, path string, fold bool) (string, bool) {
	var found string
	at := func(step string) string {
		if path == "" {
			return step
		}
		return path + "." + step
	}
	switch typ {
	case jsonparser.Object:
		seen := map[string]bool{}
		jsonparser.ObjectEach(raw, func(key, value []byte, vt jsonparser.ValueType, _ int) error {
			name := string(key)
			folded := name
			if fold {
				folded = strings.ToLower(name)
			}
			if seen[folded] {
				found = at(name)
				return errFound
			}
			seen[folded] = true
			if p, dup := duplicateIn(value, vt, at(name), false); dup {
				found = p
				return errFound
			}
			return nil
		})
	case jsonparser.Array:
		i := 0
		jsonparser.ArrayEach(raw, func(value []byte, vt jsonparser.ValueType, _ int, _ error) {
			if found == "" {
				if p, dup := duplicateIn(value, vt, at(strconv.Itoa(i)), false); dup {
					found = p
				}
			}
			i++
		})
	}
	return found, found != ""
}

// errFound stops a walk at the first duplicate.
var errFound = errors.New("duplicate member")
