package study

import "testing"

// TestConditionVocabulary pins the 22 conditions, each once, and the cell
// of every factorial condition.
func TestConditionVocabulary(t *testing.T) {
	seen := map[Condition]bool{}
	for _, c := range AllConditions {
		if seen[c] || !c.Valid() {
			t.Errorf("%s repeated or invalid", c)
		}
		seen[c] = true
	}
	for _, c := range append(append(append([]Condition{}, FactorialConditions...), ChannelConditions...), append(TrustConditions, ShapeConditions...)...) {
		if !seen[c] {
			t.Errorf("%s is not in AllConditions", c)
		}
	}
	if len(AllConditions) != 25 || Condition("nope").Valid() {
		t.Errorf("%d conditions, want 25", len(AllConditions))
	}
	j, s, l, p := JSONFormat, SentenceFormat, LabelWording, ParaphraseWording
	for c, want := range map[Condition]Cell{
		Structured: {j, l, false}, StructuredParaphrase: {j, p, false}, SentenceLabel: {s, l, false}, SentenceParaphrase: {s, p, false},
		StructuredFailed: {j, l, true}, StructuredParaphraseFailed: {j, p, true}, SentenceLabelFailed: {s, l, true}, SentenceParaphraseFailed: {s, p, true},
	} {
		if got, ok := c.Cell(); !ok || got != want || FactorialCondition(want) != c {
			t.Errorf("%s: cell %+v (%t), want %+v", c, got, ok, want)
		}
	}
	for _, c := range []Condition{Prose, Envelope, Category, CategoryText, EnvelopeFalseReplay} {
		if _, ok := c.Cell(); ok {
			t.Errorf("%s has a cell", c)
		}
	}
	if !Envelope.RevealsPolicy() || Category.RevealsPolicy() || EnvelopeFalseTarget.RevealsPolicy() || !SentenceParaphraseFailed.RevealsPolicy() ||
		ToolFailureSEP2145.RevealsPolicy() || RateLimited.RevealsPolicy() {
		t.Error("RevealsPolicy")
	}
	for _, c := range ShapeConditions {
		if !c.Shape() || c.Paired() {
			t.Errorf("%s: Shape %t, Paired %t", c, c.Shape(), c.Paired())
		}
	}
	if !SEP2145.MovesToResult() || ToolFailureShape.MovesToResult() || !ToolFailureSEP2145.Classifies() || SEP2145.Classifies() || Category.Shape() {
		t.Error("MovesToResult, Classifies or Shape")
	}
}
