package simulator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/internal/testserver/fakeenv"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

const (
	retryLater      = `{"operation_status": "failed", "recovery_policy": "retry_later"}`
	retryLaterDelay = `{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": 2500}`
	authenticate    = `{"operation_status": "failed", "recovery_policy": "authenticate"}`
	succRetry       = `{"operation_status": "succeeded", "recovery_policy": "retry_now"}`
)

// TestLiveTrajectories drives scripted answers through live replay on S01
// (unknown tool: preferred select_tool, non-harm {select_tool, stop}) in
// the fake environment, and checks every column of the outcome, the
// messages the model saw and what the decision records.
func TestLiveTrajectories(t *testing.T) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	s := &m.Corpus.Scenarios[0]
	p, err := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	transient := func(fails int) fakeenv.Spec { return fakeenv.Spec{Kind: fakeenv.Transient, Fails: fails} }
	committed := fakeenv.Spec{Kind: fakeenv.Committed}
	const c = fakeenv.CallMS
	live := func(o simulator.Outcome, recovered, harm bool, calls int, ms int64) simulator.Outcome {
		for c := range simulator.Columns {
			if simulator.Columns[c].Kind.Lab() {
				o.Values.Set(simulator.Col(c), 0)
			}
		}
		// The fake environment's only harm is a second write.
		o.Values = o.Values.WithFlag(simulator.Recovered, recovered).WithFlag(simulator.Harm, harm).WithFlag(simulator.HarmDuplicate, harm).
			With(simulator.Calls, int64(calls)).With(simulator.LabMS, ms)
		return o
	}
	for _, tc := range []struct {
		name    string
		spec    fakeenv.Spec
		answers []string
		want    simulator.Outcome
		settled bool // the environment settled the decision after the last turn
	}{
		// Start fails, replay 1 fails, replay 2 succeeds and settles it.
		{"transient retried until it succeeds", transient(2), []string{retryNow, retryNow},
			live(simulator.Outcome{Final: study.RetryNow, FinalStatus: study.Failed, Turns: 2, Replays: 2, Values: flagValues(simulator.Cover, simulator.Retry)}, true, false, 3, 3*c), true},
		{"transient, preferred at once", transient(1), []string{selectOK},
			live(simulator.Outcome{Final: study.SelectTool, FinalStatus: study.Failed, Turns: 1, Replays: 1, Values: flagValues(simulator.Strict, simulator.Proven, simulator.Cover)}, true, false, 2, 2*c), true},
		{"retry_later with the answer's delay", transient(1), []string{retryLaterDelay},
			live(simulator.Outcome{Final: study.RetryLater, FinalStatus: study.Failed, Turns: 1, Replays: 1, Values: flagValues(simulator.Cover)}, true, false, 2, 2*c+2500), true},
		{"retry_later with the default delay", transient(1), []string{retryLater},
			live(simulator.Outcome{Final: study.RetryLater, FinalStatus: study.Failed, Turns: 1, Replays: 1, Values: flagValues(simulator.Cover)}, true, false, 2, 2*c+simulator.DefaultRetryDelayMS), true},
		{"authenticate makes a credential call", transient(1), []string{authenticate},
			live(simulator.Outcome{Final: study.Authenticate, FinalStatus: study.Failed, Turns: 1, Replays: 1, Values: flagValues(simulator.Cover)}, true, false, 3, 3*c), true},
		{"stop at once", transient(1), []string{stopOK},
			live(simulator.Outcome{Final: study.StopOrEscalate, FinalStatus: study.Failed, Turns: 1, Values: flagValues()}, false, false, 1, c), false},
		{"invalid ends it", transient(1), []string{garbage},
			live(simulator.Outcome{Turns: 1, Values: flagValues(simulator.Invalid)}, false, false, 1, c), false},
		{"false success without recovery", transient(1), []string{succStop},
			live(simulator.Outcome{Final: study.StopOrEscalate, FinalStatus: study.Succeeded, Turns: 1, Values: flagValues(simulator.AnyFS, simulator.TerminalFS)}, false, false, 1, c), false},
		{"cap reached, the last answer is not executed", transient(10), []string{retryNow, retryNow, retryNow, retryNow},
			live(simulator.Outcome{Final: study.RetryNow, FinalStatus: study.Failed, Turns: 4, Replays: 3, Values: flagValues(simulator.Cover, simulator.Retry)}, false, false, 4, 4*c), false},
		{"committed, stopping keeps one write", committed, []string{stopOK},
			live(simulator.Outcome{Final: study.StopOrEscalate, FinalStatus: study.Failed, Turns: 1, Values: flagValues()}, true, false, 1, c), false},
		{"committed, a retry duplicates", committed, []string{retryNow},
			live(simulator.Outcome{Final: study.RetryNow, FinalStatus: study.Failed, Turns: 1, Replays: 1, Values: flagValues(simulator.Cover, simulator.Retry)}, false, true, 2, 2*c), true},
		// The claim is true: the write committed and is there once.
		{"committed, claiming success is not false", committed, []string{succStop},
			live(simulator.Outcome{Final: study.StopOrEscalate, FinalStatus: study.Succeeded, Turns: 1, Values: flagValues()}, true, false, 1, c), false},
		// The model sees the success and claims it; then retries once more.
		{"seen success, then a duplicate", fakeenv.Spec{Kind: fakeenv.Transient, Fails: 1, Continue: true}, []string{retryNow, succRetry, stopOK},
			live(simulator.Outcome{Final: study.StopOrEscalate, FinalStatus: study.Failed, Turns: 3, Replays: 2, Values: flagValues(simulator.Retry, simulator.AnyFS)}, false, true, 3, 3*c), false},
		{"seen success, then stop", fakeenv.Spec{Kind: fakeenv.Transient, Fails: 1, Continue: true}, []string{retryNow, succStop},
			live(simulator.Outcome{Final: study.StopOrEscalate, FinalStatus: study.Succeeded, Turns: 2, Replays: 1, Values: flagValues(simulator.Retry)}, true, false, 2, 2*c), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakeenv.New(m.Corpus.Scenarios, nil, tc.spec)
			sc := &script{answers: tc.answers, failAt: -1}
			key := simulator.Key{Model: "m", Prompt: "default", Condition: study.CodeOnly, Scenario: s.ID, Replicate: 2}
			d := simulator.Run(context.Background(), sc, p, s, key, simulator.Config{StudySeed: 7, ReplayCap: 3, Env: f})
			if d.Err != nil {
				t.Fatal(d.Err)
			}
			if d.Outcome != tc.want {
				t.Errorf("outcome\n got %+v\nwant %+v", d.Outcome, tc.want)
			}
			if !d.Live || d.Env == nil || d.Env.Recovered != tc.want.Values.Of(simulator.Recovered) || !wantCalls(tc.want, d.Env.Calls) {
				t.Fatalf("decision: live %v, env %+v", d.Live, d.Env)
			}
			var state struct{ Seed string }
			if err := json.Unmarshal(d.Env.State, &state); err != nil || state.Seed != strconv.FormatInt(simulator.EnvSeed(7, s.ID, 2), 10) {
				t.Errorf("state %s (%v): want the seed of (study seed 7, %s, replicate 2)", d.Env.State, err, s.ID)
			}
			if len(sc.calls) != tc.want.Turns || len(d.Turns) != tc.want.Turns {
				t.Fatalf("%d calls, %d turns; want %d", len(sc.calls), len(d.Turns), tc.want.Turns)
			}
			if !conditions.SameJSON(d.Turns[0].Observation, s.Observation) {
				t.Errorf("turn 0 observation %s, want the recorded failure", d.Turns[0].Observation)
			}
			last := d.Turns[len(d.Turns)-1]
			if (last.Result != nil) != tc.settled {
				t.Errorf("last turn's result %s; want one: %v", last.Result, tc.settled)
			}
			for i, req := range sc.calls {
				if len(req.Messages) != 2+2*i {
					t.Fatalf("turn %d: %d messages, want %d", i, len(req.Messages), 2+2*i)
				}
				if i == 0 {
					continue
				}
				// The replay message carries the observation of the turn,
				// annotated only when it is the recorded failure again.
				msg := req.Messages[len(req.Messages)-1].Content
				obs := d.Turns[i].Observation
				text, _ := conditions.Indent(obs)
				failed := conditions.SameJSON(obs, s.Observation)
				if !strings.HasPrefix(msg, "The agent carried out ") || !strings.Contains(msg, "(replay "+string(rune('0'+i))+")") ||
					!strings.Contains(msg, text) || strings.Contains(msg, "Error code: "+s.Code) != failed {
					t.Errorf("turn %d: message %q; want replay %d carrying %s (annotated: %v)", i, msg, i, obs, failed)
				}
				if i > 0 && d.Turns[i-1].Result != nil {
					t.Errorf("turn %d has a result but a turn followed", i-1)
				}
			}
		})
	}
}

// TestLivePairedEnvironments: paired conditions and models of a decision
// meet environments with the same seed, and so the same outcome for the
// same answers; another replicate gets another seed.
func TestLivePairedEnvironments(t *testing.T) {
	m, _ := manifests.LoadBuiltin(manifests.DefaultName)
	p, _ := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	s := &m.Corpus.Scenarios[3]
	f := fakeenv.New(m.Corpus.Scenarios, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 2})
	var states []string
	for _, key := range []simulator.Key{
		{Model: "a", Condition: study.Normalized, Scenario: s.ID, Replicate: 1},
		{Model: "b", Condition: study.Prose, Scenario: s.ID, Replicate: 1},
		{Model: "a", Condition: study.Normalized, Scenario: s.ID, Replicate: 2},
	} {
		d := simulator.Run(context.Background(), &script{answers: []string{retryNow}, failAt: -1}, p, s, key, simulator.Config{StudySeed: 3, ReplayCap: 3, Env: f})
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		states = append(states, string(d.Env.State))
	}
	if states[0] != states[1] || states[0] == states[2] {
		t.Errorf("states %q: want the first two equal (paired) and the third different (another replicate)", states)
	}
}

// TestLiveFailures: an environment failure, a transport failure and a
// prompt without the live template end the decision with an error that
// says which; a transport failure keeps its turns.
func TestLiveFailures(t *testing.T) {
	m, _ := manifests.LoadBuiltin(manifests.DefaultName)
	p, _ := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	s := &m.Corpus.Scenarios[0]
	key := simulator.Key{Scenario: s.ID, Replicate: 1, Condition: study.Normalized}
	broken := fakeenv.New(m.Corpus.Scenarios, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 1, Broken: true})
	d := simulator.Run(context.Background(), &script{answers: []string{retryNow}, failAt: -1}, p, s, key, simulator.Config{ReplayCap: 3, Env: broken})
	if _, isEnv := errors.AsType[*simulator.EnvError](d.Err); !isEnv || !strings.Contains(d.Err.Error(), "turn 0: environment of scenario S01: execute retry_now after turn 0: fakeenv: broken") ||
		len(d.Turns) != 1 || d.Turns[0].Err == nil || d.Turns[0].Reply.Text != retryNow {
		t.Errorf("broken environment: %v, turns %+v (want the environment's failure on turn 0, its answer kept)", d.Err, d.Turns)
	}
	// An environment that does not start: a turn 0 the model never saw
	// carries the failure, with the request it would have been sent.
	dead := fakeenv.New(m.Corpus.Scenarios, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 1, FailStart: true})
	sc := &script{answers: []string{retryNow}, failAt: -1}
	d = simulator.Run(context.Background(), sc, p, s, key, simulator.Config{StudySeed: 3, ReplayCap: 3, Env: dead})
	if _, isEnv := errors.AsType[*simulator.EnvError](d.Err); !isEnv || len(d.Turns) != 1 || d.Turns[0].Err == nil || d.Turns[0].Reply.Text != "" ||
		d.Turns[0].Request.Seed != simulator.Seed(3, s.ID, 1, 0) || len(d.Turns[0].Request.Messages) == 0 || len(sc.calls) != 0 {
		t.Errorf("an environment that does not start: %v, turns %+v, %d model calls", d.Err, d.Turns, len(sc.calls))
	}
	ok := fakeenv.New(m.Corpus.Scenarios, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 3})
	d = simulator.Run(context.Background(), &script{answers: []string{retryNow}, failAt: 1}, p, s, key, simulator.Config{ReplayCap: 3, Env: ok})
	if d.Err == nil || !strings.Contains(d.Err.Error(), "turn 1: connection refused") || len(d.Turns) != 2 || d.Env != nil || d.Turns[1].Observation == nil {
		t.Errorf("transport failure: %v, %d turns, env %v", d.Err, len(d.Turns), d.Env)
	}
	text := m.Prompts[0].Text
	old, _ := conditions.ParsePrompt("old", "old.tmpl", text[:strings.Index(text, `{{define "live"`)])
	if old.HasLive() {
		t.Fatal("the cut prompt still has live")
	}
	d = simulator.Run(context.Background(), &script{answers: []string{retryNow}, failAt: -1}, old, s, key, simulator.Config{ReplayCap: 3, Env: ok})
	if d.Err == nil || !strings.Contains(d.Err.Error(), `template "live" is not defined`) {
		t.Errorf("prompt without live: %v", d.Err)
	}
}

// TestFinalStateCompact: a final state the environment does not vouch for
// is compacted (and marked so for the call log), one that is not JSON
// fails the decision naming it.
func TestFinalStateCompact(t *testing.T) {
	m, _ := manifests.LoadBuiltin(manifests.DefaultName)
	p, _ := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	s := &m.Corpus.Scenarios[0]
	key := simulator.Key{Scenario: s.ID, Replicate: 1, Condition: study.Normalized}
	env := fakeenv.New(m.Corpus.Scenarios, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 1})
	run := func(state string) simulator.Decision {
		return simulator.Run(context.Background(), &script{answers: []string{retryNow, stopOK}, failAt: -1}, p, s, key,
			simulator.Config{ReplayCap: 3, Env: finalState{env, state}})
	}
	if d := run("{ \"a\" : [1, 2],\n \"b\": \"<x>\" }"); d.Err != nil || d.Env == nil || string(d.Env.State) != `{"a":[1,2],"b":"<x>"}` || !d.Env.Compact {
		t.Errorf("loose state: %v, env %+v", d.Err, d.Env)
	}
	if d := run(`{"a":`); d.Err == nil || !strings.Contains(d.Err.Error(), "the final state is not valid JSON") {
		t.Errorf("broken state: %v", d.Err)
	}
}

// finalState makes the environments of factory f end with the given state.
type finalState struct {
	f     simulator.EnvFactory
	state string
}

func (f finalState) NewEnv(ctx context.Context, scenario string, seed int64) (simulator.Environment, error) {
	e, err := f.f.NewEnv(ctx, scenario, seed)
	return withState{e, f.state}, err
}

// withState is an environment whose final state is replaced.
type withState struct {
	simulator.Environment
	state string
}

func (e withState) Final(ctx context.Context) (simulator.EnvOutcome, error) {
	o, err := e.Environment.Final(ctx)
	o.State = json.RawMessage(e.state)
	return o, err
}

// retryForever answers retry_now at once, whatever it is shown.
type retryForever struct{}

func (retryForever) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	return models.Reply{Text: retryNow}, nil
}

// BenchmarkReplay measures one decision of four turns and three replays
// (retry_now until the cap) under stored and live replay (the fake
// environment, whose fault outlasts the cap): the live overhead per
// executed call is (live − stored) / 3, reported by the live case as
// ns/executed over the whole decision and compared in docs/action-task.md.
func BenchmarkReplay(b *testing.B) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		b.Fatal(err)
	}
	p, err := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	if err != nil {
		b.Fatal(err)
	}
	s := &m.Corpus.Scenarios[6] // S07: invalid type, a long observation
	key := simulator.Key{Model: "m", Prompt: "default", Condition: study.CodeOnly, Scenario: s.ID, Replicate: 1}
	for _, tc := range []struct {
		name string
		env  simulator.EnvFactory
	}{{"stored", nil}, {"live", fakeenv.New(m.Corpus.Scenarios, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 10})}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := simulator.Config{StudySeed: 1, ReplayCap: 3, Env: tc.env}
			b.ReportAllocs()
			for b.Loop() {
				d := simulator.Run(context.Background(), retryForever{}, p, s, key, cfg)
				if d.Err != nil || d.Outcome.Replays != 3 {
					b.Fatal(d.Err, d.Outcome)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(3*b.N), "ns/executed")
		})
	}
}

// wantCalls reports whether outcome o counts calls tool calls.
func wantCalls(o simulator.Outcome, calls int) bool {
	v, ok := o.Values.Get(simulator.Calls)
	return ok && v == int64(calls)
}
