package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/study"
)

// replay is a replay mode: what follows an answer the label task goes on
// from, and how the finished trajectory is scored. Stored replay shows
// the same failure again; live replay executes the policy in the
// decision's environment and shows what came back.
type replay interface {
	// step is the label task's step (see step).
	step(t int, turn *Turn) (next models.Message, shown json.RawMessage, more bool, err error)
	// outcome scores the completed trajectory sc, with the environment's
	// outcome under live replay. An error is a failure of the
	// environment.
	outcome(sc Scoring) (Outcome, *EnvOutcome, error)
	// close releases what the mode holds.
	close()
}

// stored is stored replay, the paper's simulator: after a valid
// retry_now the identical request is replayed and the same stored
// failure comes back, at most the replay cap times.
type stored struct {
	p   *conditions.Prompt
	s   *study.Scenario
	c   study.Condition
	cap int
}

func (r *stored) step(t int, turn *Turn) (models.Message, json.RawMessage, bool, error) {
	if !Continues(turn.Answer, t, r.cap) {
		return models.Message{}, nil, false, nil
	}
	next, err := r.p.Replayed(r.s, r.c, t+1)
	return next, nil, true, err
}

func (r *stored) outcome(sc Scoring) (Outcome, *EnvOutcome, error) { return Score(sc), nil, nil }

func (r *stored) close() {}

// live is live replay: the decision's environment, which executes every
// policy the model chooses (but stop_or_escalate) under the replay cap.
// Task Label asks it to carry out a policy (Environment.Execute); task
// Act sends the model's own calls to it (Actor.Send).
type live struct {
	ctx      context.Context
	env      Environment
	s        *study.Scenario
	cap      int
	executed int // policies carried out, the settling one included
}

// startLive starts the environment of decision key on scenario s, and
// returns it with its first, failing call's observation (what turn 0
// shows).
func startLive(ctx context.Context, cfg *Config, s *study.Scenario, key Key) (*live, json.RawMessage, error) {
	env, shown, err := startEnv(ctx, cfg.Env, s.ID, EnvSeed(cfg.StudySeed, s.ID, key.Replicate), key.Condition)
	if err != nil {
		return nil, nil, err
	}
	return &live{ctx: ctx, env: env, s: s, cap: cfg.ReplayCap}, shown, nil
}

// ran takes what carrying out the answer of turn t returned (obs, more,
// err): an environment that failed or returned no JSON is an *EnvError;
// else the policy counts as executed, and when the decision is settled
// (more false) obs is turn t's Result.
func (l *live) ran(t int, turn *Turn, obs json.RawMessage, more bool, err error) (bool, error) {
	if err == nil {
		err = validJSON("the observation", obs)
	}
	if err != nil {
		return false, &EnvError{Err: fmt.Errorf("environment of scenario %s: execute %s after turn %d: %w", l.s.ID, turn.Answer.Policy, t, err)}
	}
	l.executed++
	if !more {
		turn.Result = obs
	}
	return more, nil
}

// outcome reads the environment's final state and scores the
// trajectory sc with it; a state that cannot be read is an error.
func (l *live) outcome(sc Scoring) (Outcome, *EnvOutcome, error) {
	eo, err := l.env.Final(l.ctx)
	if err == nil && eo.State != nil && !eo.Compact {
		eo.State, err = compactJSON("the final state", eo.State)
		eo.Compact = err == nil
	}
	if err != nil {
		return Outcome{}, nil, fmt.Errorf("environment of scenario %s: final state: %w", l.s.ID, err)
	}
	sc.Env, sc.Executed = &eo, l.executed
	return Score(sc), &eo, nil
}

func (l *live) close() { closeEnv(l.env) }

// liveLabel is live replay of task Label: the environment carries out
// the policy each answer names.
type liveLabel struct {
	*live
	p *conditions.Prompt
	c study.Condition
}

func (r liveLabel) step(t int, turn *Turn) (models.Message, json.RawMessage, bool, error) {
	if !ContinuesLive(turn.Answer, t, r.cap) {
		return models.Message{}, nil, false, nil
	}
	obs, more, err := r.env.Execute(r.ctx, t, turn.Answer)
	if more, err = r.ran(t, turn, obs, more, err); !more || err != nil {
		return models.Message{}, nil, false, err
	}
	next, err := r.p.Live(r.s, r.c, t+1, turn.Answer.Policy, obs)
	return next, obs, true, err
}

// startEnv makes the environment of a decision under condition c and its
// first call.
func startEnv(ctx context.Context, f EnvFactory, scenario string, seed int64, c study.Condition) (Environment, json.RawMessage, error) {
	var env Environment
	var err error
	if sf, ok := f.(ShapedEnvFactory); ok && c.Shape() {
		env, err = sf.NewShapedEnv(ctx, scenario, seed, c)
	} else if c.Shape() {
		err = fmt.Errorf("this environment cannot serve the error shape %s (the lab can)", c)
	} else {
		env, err = f.NewEnv(ctx, scenario, seed)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("environment of scenario %s: %w", scenario, err)
	}
	obs, err := env.Start(ctx)
	if err == nil {
		err = validJSON("the observation", obs)
	}
	if err != nil {
		closeEnv(env)
		return nil, nil, fmt.Errorf("environment of scenario %s: start: %w", scenario, err)
	}
	return env, obs, nil
}

// closeEnv closes env when it is an io.Closer.
func closeEnv(env Environment) {
	if c, ok := env.(io.Closer); ok {
		c.Close()
	}
}

// validJSON fails, naming what b is, when b is not valid JSON.
func validJSON(what string, b json.RawMessage) error {
	if !json.Valid(b) {
		return fmt.Errorf("%s is not valid JSON: %.200q", what, b)
	}
	return nil
}

// compactJSON returns b as json.Compact writes it, or fails, naming what
// b is, when b is not valid JSON.
func compactJSON(what string, b json.RawMessage) (json.RawMessage, error) {
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %.200q", what, b)
	}
	return c.Bytes(), nil
}
