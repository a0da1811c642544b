package simulator_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

func TestParseAnswer(t *testing.T) {
	ok := func(s study.Status, p study.Policy) simulator.Answer {
		return simulator.Answer{Status: s, Policy: p, Valid: true}
	}
	badDelay := simulator.Answer{Status: study.Failed, Policy: study.RetryLater, Valid: true, DelayInvalid: true}
	for _, tc := range []struct {
		name string
		text string
		want simulator.Answer
	}{
		{"compact object", `{"operation_status": "failed", "recovery_policy": "select_tool"}`, ok(study.Failed, study.SelectTool)},
		{"whitespace around, members swapped", "  \n{\"recovery_policy\":\"retry_now\",\"operation_status\":\"succeeded\"}\n\t", ok(study.Succeeded, study.RetryNow)},
		{"json fence", "```json\n{\"operation_status\": \"failed\", \"recovery_policy\": \"authenticate\"}\n```", ok(study.Failed, study.Authenticate)},
		{"bare fence", "```\n{\"operation_status\": \"failed\", \"recovery_policy\": \"stop_or_escalate\"}\n```\n", ok(study.Failed, study.StopOrEscalate)},
		{"extra member", `{"operation_status": "failed", "recovery_policy": "retry_later", "reason": "busy"}`, ok(study.Failed, study.RetryLater)},
		{"delay_ms", `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": 2500}`, simulator.Answer{Status: study.Failed, Policy: study.RetryLater, Valid: true, DelayMS: 2500}},
		// A delay_ms that is not an integer from 0 to 24 h never makes the
		// label invalid; it is marked (task act refuses the retry).
		{"delay_ms a fraction", `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": 2.5}`, badDelay},
		{"delay_ms a string", `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": "2500"}`, badDelay},
		{"delay_ms -1", `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": -1}`, badDelay},
		{"delay_ms negative", `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": -5}`, badDelay},
		{"delay_ms 1e12", `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": 1e12}`, badDelay},
		{"delay_ms beyond int64", `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": 9.9e307}`, badDelay},
		{"delay_ms a year", `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": 31557600000000}`, badDelay},
		{"delay_ms a day and 1 ms", `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": 86400001}`, badDelay},
		{"delay_ms a day", `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": 86400000}`, simulator.Answer{Status: study.Failed, Policy: study.RetryLater, Valid: true, DelayMS: 86400000}},
		{"delay_ms 0", `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": 0}`, ok(study.Failed, study.RetryLater)},
		{"delay_ms null", `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": null}`, ok(study.Failed, study.RetryLater)},
		{"too large", strings.Repeat(" ", simulator.MaxAnswerBytes) + `{"operation_status": "failed", "recovery_policy": "retry_now"}`, simulator.Answer{Reason: simulator.ReasonTooLarge}},
		{"empty", "", simulator.Answer{Reason: simulator.ReasonEmpty}},
		{"blank", "   \n ", simulator.Answer{Reason: simulator.ReasonEmpty}},
		{"prose", "I would retry.", simulator.Answer{Reason: simulator.ReasonNotJSON}},
		{"trailing text", `{"operation_status": "failed", "recovery_policy": "select_tool"} because`, simulator.Answer{Reason: simulator.ReasonTrailing}},
		{"leading text", `Answer: {"operation_status": "failed", "recovery_policy": "select_tool"}`, simulator.Answer{Reason: simulator.ReasonNotJSON}},
		{"array", `["failed", "select_tool"]`, simulator.Answer{Reason: simulator.ReasonNotObject}},
		{"string", `"failed"`, simulator.Answer{Reason: simulator.ReasonNotObject}},
		{"status missing", `{"recovery_policy": "select_tool"}`, simulator.Answer{Policy: study.SelectTool, Reason: simulator.ReasonMissingStatus}},
		{"policy missing", `{"operation_status": "succeeded"}`, simulator.Answer{Status: study.Succeeded, Reason: simulator.ReasonMissingPolicy}},
		{"status upper case", `{"operation_status": "FAILED", "recovery_policy": "select_tool"}`, simulator.Answer{Policy: study.SelectTool, Reason: simulator.ReasonInvalidStatus}},
		{"policy outside the vocabulary", `{"operation_status": "succeeded", "recovery_policy": "reboot"}`, simulator.Answer{Status: study.Succeeded, Reason: simulator.ReasonInvalidPolicy}},
		{"policy not a string", `{"operation_status": "failed", "recovery_policy": 3}`, simulator.Answer{Status: study.Failed, Reason: simulator.ReasonInvalidPolicy}},
		{"unclosed fence", "```json\n{\"operation_status\": \"failed\", \"recovery_policy\": \"select_tool\"}", simulator.Answer{Reason: simulator.ReasonFence}},
		{"two fences", "```json\n{}\n```\n```\n{}\n```", simulator.Answer{Reason: simulator.ReasonFence}},
		{"fence language with a space", "```js on\n{}\n```", simulator.Answer{Reason: simulator.ReasonFence}},
		{"two objects", "{\"operation_status\": \"failed\", \"recovery_policy\": \"select_tool\"}\n{\"operation_status\": \"failed\", \"recovery_policy\": \"retry_now\"}", simulator.Answer{Reason: simulator.ReasonTrailing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := simulator.ParseAnswer(tc.text)
			if got != tc.want {
				t.Errorf("ParseAnswer(%q) = %+v, want %+v", tc.text, got, tc.want)
			}
		})
	}
}

func TestSeed(t *testing.T) {
	// Pinned values: changing the derivation would silently change every
	// replicate of every study, so it is a deliberate, versioned act.
	if got := simulator.Seed(20260819, "S01", 1, 0); got != pinnedSeed {
		t.Errorf("Seed(20260819, S01, 1, 0) = %d, want %d", got, pinnedSeed)
	}
	// The derivation as first written, with fmt.
	ref := func(seed uint64, sc string, rep, turn int) int64 {
		h := sha256.New()
		fmt.Fprintf(h, "stress-seed/v1\x00%d\x00%s\x00%d\x00%d", seed, sc, rep, turn)
		return int64(binary.BigEndian.Uint64(h.Sum(nil)[:8]) & 0x7fffffff)
	}
	for _, seed := range []uint64{0, 1, 20260819, 1<<64 - 1} {
		for _, sc := range []string{"", "S01", "X0000001", strings.Repeat("é", 100)} {
			if got, want := simulator.Seed(seed, sc, 50, 3), ref(seed, sc, 50, 3); got != want {
				t.Errorf("Seed(%d, %q, 50, 3) = %d, want %d", seed, sc, got, want)
			}
		}
	}
	seen := map[int64]string{}
	for _, sc := range []string{"S01", "S02"} {
		for rep := 1; rep <= 5; rep++ {
			for turn := 0; turn < 4; turn++ {
				s := simulator.Seed(20260819, sc, rep, turn)
				if s < 0 || s >= 1<<31 {
					t.Errorf("seed %d out of [0, 2^31)", s)
				}
				if prev, dup := seen[s]; dup {
					t.Errorf("seed collision %s and %s/%d/%d", prev, sc, rep, turn)
				}
				seen[s] = sc
				if s != simulator.Seed(20260819, sc, rep, turn) {
					t.Error("seed not stable")
				}
			}
		}
	}
	if simulator.Seed(1, "S01", 1, 0) == simulator.Seed(2, "S01", 1, 0) {
		t.Error("the study seed must change the seeds")
	}
}

// TestEnvSeed pins the environment seed: independent of the condition,
// the model and the turn, and apart from the sampling seeds.
func TestEnvSeed(t *testing.T) {
	if got := simulator.EnvSeed(20260819, "S01", 1); got != pinnedEnvSeed {
		t.Errorf("EnvSeed(20260819, S01, 1) = %d, want %d", got, pinnedEnvSeed)
	}
	if simulator.EnvSeed(20260819, "S01", 2) == pinnedEnvSeed || simulator.EnvSeed(20260819, "S02", 1) == pinnedEnvSeed || simulator.EnvSeed(1, "S01", 1) == pinnedEnvSeed {
		t.Error("the replicate, the scenario and the study seed must change the environment seed")
	}
}

// pinnedEnvSeed was computed independently with Python 3:
// int.from_bytes(hashlib.sha256(b"stress-env/v1\x0020260819\x00S01\x001").digest()[:8], "big") & (2**63 - 1)
const pinnedEnvSeed = 4830721647383651834

// pinnedSeed was computed independently with Python 3.11:
// int.from_bytes(hashlib.sha256(b"stress-seed/v1\x0020260819\x00S01\x001\x000").digest()[:8], "big") & 0x7fffffff
const pinnedSeed = 2079573320

// script answers turn t with answers[t] (the last one repeats).
type script struct {
	answers []string
	calls   []models.Request
	failAt  int // fail the call of this turn with a transport error; -1 never
}

func (s *script) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	t := len(s.calls)
	s.calls = append(s.calls, req)
	if t == s.failAt {
		return models.Reply{}, errors.New("connection refused")
	}
	return models.Reply{Text: s.answers[min(t, len(s.answers)-1)]}, nil
}

const (
	retryNow  = `{"operation_status": "failed", "recovery_policy": "retry_now"}`
	selectOK  = `{"operation_status": "failed", "recovery_policy": "select_tool"}`
	stopOK    = `{"operation_status": "failed", "recovery_policy": "stop_or_escalate"}`
	succeeded = `{"operation_status": "succeeded", "recovery_policy": "retry_now"}`
	succStop  = `{"operation_status": "succeeded", "recovery_policy": "stop_or_escalate"}`
	fenced    = "```json\n{\"operation_status\": \"failed\", \"recovery_policy\": \"select_tool\"}\n```"
	garbage   = "I think the tool is broken."
)

// TestTrajectories drives scripted answers through the simulator on S01
// (unknown tool: preferred select_tool, non-harm {select_tool, stop}) and
// checks every column of the outcome.
func TestTrajectories(t *testing.T) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	s := &m.Corpus.Scenarios[0]
	p, err := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		answers []string
		want    simulator.Outcome
	}{
		{"preferred at once", []string{selectOK}, simulator.Outcome{Final: study.SelectTool, FinalStatus: study.Failed, Turns: 1, Values: flagValues(simulator.Strict, simulator.Proven, simulator.Cover)}},
		{"stop", []string{stopOK}, simulator.Outcome{Final: study.StopOrEscalate, FinalStatus: study.Failed, Turns: 1, Values: flagValues()}},
		{"retry once then select", []string{retryNow, selectOK}, simulator.Outcome{Final: study.SelectTool, FinalStatus: study.Failed, Turns: 2, Replays: 1, Values: flagValues(simulator.Strict, simulator.Proven, simulator.Cover, simulator.Retry)}},
		{"retry three times then stop", []string{retryNow, retryNow, retryNow, stopOK}, simulator.Outcome{Final: study.StopOrEscalate, FinalStatus: study.Failed, Turns: 4, Replays: 3, Values: flagValues(simulator.Retry)}},
		{"retry four times", []string{retryNow, retryNow, retryNow, retryNow, selectOK}, simulator.Outcome{Final: study.RetryNow, FinalStatus: study.Failed, Turns: 4, Replays: 3, Values: flagValues(simulator.Cover, simulator.Retry)}},
		{"succeeded then stop", []string{succeeded, succStop}, simulator.Outcome{Final: study.StopOrEscalate, FinalStatus: study.Succeeded, Turns: 2, Replays: 1, Values: flagValues(simulator.Retry, simulator.AnyFS, simulator.TerminalFS)}},
		{"succeeded early only", []string{succeeded, selectOK}, simulator.Outcome{Final: study.SelectTool, FinalStatus: study.Failed, Turns: 2, Replays: 1, Values: flagValues(simulator.Strict, simulator.Proven, simulator.Cover, simulator.Retry, simulator.AnyFS)}},
		{"garbage", []string{garbage}, simulator.Outcome{Turns: 1, Values: flagValues(simulator.Invalid)}},
		{"retry then garbage", []string{retryNow, garbage}, simulator.Outcome{Turns: 2, Replays: 1, Values: flagValues(simulator.Invalid, simulator.Retry)}},
		{"fenced JSON", []string{fenced}, simulator.Outcome{Final: study.SelectTool, FinalStatus: study.Failed, Turns: 1, Values: flagValues(simulator.Strict, simulator.Proven, simulator.Cover)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &script{answers: tc.answers, failAt: -1}
			key := simulator.Key{Model: "m", Prompt: "default", Condition: study.CodeOnly, Scenario: s.ID, Replicate: 2}
			d := simulator.Run(context.Background(), sc, p, s, key, simulator.Config{StudySeed: 7, Temperature: 0.7, ReplayCap: 3})
			if d.Err != nil {
				t.Fatal(d.Err)
			}
			if d.Outcome != tc.want {
				t.Errorf("outcome\n got %+v\nwant %+v", d.Outcome, tc.want)
			}
			if len(sc.calls) != tc.want.Turns {
				t.Fatalf("%d calls, want %d", len(sc.calls), tc.want.Turns)
			}
			for i, req := range sc.calls {
				if req.Seed != simulator.Seed(7, s.ID, 2, i) || req.Temperature != 0.7 {
					t.Errorf("turn %d: seed %d temperature %v", i, req.Seed, req.Temperature)
				}
				// Turn i shows system, user, then (answer, replay) i times.
				if len(req.Messages) != 2+2*i {
					t.Fatalf("turn %d: %d messages, want %d", i, len(req.Messages), 2+2*i)
				}
				for j := 0; j < i; j++ {
					a, r := req.Messages[2+2*j], req.Messages[3+2*j]
					if a.Role != "assistant" || a.Content != tc.answers[j] {
						t.Errorf("turn %d: message %d = %+v, want the answer of turn %d", i, 2+2*j, a, j)
					}
					if r.Role != "user" || !strings.Contains(r.Content, "replay "+string(rune('1'+j))) || !strings.Contains(r.Content, "probe_missing_tool_7c2e") {
						t.Errorf("turn %d: message %d = %q, want replay %d of the same failure", i, 3+2*j, r.Content, j+1)
					}
				}
			}
		})
	}
}

func TestTransportErrorEndsDecision(t *testing.T) {
	m, _ := manifests.LoadBuiltin(manifests.DefaultName)
	p, _ := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	sc := &script{answers: []string{retryNow}, failAt: 1}
	d := simulator.Run(context.Background(), sc, p, &m.Corpus.Scenarios[0], simulator.Key{Scenario: "S01", Replicate: 1, Condition: study.Normalized}, simulator.Config{ReplayCap: 3})
	if d.Err == nil || !strings.Contains(d.Err.Error(), "turn 1: connection refused") || len(d.Turns) != 2 {
		t.Fatalf("err %v, %d turns; want a turn-1 transport error after 2 turns", d.Err, len(d.Turns))
	}
	if d.Outcome != (simulator.Outcome{}) {
		t.Errorf("an error decision has no outcome, got %+v", d.Outcome)
	}
}

func TestReplayCap(t *testing.T) {
	a := simulator.Answer{Valid: true, Status: study.Failed, Policy: study.RetryNow}
	for turn, want := range []bool{true, true, true, false, false} {
		if got := simulator.Continues(a, turn, 3); got != want {
			t.Errorf("Continues(retry_now, turn %d, cap 3) = %v, want %v", turn, got, want)
		}
	}
	if simulator.Continues(a, 0, 0) {
		t.Error("cap 0 must never replay")
	}
	if simulator.Continues(simulator.Answer{Policy: study.RetryNow}, 0, 3) {
		t.Error("an invalid answer must end the decision")
	}
}

func TestScoreRetryInNonHarm(t *testing.T) {
	a := []simulator.Answer{{Valid: true, Status: study.Failed, Policy: study.RetryNow}, {Valid: true, Status: study.Failed, Policy: study.RetryNow}}
	o := simulator.Score(simulator.Scoring{Answers: a, Preferred: study.RetryNow, NonHarm: []study.Policy{study.RetryNow, study.StopOrEscalate}})
	if o.Values.Of(simulator.Retry) || !o.Values.Of(simulator.Strict) || o.Replays != 1 {
		t.Errorf("retry_now in the non-harm set: got %+v, want no Retry flag, strict, 1 replay", o)
	}
}

// TestScoreProven: with the proven preferred set {retry_later, retry_now}
// and Strict's retry_later, a final retry_now is proven but not strict, a
// final select_tool neither, retry_later both; without a set (the paper
// corpus) Proven is Strict; and an invalid final answer is neither, even
// when its text names a proven policy.
func TestScoreProven(t *testing.T) {
	nonHarm := []study.Policy{study.RetryLater, study.RetryNow, study.StopOrEscalate}
	set := []study.Policy{study.RetryLater, study.RetryNow}
	answer := func(p study.Policy) []simulator.Answer {
		return []simulator.Answer{{Valid: true, Status: study.Failed, Policy: p}}
	}
	for _, tc := range []struct {
		name           string
		answers        []simulator.Answer
		set            []study.Policy
		strict, proven bool
	}{
		{"Strict's policy", answer(study.RetryLater), set, true, true},
		{"another proven policy", answer(study.RetryNow), set, false, true},
		{"a policy outside the set", answer(study.SelectTool), set, false, false},
		{"stop, in the non-harm set only", answer(study.StopOrEscalate), set, false, false},
		{"no set: Strict's policy", answer(study.RetryLater), nil, true, true},
		{"no set: another policy", answer(study.RetryNow), nil, false, false},
		{"invalid", []simulator.Answer{{Status: study.Failed, Policy: study.RetryNow, Reason: "x"}}, set, false, false},
		{"proven after a replay", append(answer(study.RetryNow), answer(study.RetryNow)...), set, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := simulator.Score(simulator.Scoring{Answers: tc.answers, Preferred: study.RetryLater, Proven: tc.set, NonHarm: nonHarm})
			if o.Values.Of(simulator.Strict) != tc.strict || o.Values.Of(simulator.Proven) != tc.proven {
				t.Errorf("strict %v proven %v, want %v %v", o.Values.Of(simulator.Strict), o.Values.Of(simulator.Proven), tc.strict, tc.proven)
			}
			if v, ok := o.Values.Get(simulator.Proven); !ok || v > 1 {
				t.Errorf("proven %d (has %v), want a 0/1 value on every decision", v, ok)
			}
		})
	}
}

// TestRunCreditsTheScenariosSet: Run scores Proven on the scenario's own
// proven preferred set (study.Scenario.PreferredSet).
func TestRunCreditsTheScenariosSet(t *testing.T) {
	m, _ := manifests.LoadBuiltin(manifests.DefaultName)
	p, _ := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	s := m.Corpus.Scenarios[0] // S01: select_tool
	s.PreferredSet = []study.Policy{study.SelectTool, study.StopOrEscalate}
	for _, tc := range []struct {
		name, answer string
		want         simulator.Values
	}{
		{"stop, in the set only", stopOK, flagValues(simulator.Proven)},
		{"Strict's policy", selectOK, flagValues(simulator.Strict, simulator.Proven, simulator.Cover)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := simulator.Run(context.Background(), &script{answers: []string{tc.answer}, failAt: -1}, p, &s,
				simulator.Key{Scenario: s.ID, Replicate: 1, Condition: study.Normalized}, simulator.Config{ReplayCap: 3})
			if d.Err != nil || d.Outcome.Values != tc.want {
				t.Errorf("%s: %+v (%v), want %+v", tc.answer, d.Outcome.Values, d.Err, tc.want)
			}
		})
	}
}

// flagValues is the outcome of a stored-replay decision with the Flag
// columns cols set and the others 0.
func flagValues(cols ...simulator.Col) simulator.Values {
	var v simulator.Values
	for c := range simulator.Columns {
		if simulator.Columns[c].Kind == simulator.Flag {
			v.Set(simulator.Col(c), 0)
		}
	}
	for _, c := range cols {
		v.Set(c, 1)
	}
	return v
}
