package lazyregexp

import (
	"reflect"
	"regexp"
	"testing"
)

// TestSameAsRegexp: every method answers as regexp's does, and an
// invalid expression panics on first use.
func TestSameAsRegexp(t *testing.T) {
	const expr, s = `(?i)b(a+)`, "xBaa ba"
	r, re := New(expr), regexp.MustCompile(expr)
	if r.MatchString(s) != re.MatchString(s) || r.FindString(s) != re.FindString(s) || r.Re().String() != expr ||
		!reflect.DeepEqual(r.FindStringSubmatch(s), re.FindStringSubmatch(s)) || !reflect.DeepEqual(r.FindSubmatch([]byte(s)), re.FindSubmatch([]byte(s))) ||
		!reflect.DeepEqual(r.FindAllStringIndex(s, -1), re.FindAllStringIndex(s, -1)) ||
		!reflect.DeepEqual(r.FindAllStringSubmatchIndex(s, -1), re.FindAllStringSubmatchIndex(s, -1)) {
		t.Error("a lazy regexp answers differently")
	}
	bad := New(`(`)
	defer func() {
		if recover() == nil {
			t.Error("an invalid expression did not panic on use")
		}
	}()
	bad.MatchString("x")
}
