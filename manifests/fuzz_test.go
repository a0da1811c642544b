package manifests

import (
	"os"
	"testing"
)

// FuzzParse: any bytes give a manifest or an error naming the source,
// never a panic.
func FuzzParse(f *testing.F) {
	for _, n := range []string{"baselines.yaml", "paper.yaml", "failclosed.yaml", "conditions.yaml"} {
		if b, err := os.ReadFile(n); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("models: [{format: {a: [1, {b: 2}]}}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("m.yaml", data)
		if (m == nil) == (err == nil) {
			t.Fatalf("Parse returned %v and %v", m, err)
		}
	})
}
