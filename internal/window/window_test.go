package window

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlice reads ranges forward, backward, at random and past the end
// of a file, and checks each against the file's bytes, and that forward
// reads are served by few reads of the file.
func TestSlice(t *testing.T) {
	data := make([]byte, 3*maxRead+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &Reader{F: f}
	check := func(off, size int64) {
		t.Helper()
		b, err := r.Slice(off, size)
		if err != nil {
			t.Fatalf("Slice(%d, %d): %v", off, size, err)
		}
		if !bytes.Equal(b, data[off:off+size]) {
			t.Fatalf("Slice(%d, %d): wrong bytes", off, size)
		}
	}
	misses := 0
	for off := int64(0); off+300 <= int64(len(data)); off += 300 {
		before := r.off
		check(off, 300)
		if r.off != before || off == 0 {
			misses++
		}
	}
	if n := len(data) / 300; misses > n/100 {
		t.Errorf("forward: %d reads of the file for %d ranges", misses, n)
	}
	check(100, 50)                     // backward
	check(int64(len(data))-10, 10)     // the last bytes
	check(5, int64(maxRead)+100)       // larger than a window
	rng := rand.New(rand.NewPCG(1, 2)) // scattered
	for range 1000 {
		off := rng.Int64N(int64(len(data)) - 1000)
		check(off, rng.Int64N(1000)+1)
	}
	if r.size != minRead {
		t.Errorf("after scattered reads the window is %d bytes, want %d", r.size, minRead)
	}
	if _, err := r.Slice(int64(len(data))-5, 10); err == nil || !strings.Contains(err.Error(), "reading 10 bytes at") {
		t.Errorf("a range past the end: %v", err)
	}
	check(0, 10) // a failed read leaves nothing behind
}
