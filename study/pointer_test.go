package study

import "testing"

// TestDecodedDocCheck: a pointer checked in a document decoded once
// fails exactly when Resolve fails, with the same message.
func TestDecodedDocCheck(t *testing.T) {
	docs := []string{
		`{"a":{"b/c":[1,{"~d":2}]},"n":null,"s":"x","e":{},"z":[],"a2":{"k":1,"k":{"m":3}}}`,
		`[0,[1,2],{"x":null}]`, `null`, `"str"`, `12`, `{`, ``,
	}
	ptrs := []string{"", "a", "/", "/a", "/x", "/a/b~1c", "/a/b~1c/0", "/a/b~1c/1/~0d", "/a/b~1c/2", "/a/b~1c/01", "/a/b~1c/-1",
		"/a/b~1c/0/x", "/n", "/n/0", "/n/x", "/s/0", "/e/x", "/z/0", "/a2/k/m", "/a2/k/0", "/0", "/1/1", "/1/2", "/2/x", "/2/x/y", "/0/0"}
	for _, doc := range docs {
		d := decodeDoc([]byte(doc))
		for _, p := range ptrs {
			_, want := Resolve([]byte(doc), p)
			got := d.check(p)
			if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
				t.Errorf("%s, pointer %q: check %v, Resolve %v", doc, p, got, want)
			}
		}
	}
}
