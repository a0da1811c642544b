package capture

import (
	"os"
	"testing"

	"github.com/mcpstress/stress/study"
)

// TestRulesReproducePaperCauses applies the cause and target rules to the
// paper corpus' observations and compares them with the paper's coding by
// hand: every cause and target must agree. (The profile rules are tested
// the same way in coding/rules.)
func TestRulesReproducePaperCauses(t *testing.T) {
	c, err := study.LoadCorpus(os.DirFS("../manifests"), "corpus/paper")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Scenarios {
		text := s.ObservationText()
		cause, _ := causeOf(s.Probe, text)
		if cause != s.Cause {
			t.Errorf("%s: cause %s, the paper says %s", s.ID, cause, s.Cause)
		}
		p := Plan{Kind: s.Probe, Tool: s.Target.Name, Field: s.Target.Pointer[min(1, len(s.Target.Pointer)):]}
		target := targetOf(cause, p, text)
		if cause == s.Cause && target != s.Target {
			t.Errorf("%s: target %+v, the paper says %+v", s.ID, target, s.Target)
		}
	}
}
