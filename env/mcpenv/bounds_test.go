package mcpenv

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpstress/stress/internal/input"
)

// TestParseDeep: a reference scenario set nested 100,000 levels is
// refused before it is decoded, naming the line and the limit (issue 46).
func TestParseDeep(t *testing.T) {
	in := `{"scenarios": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}"
	_, err := Parse("deep.json", "deep", []byte(in))
	if !errors.Is(err, input.ErrTooDeep) || !strings.Contains(err.Error(), "deep.json: line 1: nesting deeper than 64 levels") {
		t.Fatalf("got %v", err)
	}
}
