package study

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestDuplicateMember: a member named twice in one object (or in two
// cases) is found, with its path; the same name in different objects is
// not a duplicate.
func TestDuplicateMember(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":"S01","id":"S77"}`:      "id",
		`{"id":"S01","ID":"S78"}`:      "ID",
		`{"i\u0064":"S01","id":"S79"}`: "id",
		`{"observation":{"result":{"ok":true},"exception":{},"result":null}}`: "observation.result",
		`{"a":[{"x":1},{"x":2,"y":[1,{"z":0,"z":1}]}]}`:                       "a.1.y.1.z",
		`{"a":{"id":1,"ID":2}}`:                                               "",
		`{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":1}]}`:                     "",
		`{"a":"a","b":["a","a"],"c":{"a":"a"}}`:                               "",
		`[1,2]`:                                                               "",
		`{"a":`:                                                               "",
	} {
		t.Run(in, func(t *testing.T) {
			got, dup := duplicateMember([]byte(in))
			if got != want || dup != (want != "") {
				t.Errorf("duplicateMember(%s) = %q, %v; want %q", in, got, dup, want)
			}
		})
	}
}

// TestDuplicateMemberRefused: a record of a real corpus file with its id
// given twice, or a member of its observation given twice, is refused,
// naming the record and the member; the other records load.
func TestDuplicateMemberRefused(t *testing.T) {
	good, err := os.ReadFile("../manifests/corpus/paper/P06.json")
	if err != nil {
		t.Fatal(err)
	}
	all, errs := ParseScenarios("f.json", good)
	if len(errs) != 0 || len(all) < 2 {
		t.Fatalf("P06.json: %d records, %v", len(all), errs)
	}
	for _, tc := range []struct{ old, new, field string }{
		{`"id": "`, `"ID": "S77", "id": "`, "id"},
		{`"observation": {`, `"observation": {"result": {"content": []}, `, "observation.result"},
	} {
		t.Run(tc.field+" given twice", func(t *testing.T) {
			if !bytes.Contains(good, []byte(tc.old)) {
				t.Fatalf("P06.json has no %s", tc.old)
			}
			bad := bytes.Replace(good, []byte(tc.old), []byte(tc.new), 1)
			recs, errs := ParseScenarios("f.json", bad)
			if len(errs) != 1 || len(recs) != len(all)-1 {
				t.Fatalf("%d records, errors %v", len(recs), errs)
			}
			var re *RecordError
			if !errors.As(errs[0], &re) || re.Record != 1 || re.Field != tc.field || !strings.Contains(errs[0].Error(), "a second member of that name") {
				t.Errorf("%v", errs[0])
			}
		})
	}
}
