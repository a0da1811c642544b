package runner_test

import (
	"testing"

	_ "github.com/mcpstress/stress/models/baseline"
	_ "github.com/mcpstress/stress/models/failclosed"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// conditionsWant is the pinned cell of a model under a condition in
// manifests/conditions.yaml: Strict, Cover, Retry and Extra (every other
// count is 0, N is 105).
type conditionsWant struct{ strict, cover, retry, extra int }

// wantConditions gives the pinned cells of manifests/conditions.yaml;
// a (model, condition) not listed is all zeros (a stop on every decision).
//
//   - always_stop stops everywhere.
//   - code_registry reads the code, which every factorial cell and every
//     envelope (the lies keep the record's code) shows: 105/105 strict;
//     the category results carry no code.
//   - explicit_policy follows a label in a JSON "policy" member: the JSON
//     label cells and the envelope (105 strict); not a paraphrase or a
//     sentence; it follows both envelope lies: retry_now on the replay lie
//     (105 Retry, 3 replays each), the target's policy on the target lie
//     (105 Cover, 0 Strict).
//   - the fail-closed client in either mode follows only the truthful
//     envelope (105) and the category result with both channels (55: the
//     11 failures whose cause has a category); it stops on every
//     single-channel and misplaced-trust input and on the factorial cells,
//     which carry no contract.
var wantConditions = map[string]map[study.Condition]conditionsWant{
	"code_registry": {
		study.Structured: {105, 105, 0, 0}, study.StructuredParaphrase: {105, 105, 0, 0}, study.SentenceLabel: {105, 105, 0, 0}, study.SentenceParaphrase: {105, 105, 0, 0},
		study.StructuredFailed: {105, 105, 0, 0}, study.StructuredParaphraseFailed: {105, 105, 0, 0}, study.SentenceLabelFailed: {105, 105, 0, 0}, study.SentenceParaphraseFailed: {105, 105, 0, 0},
		study.Envelope: {105, 105, 0, 0}, study.EnvelopeFalseReplay: {105, 105, 0, 0}, study.EnvelopeFalseTarget: {105, 105, 0, 0},
	},
	"explicit_policy": {
		study.Structured: {105, 105, 0, 0}, study.StructuredFailed: {105, 105, 0, 0},
		study.Envelope: {105, 105, 0, 0}, study.EnvelopeFalseReplay: {0, 105, 105, 315}, study.EnvelopeFalseTarget: {0, 105, 0, 0},
	},
	"fail_closed_registry":        {study.Envelope: {105, 105, 0, 0}, study.Category: {55, 55, 0, 0}},
	"fail_closed_explicit_action": {study.Envelope: {105, 105, 0, 0}, study.Category: {55, 55, 0, 0}},
}

// TestConditionsStudy runs the shipped manifests/conditions.yaml end to
// end and pins every one of its 75 cells (wantConditions).
func TestConditionsStudy(t *testing.T) {
	dir, sum, m := runManifest(t, "conditions.yaml")
	if len(m.Conditions) != 15 {
		t.Fatalf("conditions.yaml has %d conditions, want 15", len(m.Conditions))
	}
	if sum.Decisions != 7875 || sum.Calls != 7875+315 || sum.Errors != 0 || len(sum.Cells) != 75 {
		t.Fatalf("summary: %d decisions, %d calls, %d errors, %d cells; want 7875, 8190, 0, 75", sum.Decisions, sum.Calls, sum.Errors, len(sum.Cells))
	}
	seen := map[string]bool{}
	for _, c := range sum.Cells {
		seen[c.Model+"/"+string(c.Condition)] = true
		w := wantConditions[c.Model][c.Condition]
		if c.N != 105 || c.Count(simulator.Strict) != w.strict || c.Count(simulator.Cover) != w.cover || c.Count(simulator.Retry) != w.retry || c.Extra != w.extra ||
			c.Count(simulator.Invalid) != 0 || c.Count(simulator.AnyFS) != 0 || c.Count(simulator.TerminalFS) != 0 || c.Errors != 0 {
			t.Errorf("%s/%s: %+v; want N 105, strict %d, cover %d, retry %d, extra %d, all else 0", c.Model, c.Condition, c, w.strict, w.cover, w.retry, w.extra)
		}
	}
	for _, model := range []string{"always_stop", "code_registry", "explicit_policy", "fail_closed_registry", "fail_closed_explicit_action"} {
		for _, c := range m.Conditions {
			if !seen[model+"/"+string(c)] {
				t.Errorf("no cell for %s/%s", model, c)
			}
		}
	}
	checkBundle(t, dir, sum)
}
