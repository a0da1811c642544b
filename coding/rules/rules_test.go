package rules_test

import (
	"os"
	"testing"

	"github.com/mcpstress/stress/coding/rules"
	"github.com/mcpstress/stress/study"
)

// TestRulesReproducePaperCoding applies the profile rules to the paper
// corpus' observations and compares them with the paper's coding by hand
// (docs/specification.md section 5): every bit must agree, every evidence
// pointer resolve and every bit be marked proposed.
func TestRulesReproducePaperCoding(t *testing.T) {
	c, err := study.LoadCorpus(os.DirFS("../../manifests"), "corpus/paper")
	if err != nil {
		t.Fatal(err)
	}
	bits, agree := 0, 0
	for i := range c.Scenarios {
		s := &c.Scenarios[i]
		got := rules.Code(s)
		for _, v := range []struct {
			name      string
			got, want study.View
		}{{"control", got.Control, s.Profile.Control}, {"content", got.Content, s.Profile.Content}} {
			t.Run(v.name, func(t *testing.T) {
				for _, k := range study.Coordinates {
					bits++
					b := v.got[k]
					if b.Bit == v.want[k].Bit {
						agree++
					} else {
						t.Errorf("%s %s %s: rule %d (%s), paper %d (%s)", s.ID, v.name, k, b.Bit, b.Rationale, v.want[k].Bit, v.want[k].Rationale)
					}
					if _, err := study.Resolve(s.Observation, b.Evidence); err != nil {
						t.Errorf("%s %s %s: evidence %v", s.ID, v.name, k, err)
					}
					if !b.Proposed {
						t.Errorf("%s %s %s: not marked proposed", s.ID, v.name, k)
					}
				}
			})
		}
	}
	t.Logf("rules agree with the paper's coding on %d of %d bits", agree, bits)
}
