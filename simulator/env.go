package simulator

import (
	"context"
	"encoding/json"
)

// Environment is the world a decision acts on when replays are live
// (manifest replay: live): instead of returning the stored failure again,
// the simulator asks the environment to execute each policy the model
// chooses and shows the model what came back. Stored replay (the default)
// uses no Environment.
//
// An Environment serves one decision; it is made fresh, and seeded, for
// each (scenario, replicate) by an EnvFactory.
type Environment interface {
	// Start makes the scenario's first, failing call and returns its
	// client-normalized observation ({"exception": …} or {"result": …},
	// see study.Scenario). Turn 0 is rendered from the corpus record, as
	// in stored replay (so every condition applies unchanged); the lab
	// corpus records exactly this call, so the two agree.
	Start(ctx context.Context) (json.RawMessage, error)
	// Execute carries out the policy of answer a, a valid answer the model
	// gave at turn t, other than stop_or_escalate: it repeats, delays,
	// revises, redirects or authenticates the call as the scenario
	// defines, and returns the observation of the call it made (shown to
	// the model at turn t+1) and whether the trajectory goes on (false:
	// the call settled the decision, e.g. it succeeded, or the
	// environment ends it). An error is a failure of the environment
	// itself, not of the call.
	Execute(ctx context.Context, t int, a Answer) (obs json.RawMessage, more bool, err error)
	// Final returns the outcome read from the environment's state at the
	// end of the decision.
	Final(ctx context.Context) (EnvOutcome, error)
}

// EnvOutcome is the ground truth of a decision read from the state of its
// environment, which the model never sees.
type EnvOutcome struct {
	Recovered bool            // the intended effect is present exactly once
	Harm      bool            // a duplicate, a write to the wrong target, or an effect the scenario forbids
	Calls     int             // tool calls made, the first failing call included
	ClockMS   int64           // environment-clock milliseconds from the first call to the final state
	State     json.RawMessage // the final state, as JSON
}

// EnvFactory makes the environment of one decision of scenario, seeded
// from the study seed and the replicate, so that paired conditions and
// models meet the same environment.
type EnvFactory interface {
	NewEnv(ctx context.Context, scenario string, seed int64) (Environment, error)
}
