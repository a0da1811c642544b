package exectable

import (
	"reflect"
	"testing"
)

// TestDiff: a regenerated execution table that differs
// from the checked-in one is described by its differing cells, whatever
// the column widths (a cell that changes width realigns the whole table).
func TestDiff(t *testing.T) {
	const want = `scenario  class              revise_arguments        select_tool  proven preferred
X08       timeout_committed  duplicate               recovered    select_tool
X09       timeout_committed  recovered, wrong_value  recovered    select_tool
X10       partial_commit     recovered               -            revise_arguments
`
	const got = `scenario  class              revise_arguments  select_tool  proven preferred
X08       timeout_committed  duplicate         recovered    select_tool
X09       timeout_committed  wrong_value       recovered    select_tool
X11       partial_commit     recovered         -            revise_arguments
`
	d := Diff([]byte(want), []byte(got))
	w := []string{
		"X09 revise_arguments: want recovered, wrong_value, got wrong_value",
		"X10: in the checked-in table only",
		"X11: in the regenerated table only",
	}
	if !reflect.DeepEqual(d, w) {
		t.Errorf("Diff = %q, want %q", d, w)
	}
	if d := Diff([]byte(want), []byte(want)); d != nil {
		t.Errorf("a table against itself: %q", d)
	}
	if d := Diff([]byte("scenario  class\n"), []byte(got)); len(d) != 1 {
		t.Errorf("another header: %q", d)
	}
}
