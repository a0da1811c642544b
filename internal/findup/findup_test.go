package findup_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpstress/stress/internal/findup"
)

// TestFind: the nearest directory that has the files wins; every place
// looked at is listed once, in order, with why it would not do; a second
// start goes on where the first found nothing.
func TestFind(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	other := filepath.Join(root, "c")
	for _, d := range []string{deep, other, filepath.Join(root, "a", "x", "y"), filepath.Join(root, "x", "y")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "x", "y", "f"), nil, 0o644)
	check := findup.HasFiles("y/f")

	found, looked := findup.Find("x", check, deep, other)
	if found != filepath.Join(root, "x") {
		t.Fatalf("found %q", found)
	}
	want := []findup.Place{
		{filepath.Join(deep, "x"), "does not exist"},
		{filepath.Join(root, "a", "x"), "has no y/f"},
		{filepath.Join(root, "x"), ""},
	}
	if len(looked) != len(want) {
		t.Fatalf("looked %v, want %v", looked, want)
	}
	for i := range want {
		if looked[i] != want[i] {
			t.Errorf("place %d: %v, want %v", i, looked[i], want[i])
		}
	}

	os.Remove(filepath.Join(root, "x", "y", "f"))
	found, looked = findup.Find("x", check, deep, other)
	if found != "" {
		t.Fatalf("found %q with no f", found)
	}
	seen := map[string]bool{}
	for _, p := range looked {
		if seen[p.Dir] || p.Why == "" {
			t.Errorf("place %v twice or without a reason", p)
		}
		seen[p.Dir] = true
	}
	if !seen[filepath.Join(other, "x")] || !seen[filepath.Join(string(filepath.Separator), "x")] {
		t.Errorf("looked %v: want the second start and the root", looked)
	}
}
