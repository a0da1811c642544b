package conditions_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/study"
)

// TestExpresses pins, per corpus and condition, how many scenarios the
// condition expresses (conditions.Expresses) and which it does not, and
// checks each answer against the rendering itself: a shape arm expresses
// a scenario exactly when what the server sends under it carries one of
// its parts (an isError result where the record has a JSON-RPC error the
// server answered; _meta's ToolFailure classification; the -32023
// error), and a combination exactly when one of its parts does.
func TestExpresses(t *testing.T) {
	want := map[string]map[study.Condition]string{
		"paper": {
			study.Category:               "11: not S01 S03 S05 S06 S08 S09 S12 S14 S16 S19",
			study.CategoryStructured:     "11: not S01 S03 S05 S06 S08 S09 S12 S14 S16 S19",
			study.CategoryText:           "11: not S01 S03 S05 S06 S08 S09 S12 S14 S16 S19",
			study.CategoryFalseRetryable: "11: not S01 S03 S05 S06 S08 S09 S12 S14 S16 S19",
			study.SEP2145:                "8: only S01 S02 S03 S04 S05 S06 S07 S08",
			study.ToolFailureShape:       "10: only S09 S10 S12 S13 S14 S15 S16 S17 S19 S20",
			study.RateLimited:            "0",
			study.ToolFailureSEP2145:     "18: not S11 S18 S21",
			study.SEP2145RateLimited:     "8: only S01 S02 S03 S04 S05 S06 S07 S08",
			study.ToolFailureGuidance:    "10: only S09 S10 S12 S13 S14 S15 S16 S17 S19 S20",
			study.ToolFailureApplied:     "10: only S09 S10 S12 S13 S14 S15 S16 S17 S19 S20",
		},
		"lab": {
			study.Category:               "34: not X22 X23 X24 X28 X29 X30",
			study.CategoryStructured:     "34: not X22 X23 X24 X28 X29 X30",
			study.CategoryText:           "34: not X22 X23 X24 X28 X29 X30",
			study.CategoryFalseRetryable: "34: not X22 X23 X24 X28 X29 X30",
			study.SEP2145:                "13: only X02 X05 X11 X15 X17 X20 X25 X28 X30 X31 X36 X38 X40",
			study.ToolFailureShape:       "13: only X01 X04 X09 X10 X13 X14 X16 X19 X26 X29 X32 X35 X37",
			study.RateLimited:            "1: only X40",
			study.ToolFailureSEP2145:     "26: not X03 X06 X07 X08 X12 X18 X21 X22 X23 X24 X27 X33 X34 X39",
			study.SEP2145RateLimited:     "13: only X02 X05 X11 X15 X17 X20 X25 X28 X30 X31 X36 X38 X40",
			study.ToolFailureGuidance:    "13: only X01 X04 X09 X10 X13 X14 X16 X19 X26 X29 X32 X35 X37",
			study.ToolFailureApplied:     "13: only X01 X04 X09 X10 X13 X14 X16 X19 X26 X29 X32 X35 X37",
		},
	}
	// A combination expresses what any of its parts does; an arm that
	// adds members to ToolFailure, what ToolFailure does.
	parts := map[study.Condition][]study.Condition{
		study.ToolFailureSEP2145:  {study.SEP2145, study.ToolFailureShape},
		study.SEP2145RateLimited:  {study.SEP2145, study.RateLimited},
		study.ToolFailureGuidance: {study.ToolFailureShape},
		study.ToolFailureApplied:  {study.ToolFailureShape},
	}
	for _, corpus := range shapeCorpora {
		scs, _ := loadCorpus(t, corpus)
		for i := range scs {
			for c, of := range parts {
				some := false
				for _, p := range of {
					some = some || conditions.Expresses(&scs[i], p)
				}
				if conditions.Expresses(&scs[i], c) != some {
					t.Errorf("%s %s: %s expresses it %v, its parts %v %v", corpus, scs[i].ID, c, !some, of, some)
				}
			}
		}
		for _, c := range study.AllConditions {
			var yes, no []string
			for i := range scs {
				s := &scs[i]
				got := conditions.Expresses(s, c)
				if got {
					yes = append(yes, s.ID)
				} else {
					no = append(no, s.ID)
				}
				if c.Shape() {
					if carried := carries(t, s, c); got != carried {
						t.Errorf("%s %s %s: Expresses %v, but the rendering carries the arm's parts: %v", corpus, s.ID, c, got, carried)
					}
				}
				if got != slicesNone(conditions.Unexpressed(s, []study.Condition{c})) {
					t.Errorf("%s %s %s: Unexpressed disagrees with Expresses", corpus, s.ID, c)
				}
			}
			// The shorter list names the scenarios: those expressed
			// (only) or those not (not).
			line := fmt.Sprint(len(yes))
			switch {
			case len(no) == 0, len(yes) == 0:
			case len(yes) < len(no):
				line += ": only " + strings.Join(yes, " ")
			default:
				line += ": not " + strings.Join(no, " ")
			}
			w, pinned := want[corpus][c]
			if !pinned {
				w = fmt.Sprint(len(scs)) // every scenario
			}
			if line != w {
				t.Errorf("%s %s: %s, want %s", corpus, c, line, w)
			}
		}
	}
}

// slicesNone reports whether cs is empty.
func slicesNone(cs []study.Condition) bool { return len(cs) == 0 }

// carries reports whether the rendering of s under shape c carries one
// of the arm's parts, read from the JSON the server sends, not from
// Expresses's rule.
func carries(t *testing.T, s *study.Scenario, c study.Condition) bool {
	t.Helper()
	raw, label, ok, err := conditions.ShapeResult(s, c)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return false
	}
	var v struct {
		IsError *bool                      `json:"isError"`
		Meta    map[string]json.RawMessage `json:"_meta"`
		Code    int                        `json:"code"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var obs struct {
		Exception json.RawMessage `json:"exception"`
	}
	json.Unmarshal(s.Observation, &obs)
	moved := label == conditions.ShapeResultLabel && obs.Exception != nil && v.IsError != nil && *v.IsError
	_, classified := v.Meta[study.ToolFailureKey]
	limited := label == conditions.ShapeErrorLabel && v.Code == study.RateLimitedCode
	return c.MovesToResult() && moved || c.Classifies() && classified || c.RateLimits() && limited
}
