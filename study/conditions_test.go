package study

import (
	"slices"
	"testing"
)

// TestConditionVocabulary pins the 25 conditions, each once, and the
// parts of every error shape as its name gives them (the factorial cells,
// families and what each reveals are pinned with conditions.Table).
func TestConditionVocabulary(t *testing.T) {
	seen := map[Condition]bool{}
	for _, c := range AllConditions {
		if seen[c] || !c.Valid() {
			t.Errorf("%s repeated or invalid", c)
		}
		seen[c] = true
	}
	if len(AllConditions) != 25 || Condition("nope").Valid() {
		t.Errorf("%d conditions, want 25", len(AllConditions))
	}
	want := []Condition{SEP2145, ToolFailureShape, RateLimited, ToolFailureSEP2145, SEP2145RateLimited, ToolFailureGuidance, ToolFailureApplied}
	if !slices.Equal(ShapeConditions, want) {
		t.Errorf("ShapeConditions %v, want %v", ShapeConditions, want)
	}
	for _, c := range []Condition{Category, Normalized, Condition("sep2145+nope"), Condition("toolfailure+ratelimited")} {
		t.Run(string(c)+" is no shape", func(t *testing.T) {
			if c.Shape() {
				t.Errorf("%s is a shape (only a known condition whose every part is a proposal is)", c)
			}
		})
	}
	for _, tc := range []struct {
		c                                              Condition
		moves, classifies, guides, applied, rateLimits bool
	}{
		{c: SEP2145, moves: true},
		{c: ToolFailureShape, classifies: true},
		{c: RateLimited, rateLimits: true},
		{c: ToolFailureSEP2145, moves: true, classifies: true},
		{c: SEP2145RateLimited, moves: true, rateLimits: true},
		{c: ToolFailureGuidance, classifies: true, guides: true},
		{c: ToolFailureApplied, classifies: true, applied: true},
	} {
		t.Run(string(tc.c), func(t *testing.T) {
			c := tc.c
			if !c.Shape() || c.MovesToResult() != tc.moves || c.Classifies() != tc.classifies || c.Guides() != tc.guides ||
				c.MarksApplied() != tc.applied || c.RateLimits() != tc.rateLimits {
				t.Errorf("parts: moves %t, classifies %t, guides %t, applied %t, rate limits %t", c.MovesToResult(), c.Classifies(), c.Guides(), c.MarksApplied(), c.RateLimits())
			}
		})
	}
}
