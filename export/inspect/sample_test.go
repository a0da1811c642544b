package inspect

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// testSampler returns a sampler whose request messages are a system
// prompt (ref sys) and the failure the model saw (ref obs).
func testSampler() *sampler {
	return &sampler{
		msgs: map[string]*message{
			"sys": encodeMessage("sys", "system", "You choose a recovery policy after a tool failure. "+strings.Repeat("Answer in JSON. ", 10)),
			"obs": encodeMessage("obs", "user", "The tool create_issue failed: HTTP 503 Service Unavailable, Retry-After 2."),
		},
		att: map[string][]byte{}, summaries: true, model: "echohttp/m", started: timestamp(time.Unix(0, 0)),
	}
}

// testDecision returns a stored-replay decision of two turns (retry_now,
// replayed, then retry_later), counted, or failed at its second turn
// when failed.
func testDecision(failed bool) *decision {
	req := []string{"sys", "obs"}
	call := func(turn int, response string) results.Call {
		return results.Call{Key: simulator.Key{Model: "m", Prompt: "p", Condition: "normalized", Scenario: "X01", Replicate: 1}, Turn: turn,
			Preferred: study.RetryLater, PreferredSet: []study.Policy{study.RetryLater, study.RetryNow}, NonHarm: []study.Policy{study.RetryLater, study.StopOrEscalate},
			Response: response}
	}
	d := &decision{calls: []results.Call{
		call(0, `{"operation_status":"failed","recovery_policy":"retry_now"}`),
		call(1, `{"operation_status":"failed","recovery_policy":"retry_later"}`),
	}, refs: [][]string{req, req}}
	row := results.Row{Model: "m", Prompt: "p", Condition: "normalized", Scenario: "X01", Replicate: 1, Status: results.StatusOK,
		FinalLabel: "retry_later", FinalStatus: "failed", Turns: 2, Replays: 1}
	for c, v := range map[simulator.Col]int64{simulator.Strict: 1, simulator.Proven: 1, simulator.Cover: 1, simulator.Retry: 1} {
		row.Outcome.Set(c, v)
	}
	if failed {
		d.calls[1].Response, d.calls[1].Error = "", "HTTP 500"
		row = results.Row{Model: "m", Prompt: "p", Condition: "normalized", Scenario: "X01", Replicate: 1, Status: "error", Turns: 2, Error: "turn 1: HTTP 500"}
	}
	d.row = &row
	return d
}

// writeSample writes d's sample and summary and decodes both.
func writeSample(t *testing.T, d *decision) (sample, summary map[string]json.RawMessage) {
	t.Helper()
	s := testSampler()
	if err := s.write(d); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(s.b, &sample); err != nil {
		t.Fatalf("sample: %v\n%s", err, s.b)
	}
	if err := json.Unmarshal(s.sum, &summary); err != nil {
		t.Fatalf("summary: %v\n%s", err, s.sum)
	}
	return sample, summary
}

// TestErrorSampleScoresNull: an error decision's sample and summary have
// scores null (Inspect's viewer does not open a log whose sample lacks
// the member), and its error.
func TestErrorSampleScoresNull(t *testing.T) {
	sample, summary := writeSample(t, testDecision(true))
	for name, v := range map[string]map[string]json.RawMessage{"sample": sample, "summary": summary} {
		t.Run(name, func(t *testing.T) {
			if sc, ok := v["scores"]; !ok || string(sc) != "null" {
				t.Errorf("%s: scores %s (present %v), want null", name, sc, ok)
			}
			if v["error"] == nil {
				t.Errorf("%s: no error", name)
			}
		})
	}
}

// TestSampleInput: a sample's (and its summary's) input starts with the
// failure the model saw, not the system prompt, which is the first of
// its messages.
func TestSampleInput(t *testing.T) {
	sample, summary := writeSample(t, testDecision(false))
	type msg struct{ Role, Content string }
	for name, v := range map[string]map[string]json.RawMessage{"sample": sample, "summary": summary} {
		t.Run(name, func(t *testing.T) {
			var input []msg
			json.Unmarshal(v["input"], &input)
			if len(input) != 1 || input[0].Role != "user" || !strings.HasPrefix(input[0].Content, "The tool create_issue failed") {
				t.Errorf("%s: input %+v, want the user message only", name, input)
			}
		})
	}
	var messages []msg
	json.Unmarshal(sample["messages"], &messages)
	if len(messages) == 0 || messages[0].Role != "system" {
		t.Errorf("messages %+v, want the system prompt first", messages)
	}
}

// TestScoreExplanations: each score says the rule that set it and the
// values of the decision it read.
func TestScoreExplanations(t *testing.T) {
	sample, summary := writeSample(t, testDecision(false))
	want := map[string]string{
		"strict":   "final label is the preferred policy (final label retry_later; preferred retry_later)",
		"proven":   "final label is one of the execution-proven preferred policies (final label retry_later; proven set [retry_later retry_now])",
		"cover":    "final label valid and not stop_or_escalate (final label retry_later)",
		"retry":    "chose retry_now while it is outside the non-harm set (labels [retry_now retry_later]; retry_now outside the non-harm set [retry_later stop_or_escalate])",
		"invalid":  "final answer invalid (final label retry_later)",
		"any_fs":   "claimed succeeded at any turn (live: and did not recover) (statuses [failed failed])",
		ExtraScore: extraDoc + " (replays 1)",
	}
	for name, v := range map[string]map[string]json.RawMessage{"sample": sample, "summary": summary} {
		t.Run(name, func(t *testing.T) {
			var scores map[string]struct {
				Value       float64
				Explanation *string
			}
			if err := json.Unmarshal(v["scores"], &scores); err != nil || len(scores) == 0 {
				t.Fatalf("%s: scores %s: %v", name, v["scores"], err)
			}
			for sc, got := range scores {
				if got.Explanation == nil || *got.Explanation == "" {
					t.Errorf("%s: score %s has no explanation", name, sc)
				} else if w, ok := want[sc]; ok && *got.Explanation != w {
					t.Errorf("%s: score %s explained %q, want %q", name, sc, *got.Explanation, w)
				}
			}
		})
	}
	// An invalid final answer says why.
	d := testDecision(false)
	d.calls[1].Response, d.row.FinalLabel, d.row.FinalStatus = "retry later", "", ""
	sample, _ = writeSample(t, d)
	var scores map[string]struct{ Explanation string }
	json.Unmarshal(sample["scores"], &scores)
	if got := scores["strict"].Explanation; !strings.Contains(got, "final label none (invalid: ") {
		t.Errorf("strict of an invalid answer explained %q", got)
	}
}

// TestToolEventEvents: a tool event carries events (empty), which
// Inspect's viewer types require.
func TestToolEventEvents(t *testing.T) {
	sample, _ := writeSample(t, testDecision(false))
	var events []map[string]json.RawMessage
	json.Unmarshal(sample["events"], &events)
	tools := 0
	for _, ev := range events {
		if string(ev["event"]) == `"tool"` {
			tools++
			if string(ev["events"]) != "[]" {
				t.Errorf("tool event events %s, want []", ev["events"])
			}
		}
	}
	if tools != 1 {
		t.Errorf("%d tool events, want the replay", tools)
	}
}

// TestPlanParamsPassed: the plan's step has params_passed, the
// parameters the manifest passed.
func TestPlanParamsPassed(t *testing.T) {
	e := &exporter{info: &analysis.BundleInfo{Record: &results.Record{Manifest: manifests.Manifest{Name: "s", Replay: "live", Replicates: 1}, ReplayCap: 3}}}
	b, err := json.Marshal(e.header(&logFile{key: cellKey{"m", "p", "c"}}, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Plan struct {
			Steps []map[string]json.RawMessage
		}
	}
	json.Unmarshal(b, &h)
	if len(h.Plan.Steps) != 1 || string(h.Plan.Steps[0]["params_passed"]) != `{"replay":"live","replay_cap":3}` {
		t.Errorf("plan steps %v", h.Plan.Steps)
	}
}

// TestAppendPolicyList: a list of policies is written as encoding/json
// writes it, plain labels or not.
func TestAppendPolicyList(t *testing.T) {
	for _, tc := range []struct {
		name string
		ps   []study.Policy
	}{
		{"nil list is null", nil},
		{"empty list", []study.Policy{}},
		{"one plain label", []study.Policy{"select_tool"}},
		{"two plain labels", []study.Policy{"select_tool", "stop_or_escalate"}},
		{"labels that need escaping", []study.Policy{"a<b", "x\"y"}},
		{"non-ASCII and empty labels", []study.Policy{"Ünicode", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, _ := json.Marshal(tc.ps)
			if got := appendPolicyList(nil, tc.ps); string(got) != string(want) {
				t.Errorf("%q: got %s, want %s", tc.ps, got, want)
			}
		})
	}
}
