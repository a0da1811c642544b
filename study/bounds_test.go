package study

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpstress/stress/internal/input"
)

// TestParseScenariosDeep: a corpus file nested 100,000 levels is refused
// before it is decoded, naming the line and the limit (issue 46).
func TestParseScenariosDeep(t *testing.T) {
	in := "[\n{\"id\": \"x\", \"observation\": " + strings.Repeat(`{"a": `, 100000) + "1" + strings.Repeat("}", 100001) + "\n]\n"
	_, errs := ParseScenarios("deep.json", []byte(in))
	if len(errs) != 1 || !errors.Is(errs[0], input.ErrTooDeep) || !strings.Contains(errs[0].Error(), "line 2: nesting deeper than 64 levels") {
		t.Fatalf("got %v", errs)
	}
}
