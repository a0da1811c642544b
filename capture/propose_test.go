package capture

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/mcpstress/stress/study"
)

// TestRulesReproducePaperCoding applies the cause and profile rules to the
// paper corpus' observations and compares them with the paper's coding by
// hand (STUDY.md section 5): every cause, target and bit must agree.
func TestRulesReproducePaperCoding(t *testing.T) {
	c, err := study.LoadCorpus(os.DirFS("../manifests"), "corpus/paper")
	if err != nil {
		t.Fatal(err)
	}
	bits, agree := 0, 0
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
		var code int64
		var o struct {
			Exception *struct {
				Error struct {
					Code int64 `json:"code"`
				} `json:"error"`
			} `json:"exception"`
		}
		if json.Unmarshal(s.Observation, &o) == nil && o.Exception != nil {
			code = o.Exception.Error.Code
		}
		got := propose(s.Observation, s.Surface, code, s.Cause, s.Target, text, hasTyped(s.Observation))
		for _, v := range []struct {
			name      string
			got, want study.View
		}{{"control", got.Control, s.Profile.Control}, {"content", got.Content, s.Profile.Content}} {
			for _, k := range study.Coordinates {
				bits++
				if v.got[k].Bit == v.want[k].Bit {
					agree++
				} else {
					t.Errorf("%s %s %s: rule %d (%s), paper %d (%s)", s.ID, v.name, k, v.got[k].Bit, v.got[k].Rationale, v.want[k].Bit, v.want[k].Rationale)
				}
				if _, err := study.Resolve(s.Observation, v.got[k].Evidence); err != nil {
					t.Errorf("%s %s %s: evidence %v", s.ID, v.name, k, err)
				}
			}
		}
	}
	t.Logf("rules agree with the paper's coding on %d of %d bits", agree, bits)
}
