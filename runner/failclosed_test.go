package runner_test

import (
	"testing"

	_ "github.com/mcpstress/stress/models/failclosed"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestFailClosedStudy runs the shipped manifests/failclosed.yaml end to
// end: the fail-closed client in both modes is 105/105 strict under
// envelope; under category it is strict on the 11 scenarios whose cause
// has a category (55 decisions) and stops on the 10 unknown tools; under
// normalized, which shows no envelope, it always stops. It never replays,
// never claims success and never answers invalidly.
func TestFailClosedStudy(t *testing.T) {
	dir, sum, _ := runManifest(t, "failclosed.yaml")
	if sum.Decisions != 630 || sum.Calls != 630 || sum.Errors != 0 || len(sum.Cells) != 6 {
		t.Fatalf("summary: %d decisions, %d calls, %d errors, %d cells; want 630, 630, 0, 6", sum.Decisions, sum.Calls, sum.Errors, len(sum.Cells))
	}
	seen := map[string]bool{}
	for _, c := range sum.Cells {
		seen[c.Model+"/"+string(c.Condition)] = true
		want := 0
		switch c.Condition {
		case study.Envelope:
			want = 105
		case study.Category:
			want = 55
		}
		if c.N != 105 || c.Count(simulator.Strict) != want || c.Count(simulator.Cover) != want || c.Count(simulator.Retry) != 0 || c.Count(simulator.Invalid) != 0 || c.Count(simulator.AnyFS) != 0 || c.Count(simulator.TerminalFS) != 0 || c.Extra != 0 || c.Errors != 0 {
			t.Errorf("%s/%s: %+v; want N 105, strict = cover = %d, all else 0", c.Model, c.Condition, c, want)
		}
	}
	for _, model := range []string{"fail_closed_registry", "fail_closed_explicit_action"} {
		for _, c := range []study.Condition{study.Normalized, study.Envelope, study.Category} {
			if !seen[model+"/"+string(c)] {
				t.Errorf("no cell for %s/%s", model, c)
			}
		}
	}
	checkBundle(t, dir, sum)
}
