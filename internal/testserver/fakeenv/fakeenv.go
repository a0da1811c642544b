// Package fakeenv is a tiny deterministic environment for the tests and
// benchmarks of live replay (simulator.Environment): one write operation
// per decision whose fault is a small state machine, on a clock that only
// calls and delays advance. It stands in for the lab (env/labenv) where
// the tests need exact, hand-checkable outcomes.
//
// It is for tests only: it registers nothing, and the stress command does
// not link it. A test that runs manifests registers it under a name of
// its own (Backend), which its manifests then give as environment.
package fakeenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/mcpstress/stress/env"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// Kind is a fault of the operation.
type Kind string

// Faults.
const (
	// Transient fails the first Fails calls (the first call included) with
	// the scenario's recorded failure, then succeeds and writes the effect
	// once; later calls write it again (a duplicate).
	Transient Kind = "transient"
	// Committed writes the effect on the first call but answers with the
	// scenario's recorded failure (a timeout after the commit); every later
	// call writes it again (a duplicate) and succeeds.
	Committed Kind = "committed"
)

// Spec is the fault of one scenario.
type Spec struct {
	Kind  Kind
	Fails int // Transient: calls that fail before the first success, ≥ 1
	// Continue makes Execute return more = true after a success too, so
	// the model sees the success and answers again; by default a success
	// settles the decision.
	Continue bool
	// Broken makes Execute fail (an environment failure, not a failed call).
	Broken bool
	// FailStart makes Start fail, as a server that does not start does.
	FailStart bool
}

// CallMS is the clock cost of one call, in milliseconds.
const CallMS = 40

// Success is the observation of a call that succeeded.
var Success = json.RawMessage(`{"result":{"content":[{"type":"text","text":"done"}],"isError":false}}`)

// Factory makes the environments of a corpus' scenarios.
type Factory struct {
	failure map[string]json.RawMessage // scenario id -> its recorded observation
	faults  map[string]Spec
	def     Spec
	// Made counts the environments made.
	Made atomic.Int64
	last atomic.Pointer[Env]
}

// Last returns the environment made last, or nil.
func (f *Factory) Last() *Env { return f.last.Load() }

// New returns a factory for scenarios: each scenario's fault is faults[id],
// or def; its failing calls return the scenario's recorded observation.
func New(scenarios []study.Scenario, faults map[string]Spec, def Spec) *Factory {
	f := &Factory{failure: map[string]json.RawMessage{}, faults: faults, def: def}
	for i := range scenarios {
		f.failure[scenarios[i].ID] = scenarios[i].Observation
	}
	return f
}

// Backend returns an environment (package env) whose factory for a
// manifest is New(its corpus's scenarios, faults, def), for a test to
// register: env.Register("fake", fakeenv.Backend(faults, def)).
func Backend(faults map[string]Spec, def Spec) env.Backend {
	return env.Backend{Factory: func(m *manifests.Resolved, _ env.Options) (simulator.EnvFactory, error) {
		return New(m.Corpus.Scenarios, faults, def), nil
	}}
}

// NewEnv implements simulator.EnvFactory.
func (f *Factory) NewEnv(ctx context.Context, scenario string, seed int64) (simulator.Environment, error) {
	obs, ok := f.failure[scenario]
	if !ok {
		return nil, fmt.Errorf("fakeenv: unknown scenario %q", scenario)
	}
	spec, ok := f.faults[scenario]
	if !ok {
		spec = f.def
	}
	f.Made.Add(1)
	e := &Env{spec: spec, failure: obs, seed: seed}
	f.last.Store(e)
	return e, nil
}

// Env is the environment of one decision.
type Env struct {
	spec     Spec
	failure  json.RawMessage
	seed     int64
	started  bool
	calls    int   // tool calls made
	attempts int   // calls of the operation itself
	writes   int   // effects written
	clock    int64 // ms
	policies []study.Policy
	sent     []simulator.ToolCall // the calls Send received
}

// Start implements simulator.Environment: the first, failing call.
func (e *Env) Start(ctx context.Context) (json.RawMessage, error) {
	if e.started {
		return nil, errors.New("fakeenv: Start called twice")
	}
	e.started = true
	if e.spec.FailStart {
		return nil, errors.New("fakeenv: the server did not start")
	}
	return e.call(), nil
}

// call makes one call of the operation and returns its observation.
func (e *Env) call() json.RawMessage {
	e.calls++
	e.attempts++
	e.clock += CallMS
	switch e.spec.Kind {
	case Committed:
		e.writes++
		if e.attempts == 1 {
			return e.failure
		}
		return Success
	default:
		if e.attempts <= e.spec.Fails {
			return e.failure
		}
		e.writes++
		return Success
	}
}

// Execute implements simulator.Environment: a retry_later waits its delay
// (the answer's, else simulator.DefaultRetryDelayMS), an authenticate makes
// one credential call first; every policy then calls the operation again.
func (e *Env) Execute(ctx context.Context, t int, a simulator.Answer) (json.RawMessage, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if !e.started || !a.Valid || a.Policy == study.StopOrEscalate {
		return nil, false, fmt.Errorf("fakeenv: Execute of %+v at turn %d is a misuse", a, t)
	}
	if e.spec.Broken {
		return nil, false, errors.New("fakeenv: broken")
	}
	e.policies = append(e.policies, a.Policy)
	switch a.Policy {
	case study.RetryLater:
		d := a.DelayMS
		if d == 0 {
			d = simulator.DefaultRetryDelayMS
		}
		e.clock += d
	case study.Authenticate:
		e.calls++
		e.clock += CallMS
	}
	obs := e.call()
	succeeded := string(obs) == string(Success)
	return obs, !succeeded || e.spec.Continue, nil
}

// Final implements simulator.Environment.
func (e *Env) Final(ctx context.Context) (simulator.EnvOutcome, error) {
	state, err := json.Marshal(struct {
		Seed     string         `json:"seed"`
		Writes   int            `json:"writes"`
		Policies []study.Policy `json:"policies"`
	}{strconv.FormatInt(e.seed, 10), e.writes, e.policies})
	o := simulator.EnvOutcome{Recovered: e.writes == 1, Harm: e.writes > 1, Calls: e.calls, ClockMS: e.clock, State: state}
	if o.Harm {
		o.Harms = []statediff.Harm{{Kind: statediff.Duplicate, Record: "/writes", Why: fmt.Sprintf("written %d times", e.writes)}}
	}
	return o, err
}

var _ simulator.EnvFactory = (*Factory)(nil)

var _ simulator.Actor = (*Env)(nil)

// The tools of an Env under task act: "write" is the operation (its
// argument n must be an integer from 1 to 9), "read" reads the state and
// writes nothing.
var tools = []json.RawMessage{
	json.RawMessage(`{"name":"write","description":"writes the record","inputSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":9}},"required":["n"],"additionalProperties":false}}`),
	json.RawMessage(`{"name":"read","description":"reads the record","inputSchema":{"type":"object","properties":{}},"annotations":{"readOnlyHint":true}}`),
}

// firstCall is the failing call Start makes (as Actor.First gives it).
var firstCall = simulator.ToolCall{Tool: "write", Arguments: json.RawMessage(`{"n":1}`)}

// Tools implements simulator.Actor.
func (e *Env) Tools(ctx context.Context) ([]json.RawMessage, error) { return tools, nil }

// First implements simulator.Actor.
func (e *Env) First() simulator.ToolCall { return firstCall }

// Sent returns the calls Send received, in order, as the server saw them.
func (e *Env) Sent() []simulator.ToolCall { return e.sent }

// Send implements simulator.Actor: it waits waitMS (simulator.DefaultWait:
// simulator.DefaultRetryDelayMS) and makes the call: "write" calls the
// operation (whatever its n), "read" costs a call and returns the number of
// writes; any other tool fails like an unknown tool would. more is false
// once the operation succeeded (unless Spec.Continue).
func (e *Env) Send(ctx context.Context, t int, c simulator.ToolCall, waitMS int64) (json.RawMessage, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if !e.started {
		return nil, false, fmt.Errorf("fakeenv: Send at turn %d before Start", t)
	}
	if e.spec.Broken {
		return nil, false, errors.New("fakeenv: broken")
	}
	e.sent = append(e.sent, c)
	switch {
	case waitMS == simulator.DefaultWait:
		e.clock += simulator.DefaultRetryDelayMS
	case waitMS > 0:
		e.clock += waitMS
	}
	switch c.Tool {
	case "write":
		obs := e.call()
		succeeded := string(obs) == string(Success)
		return obs, !succeeded || e.spec.Continue, nil
	case "read":
		e.calls++
		e.clock += CallMS
		return json.RawMessage(`{"result":{"content":[{"type":"text","text":"writes: ` + strconv.Itoa(e.writes) + `"}],"isError":false}}`), true, nil
	}
	e.calls++
	e.clock += CallMS
	return json.RawMessage(`{"exception":{"type":"McpError","error":{"code":-32602,"message":"unknown tool"}}}`), true, nil
}
