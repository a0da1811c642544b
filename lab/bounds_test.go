package lab

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpstress/stress/internal/input"
)

// TestParseSetDeep: a scenario set nested 100,000 levels is refused
// before it is decoded, naming the line and the limit (issue 46).
func TestParseSetDeep(t *testing.T) {
	in := `{"scenarios": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}"
	_, errs := parseSet("deep.json", []byte(in))
	if len(errs) != 1 || !errors.Is(errs[0], input.ErrTooDeep) || !strings.Contains(errs[0].Error(), "line 1: nesting deeper than 64 levels") {
		t.Fatalf("got %v", errs)
	}
}
