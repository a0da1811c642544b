package results

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/mcpstress/stress/conditions"
)

// TestRefCollision: a message whose first 64 bits of sha256 are taken by
// another gets its whole sha256 as ref, and reads back.
func TestRefCollision(t *testing.T) {
	file := filepath.Join(t.TempDir(), MessagesFile)
	l, err := OpenMessageLog(file, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := conditions.Message{Role: "user", Content: "x"}
	var raw bytes.Buffer
	raw.WriteString(`{"role":"user","content":"x"}`)
	s := sha256.Sum256(raw.Bytes())
	other := s
	other[31] ^= 1
	l.short[binary.BigEndian.Uint64(s[:8])] = other // a message already stored under the short ref
	ref, err := l.Ref(&m)
	if err != nil || len(ref) != 64 {
		t.Fatalf("ref %q, %v: want the whole sha256", ref, err)
	}
	if again, _ := l.Ref(&m); again != ref || l.Size() != int64(len(`{"ref":"","message":}`)+64+raw.Len()+1) {
		t.Errorf("second ref %q, %d bytes: the message was stored twice", again, l.Size())
	}
	l.Close()
	tab, err := LoadMessages(file, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tab.Expand([]string{ref})
	if err != nil || got[0] != m {
		t.Errorf("Expand: %v %+v", err, got)
	}
}
