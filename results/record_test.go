package results

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHashFileCache checks the executable-hash cache: the first call
// hashes and remembers, the next reads the cache (a planted value proves
// it), and a changed size or modification time hashes again.
func TestHashFileCache(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "exe")
	os.WriteFile(file, []byte("hello\n"), 0o755)
	const want = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03" // sha256sum of "hello\n"
	cache := filepath.Join(dir, "cache")
	got, err := hashFile(file, cache)
	if err != nil || got != want {
		t.Fatalf("hashFile = %q, %v; want %s", got, err, want)
	}
	entries, _ := os.ReadDir(cache)
	if len(entries) != 1 {
		t.Fatalf("%d cache entries, want 1", len(entries))
	}
	planted := "0000000000000000000000000000000000000000000000000000000000000000"
	os.WriteFile(filepath.Join(cache, entries[0].Name()), []byte(planted), 0o644)
	if got, _ := hashFile(file, cache); got != planted {
		t.Errorf("second call = %s, want the cached %s", got, planted)
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(file, later, later)
	if got, _ := hashFile(file, cache); got != want {
		t.Errorf("after a new mtime = %s, want %s", got, want)
	}
	if got, _ := hashFile(file, ""); got != want {
		t.Errorf("without a cache = %s, want %s", got, want)
	}
}
