// Package labenv adapts the recovery lab (package lab) to the simulator:
// it implements simulator.EnvFactory and simulator.Actor over an
// in-process lab, made fresh and seeded for every decision, so that live
// replay executes each policy against real state and reads the outcome
// from it. It registers the lab as environment "lab" (package env): a
// manifest with replay: live and environment: lab runs the default set,
// once its corpus is checked against it (ForCorpus).
//
// Without the registry, Factory makes the environments of a set:
//
//	f, err := labenv.Factory("core") // "" for lab.DefaultSet
//	e, err := f.NewEnv(ctx, "X04", seed)
//
// Each executed call goes straight to lab.Lab.Call, the handler the MCP
// server runs, without a transport; the observation is the one a Go SDK
// client would normalize (lab.Observe), which the lab's tests check
// against a real SDK client over an in-memory transport, stdio and
// streamable HTTP.
package labenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpstress/stress/env"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// Name is the lab's name in the environment registry, the value of a
// manifest's environment field.
const Name = "lab"

func init() {
	env.Register(Name, env.Backend{Factory: open, Actor: actor})
}

// open makes the environments of a study of m: the default set's, after
// checking m's corpus against it (ForCorpus).
func open(m *manifests.Resolved, _ env.Options) (simulator.EnvFactory, error) {
	if m.ExternalServer != "" {
		return nil, fmt.Errorf("manifest %s: field external_server: environment %q runs the lab in process and connects to no server", m.Source, Name)
	}
	f, err := ForCorpus(lab.DefaultSet, m.Corpus.Scenarios)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: field environment: %q runs the recovery lab, and its corpus %s does not fit it:\n%w", m.Source, Name, m.Manifest.Corpus, err)
	}
	return f, nil
}

// actor returns the environment of scenario id of the default set, seed
// 0, for the action task outside a study.
func actor(id string, _ env.Options) (simulator.Actor, error) {
	set, err := lab.BuiltinSet("")
	if err != nil {
		return nil, err
	}
	sc, ok := set.Scenario(id)
	if !ok {
		return nil, fmt.Errorf("lab set %s has no scenario %q", set.Name, id)
	}
	return New(sc, 0), nil
}

// Factory returns the environment factory of the embedded scenario set
// named set ("" for lab.DefaultSet): NewEnv(ctx, id, seed) arms scenario
// id on a fresh lab with that seed and a virtual clock.
func Factory(set string) (simulator.EnvFactory, error) {
	s, err := lab.BuiltinSet(set)
	if err != nil {
		return nil, err
	}
	return &factory{set: s}, nil
}

// Scenarios returns the ids of the default set's scenarios, in file order,
// for cross-checking against a lab corpus.
func Scenarios() []string {
	s, err := lab.BuiltinSet("")
	if err != nil {
		panic("labenv: the embedded scenario set does not load: " + err.Error()) // a test proves it does
	}
	return s.IDs()
}

// ForCorpus returns the environment factory of the embedded scenario set
// named set for a study of corpus, after checking that every record has a
// scenario of the same id in the set that agrees with it on server,
// cause, surface, preferred policy, proven preferred set (the set
// Proven credits) and non-harm set (the record is what
// the model is shown at turn 0; the scenario is what executes). Errors
// name the record and the field.
func ForCorpus(set string, corpus []study.Scenario) (simulator.EnvFactory, error) {
	s, err := lab.BuiltinSet(set)
	if err != nil {
		return nil, err
	}
	var errs []error
	var missing []string
	for i := range corpus {
		r := &corpus[i]
		sc, ok := s.Scenario(r.ID)
		if !ok {
			missing = append(missing, r.ID)
			continue
		}
		bad := func(field string, rec, lab any) {
			errs = append(errs, fmt.Errorf("record %s: field %s is %v, but lab scenario %s has %v", r.ID, field, rec, sc.ID, lab))
		}
		if r.Server != sc.Server {
			bad("server", r.Server, sc.Server)
		}
		if r.Cause != sc.Class {
			bad("cause", r.Cause, sc.Class)
		}
		if r.Surface != sc.Surface {
			bad("surface", r.Surface, sc.Surface)
		}
		if r.Preferred != sc.Preferred {
			bad("preferred_policy", r.Preferred, sc.Preferred)
		}
		if !slices.Equal(r.ProvenSet(), sc.PreferredSet) {
			bad("preferred_policies", r.ProvenSet(), sc.PreferredSet)
		}
		if !slices.Equal(r.NonHarm, sc.NonHarm) {
			bad("non_harm", r.NonHarm, sc.NonHarm)
		}
	}
	if len(missing) > 0 {
		const most = 5
		list := strings.Join(missing[:min(most, len(missing))], ", ")
		if len(missing) > most {
			list += fmt.Sprintf(" and %d more", len(missing)-most)
		}
		errs = append([]error{fmt.Errorf("record %s: not a scenario of lab set %s (a live study runs only lab records, such as corpus/lab)", list, s.Name)}, errs...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &factory{set: s}, nil
}

type factory struct{ set *lab.Set }

var _ simulator.ShapedEnvFactory = (*factory)(nil)

// NewEnv makes the environment of one decision.
func (f *factory) NewEnv(ctx context.Context, scenario string, seed int64) (simulator.Environment, error) {
	return f.NewShapedEnv(ctx, scenario, seed, "")
}

// NewShapedEnv makes the environment of one decision whose condition is
// an error shape: the lab serves every failure in that shape ("" for
// none).
func (f *factory) NewShapedEnv(ctx context.Context, scenario string, seed int64, shape study.Condition) (simulator.Environment, error) {
	sc, ok := f.set.Scenario(scenario)
	if !ok {
		return nil, fmt.Errorf("lab set %s has no scenario %q", f.set.Name, scenario)
	}
	return &Env{lab: lab.New(sc, lab.Options{Seed: seed, Shape: shape})}, nil
}

// Env is the environment of one decision: a lab with its scenario armed.
type Env struct {
	lab       *lab.Lab
	started   bool
	announced time.Duration // the retry-after the last observation announced
}

var _ simulator.Environment = (*Env)(nil)

// New returns the environment of scenario sc (from a loaded set) with a
// fresh lab seeded by seed, on a virtual clock.
func New(sc *lab.Scenario, seed int64) *Env {
	return &Env{lab: lab.New(sc, lab.Options{Seed: seed})}
}

// Lab returns the environment's lab.
func (e *Env) Lab() *lab.Lab { return e.lab }

// Start makes the scenario's first call and returns its observation. A
// timeout lets the client's deadline pass on the lab clock.
func (e *Env) Start(ctx context.Context) (json.RawMessage, error) {
	if e.started {
		return nil, fmt.Errorf("scenario %s: Start called twice", e.lab.Scenario().ID)
	}
	e.started = true
	r := e.lab.First()
	if r.Timeout > 0 {
		e.lab.Clock().Advance(r.Timeout)
	}
	if !r.Failed {
		return nil, fmt.Errorf("scenario %s: the first call did not fail", e.lab.Scenario().ID)
	}
	obs := r.Observation()
	e.announced, _ = lab.RetryAfter(obs)
	return obs, nil
}

// Execute carries out the policy of answer a as the scenario defines it
// (lab.Lab.Execute): retry_now repeats the first call at once; retry_later
// repeats it after the answer's delay_ms, else the retry-after the last
// observation announced (lab.RetryAfter, read from its text as a client
// would), else lab.DefaultBackoff, on the lab clock;
// revise_arguments, select_tool and authenticate make the scenario's
// calls. It returns the observation of the last call made and more =
// false once that call succeeded. stop_or_escalate and invalid answers are
// never executed: they are an error, as is a call before Start.
func (e *Env) Execute(ctx context.Context, t int, a simulator.Answer) (json.RawMessage, bool, error) {
	sc := e.lab.Scenario()
	switch {
	case !e.started:
		return nil, false, fmt.Errorf("scenario %s: Execute before Start", sc.ID)
	case !a.Valid || a.Policy == study.StopOrEscalate:
		return nil, false, fmt.Errorf("scenario %s turn %d: answer %q is not executed", sc.ID, t, a.Policy)
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	wait := e.announced
	if a.Policy == study.RetryLater && a.DelayMS > 0 {
		wait = time.Duration(a.DelayMS) * time.Millisecond // the answer's own delay
	}
	st, err := e.lab.Execute(a.Policy, wait)
	if err != nil {
		return nil, false, fmt.Errorf("scenario %s turn %d: %w", sc.ID, t, err)
	}
	r, ok := st.Last()
	if !ok {
		return nil, false, fmt.Errorf("scenario %s turn %d: %s made no call", sc.ID, t, a.Policy)
	}
	obs := r.Observation()
	e.announced, _ = lab.RetryAfter(obs)
	return obs, r.Failed, nil
}

// Final settles the lab's queued writes and reads the outcome from its
// state. ClockMS is the lab time up to the end of the trajectory (read
// before settling, which moves no clock). The state is compact: the lab
// writes it with json.Marshal.
func (e *Env) Final(ctx context.Context) (simulator.EnvOutcome, error) {
	e.lab.Settle()
	o := e.lab.Outcome()
	return simulator.EnvOutcome{Recovered: o.Recovered, Harm: o.Harm, Harms: o.Harms, Missing: o.Missing, Calls: o.Calls, ClockMS: o.ClockMS, State: o.State, Compact: true}, nil
}

var _ simulator.Actor = (*Env)(nil)

// Tools returns the tools the scenario's server lists, each as the JSON
// object tools/list carries (the lab's MCP definitions).
func (e *Env) Tools(ctx context.Context) ([]json.RawMessage, error) {
	ts := e.lab.Tools()
	out := make([]json.RawMessage, len(ts))
	for i, t := range ts {
		b, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		out[i] = b
	}
	return out, nil
}

// First returns the scenario's first call, the one Start made.
func (e *Env) First() simulator.ToolCall {
	sc := e.lab.Scenario()
	return simulator.ToolCall{Tool: sc.Tool, Arguments: sc.Args}
}

// Send makes call c on the lab (task: act), after waiting waitMS on the
// lab clock (simulator.DefaultWait: the retry-after the last observation
// announced, else lab.DefaultBackoff). A call the client's deadline
// passes on lets that time pass on the lab clock. more is false once the
// call succeeded.
func (e *Env) Send(ctx context.Context, t int, c simulator.ToolCall, waitMS int64) (json.RawMessage, bool, error) {
	if !e.started {
		return nil, false, fmt.Errorf("scenario %s: Send before Start", e.lab.Scenario().ID)
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	switch {
	case waitMS == simulator.DefaultWait && e.announced > 0:
		e.lab.Clock().Advance(e.announced)
	case waitMS == simulator.DefaultWait:
		e.lab.Clock().Advance(lab.DefaultBackoff)
	case waitMS > 0:
		e.lab.Clock().Advance(time.Duration(waitMS) * time.Millisecond)
	}
	r := e.lab.Call(c.Tool, c.Arguments)
	if r.Timeout > 0 {
		e.lab.Clock().Advance(r.Timeout)
	}
	obs := r.Observation()
	e.announced, _ = lab.RetryAfter(obs)
	return obs, r.Failed, nil
}
