package results_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/internal/testserver/fakeenv"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// answers replies with its answers in turn order (the last repeating).
type answers []string

func (a answers) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	return models.Reply{Text: a[min((len(req.Messages)-2)/2, len(a)-1)]}, nil
}

const (
	retryNow = `{"operation_status": "failed", "recovery_policy": "retry_now"}`
	stop     = `{"operation_status": "failed", "recovery_policy": "stop_or_escalate"}`
	succStop = `{"operation_status": "succeeded", "recovery_policy": "stop_or_escalate"}`
)

// runS01 runs model a on one decision of S01 of the default study
// (normalized, replicate 1; live in the fake environment when env is
// set) and returns it with its scenario.
func runS01(t *testing.T, a models.Model, env *fakeenv.Spec) (simulator.Decision, *study.Scenario) {
	t.Helper()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	s := &m.Corpus.Scenarios[0]
	key := simulator.Key{Model: "m", Prompt: "default", Condition: study.Normalized, Scenario: s.ID, Replicate: 1}
	cfg := simulator.Config{StudySeed: 1, ReplayCap: 3}
	if env != nil {
		cfg.Env = fakeenv.New(m.Corpus.Scenarios, nil, *env)
	}
	return simulator.Run(context.Background(), a, p, s, key, cfg), s
}

// liveLines runs one live decision on S01 and returns it with its call
// lines as calls.jsonl holds them.
func liveLines(t *testing.T, spec fakeenv.Spec, a answers) (simulator.Decision, []byte) {
	t.Helper()
	d, s := runS01(t, a, &spec)
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, c := range results.CallsOf(&d, s) {
		if err := enc.Encode(&c); err != nil {
			t.Fatal(err)
		}
	}
	return d, b.Bytes()
}

// kinds sets the kinds of harm r leaves nil to false, as a live row has
// them.
func kinds(r results.Row) results.Row {
	for _, c := range simulator.HarmColumns {
		if _, ok := r.Outcome.Get(c); !ok {
			r.Outcome.Set(c, 0)
		}
	}
	return r
}

// TestLiveRowFromLines: the call lines of a live decision record its
// replay mode, observations, result and environment outcome, and
// Group.Row scores them into the row the decision had as it ran, with
// every lab column; the decision is complete only with its outcome.
func TestLiveRowFromLines(t *testing.T) {
	transient := fakeenv.Spec{Kind: fakeenv.Transient, Fails: 2}
	for _, tc := range []struct {
		name string
		spec fakeenv.Spec
		a    answers
		want results.Row // the columns that matter
	}{
		{"settled by the environment", transient, answers{retryNow},
			kinds(results.Row{FinalLabel: "retry_now", FinalStatus: "failed", Turns: 2, Replays: 2, Outcome: simulator.Values{}.WithFlag(simulator.Cover, true).WithFlag(simulator.Retry, true).WithFlag(simulator.Recovered, true).WithFlag(simulator.Harm, false).WithFlag(simulator.InvalidAction, false).With(simulator.Calls, 3).With(simulator.LabMS, 120)})},
		{"stopped", transient, answers{retryNow, stop},
			kinds(results.Row{FinalLabel: "stop_or_escalate", FinalStatus: "failed", Turns: 2, Replays: 1, Outcome: simulator.Values{}.WithFlag(simulator.Retry, true).WithFlag(simulator.Recovered, false).WithFlag(simulator.Harm, false).WithFlag(simulator.InvalidAction, false).With(simulator.Calls, 2).With(simulator.LabMS, 80)})},
		{"duplicate, then a false claim", fakeenv.Spec{Kind: fakeenv.Committed, Continue: true}, answers{retryNow, succStop},
			kinds(results.Row{FinalLabel: "stop_or_escalate", FinalStatus: "succeeded", Turns: 2, Replays: 1, Outcome: simulator.Values{}.WithFlag(simulator.Retry, true).WithFlag(simulator.AnyFS, true).WithFlag(simulator.TerminalFS, true).WithFlag(simulator.Recovered, false).WithFlag(simulator.Harm, true).WithFlag(simulator.HarmDuplicate, true).WithFlag(simulator.InvalidAction, false).With(simulator.Calls, 2).With(simulator.LabMS, 80)})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, lines := liveLines(t, tc.spec, tc.a)
			var calls []results.Call
			cr := results.NewCallReader(bytes.NewReader(lines), "calls.jsonl")
			for cr.Scan() {
				if err := cr.LineErr(); err != nil {
					t.Fatal(err)
				}
				calls = append(calls, *cr.Call())
			}
			for i, c := range calls {
				last := i == len(calls)-1
				if c.Replay != manifests.ReplayLive || c.Observation == nil || (c.Env != nil) != last || (c.Result != nil && !last) {
					t.Errorf("line %d: replay %q, observation %s, result %s, env %+v", i, c.Replay, c.Observation, c.Result, c.Env)
				}
			}
			if l := calls[len(calls)-1]; int64(l.Env.Calls) != tc.want.Outcome.Value(simulator.Calls) || !json.Valid(l.Env.State) || !strings.Contains(string(l.Env.State), `"writes"`) {
				t.Errorf("last line's env %+v", l.Env)
			}
			var g results.Group
			if err := results.ParseGroup(lines, &g, nil); err != nil {
				t.Fatal(err)
			}
			if !g.Complete(3) {
				t.Error("a complete live decision is not Complete")
			}
			row, err := g.Row()
			if err != nil {
				t.Fatal(err)
			}
			ran := results.RowOf(&d)
			if row != ran {
				t.Errorf("row from lines %+v\ndiffers from the run's %+v", row, ran)
			}
			w := tc.want
			w.Model, w.Prompt, w.Condition, w.Scenario, w.Replicate, w.Server, w.Seed, w.Status = row.Model, row.Prompt, row.Condition, row.Scenario, row.Replicate, row.Server, row.Seed, results.StatusOK
			if row != w {
				b1, _ := json.Marshal(row)
				b2, _ := json.Marshal(w)
				t.Errorf("row %s\nwant %s", b1, b2)
			}
			// Without the last line's outcome the decision is unfinished.
			cut := bytes.Replace(lines, []byte(`,"env":{`), []byte(`,"xenv":{`), 1)
			if err := results.ParseGroup(cut, &g, nil); err != nil {
				t.Fatal(err)
			}
			if g.Complete(3) {
				t.Error("a live decision without its outcome is Complete")
			}
			if _, err := g.Row(); err == nil || !strings.Contains(err.Error(), "lacks the environment's outcome") {
				t.Errorf("row without outcome: %v", err)
			}
		})
	}
}

// TestLiveRowRejects: broken live trajectories are located errors.
func TestLiveRowRejects(t *testing.T) {
	_, two := liveLines(t, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 3}, answers{retryNow, stop})
	lines := strings.SplitAfter(string(two), "\n")[:2]
	for _, tc := range []struct {
		name, text, want string
	}{
		{"stop followed by a call", strings.Replace(lines[0], `"response":"{\"operation_status\": \"failed\", \"recovery_policy\": \"retry_now\"}","response_sha256":"`, `"response":"{\"operation_status\": \"failed\", \"recovery_policy\": \"stop_or_escalate\"}","response_sha256":"`, 1) + lines[1],
			"but a call followed"},
		{"mixed modes", strings.Replace(lines[0], `"replay":"live",`, "", 1) + lines[1], `turn 0 has replay "" but turn 1 has "live"`},
		{"unknown mode", strings.ReplaceAll(lines[0]+lines[1], `"replay":"live"`, `"replay":"later"`), `unknown replay "later"`},
		{"outcome before the end", strings.Replace(lines[0], `"replay":"live",`, `"replay":"live","env":{"calls":1},`, 1) + lines[1], "is not the last turn"},
		{"result of a stop", lines[0] + strings.Replace(lines[1], `"replay":"live",`, `"replay":"live","result":{},`, 1), "carries the result of an executed policy"},
		{"stored with an outcome", strings.Replace(strings.Replace(lines[1], `"replay":"live",`, "", 1), `"turn":1`, `"turn":0`, 1), "a stored-replay decision carries a live environment's outcome"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g results.Group
			text := tc.text
			// Keep the response hashes right after an edit of a response.
			var fixed []string
			for _, l := range strings.SplitAfter(text, "\n") {
				if l == "" {
					continue
				}
				var v map[string]any
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Fatal(err)
				}
				v["response_sha256"] = results.SHA256([]byte(v["response"].(string)))
				b, _ := json.Marshal(v)
				fixed = append(fixed, string(b)+"\n")
			}
			if err := results.ParseGroup([]byte(strings.Join(fixed, "")), &g, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := g.Row(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestLiveParquet: the lab columns are nullable: a stored row reads back
// with them null, a live row with its values.
func TestLiveParquet(t *testing.T) {
	file := filepath.Join(t.TempDir(), results.DecisionsFile)
	w, err := results.CreateRows(file)
	if err != nil {
		t.Fatal(err)
	}
	stored := results.Row{Model: "m", Scenario: "S01", Status: results.StatusOK, Outcome: simulator.Values{}.WithFlag(simulator.Strict, true)}
	live := results.Row{Model: "m", Scenario: "S02", Status: results.StatusOK, Outcome: simulator.Values{}.WithFlag(simulator.Recovered, false).WithFlag(simulator.Harm, true).WithFlag(simulator.HarmDuplicate, true).WithFlag(simulator.HarmWrongValue, false).WithFlag(simulator.HarmCollateral, true).WithFlag(simulator.HarmDataLoss, false).WithFlag(simulator.HarmIncomplete, false).WithFlag(simulator.InvalidAction, false).With(simulator.Calls, 4).With(simulator.LabMS, 0)}
	for _, r := range []results.Row{stored, live} {
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := results.ReadRows(file)
	if err != nil || len(rows) != 2 {
		t.Fatal(rows, err)
	}
	if rows[0] != stored || rows[0].Lab() || rows[1] != live || !rows[1].Lab() {
		t.Errorf("read back %+v %+v", rows[0], rows[1])
	}
}

// TestActRowFromLines: the call lines of an act decision record the task
// and each action (sent, or refused with its reason), and Group.Row
// scores them into the run's row, invalid_action included; lines that
// contradict the rules are refused.
func TestActRowFromLines(t *testing.T) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := fs.ReadFile(manifests.Builtin, "prompts/act.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt("act", "act.tmpl", string(raw))
	if err != nil {
		t.Fatal(err)
	}
	s := &m.Corpus.Scenarios[0]
	for _, tc := range []struct {
		name    string
		a       answers
		invalid bool
		turns   int
	}{
		{"revised, then retried", answers{`{"operation_status":"failed","recovery_policy":"revise_arguments","tool":"write","arguments":{"n":2}}`, retryNow}, false, 2},
		{"refused", answers{`{"operation_status":"failed","recovery_policy":"revise_arguments","tool":"write","arguments":{"n":"x"}}`}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := simulator.Key{Model: "m", Prompt: "act", Condition: study.Normalized, Scenario: s.ID, Replicate: 1}
			d := simulator.Run(context.Background(), tc.a, p, s, key, simulator.Config{StudySeed: 1, ReplayCap: 3, Task: simulator.Act,
				Env: fakeenv.New(m.Corpus.Scenarios, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 2})})
			if d.Err != nil {
				t.Fatal(d.Err)
			}
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			for _, c := range results.CallsOf(&d, s) {
				if c.Task != manifests.TaskAct || c.Action == nil {
					t.Errorf("turn %d: task %q action %+v", c.Turn, c.Task, c.Action)
				}
				enc.Encode(&c)
			}
			var g results.Group
			if err := results.ParseGroup(b.Bytes(), &g, nil); err != nil {
				t.Fatal(err)
			}
			row, err := g.Row()
			if err != nil {
				t.Fatal(err)
			}
			ran := results.RowOf(&d)
			if row != ran || !hasInvalidAction(row, tc.invalid) || int(row.Turns) != tc.turns {
				t.Errorf("row from lines %+v\nrun's %+v", row, ran)
			}
			// A refused call recorded as sent, or a sent call recorded as
			// refused before a later turn, breaks the rules.
			bad := bytes.Replace(b.Bytes(), []byte(`"sent":true`), []byte(`"sent":false`), 1)
			if !tc.invalid {
				if err := results.ParseGroup(bad, &g, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := g.Row(); err == nil {
					t.Error("a turn followed by a result without a sent call was scored")
				}
			}
			bad = bytes.ReplaceAll(b.Bytes(), []byte(`,"task":"act"`), nil)
			if err := results.ParseGroup(bad, &g, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := g.Row(); err == nil || !strings.Contains(err.Error(), "carries an action") {
				t.Errorf("lines without the task: %v", err)
			}
		})
	}
}

// hasInvalidAction reports whether row r has the invalid_action column,
// with value want.
func hasInvalidAction(r results.Row, want bool) bool {
	v, ok := r.Outcome.Get(simulator.InvalidAction)
	return ok && (v != 0) == want
}
