// Package simulator runs one decision: it shows a model a rendered failure,
// replays the unchanged request when the model asks for an immediate replay
// (at most the replay cap, 3 by default), and scores the trajectory into
// the counts of docs/specification.md section 4. Under live replay
// (Config.Env) it executes every policy the model chooses in a fresh
// environment instead, shows the model what came back, and adds the
// environment's outcome (docs/specification.md section 7).
package simulator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// Key identifies a decision: one (model, prompt, condition, scenario,
// replicate).
type Key struct {
	Model     string          `json:"model" parquet:"model"`
	Prompt    string          `json:"prompt" parquet:"prompt"`
	Condition study.Condition `json:"condition" parquet:"condition"`
	Scenario  string          `json:"scenario" parquet:"scenario"`
	Replicate int             `json:"replicate" parquet:"replicate"` // 1-based
}

// String writes the key as model/prompt/condition/scenario/replicate.
func (k Key) String() string {
	return k.Model + "/" + k.Prompt + "/" + string(k.Condition) + "/" + k.Scenario + "/" + strconv.Itoa(k.Replicate)
}

// Seed is the sampling seed of turn t of a decision: a stable hash of the
// study seed, the scenario, the replicate and the turn, independent of the
// condition and the model, so paired conditions see the same seeds. The
// result is in [0, 2^31) so every backend accepts it.
func Seed(studySeed uint64, scenario string, replicate, turn int) int64 {
	// The hashed text is "stress-seed/v1\x00%d\x00%s\x00%d\x00%d" of the
	// four, built without fmt: readers derive a seed for every call line.
	var buf [128]byte
	b := append(buf[:0], "stress-seed/v1\x00"...)
	b = strconv.AppendUint(b, studySeed, 10)
	b = append(append(b, 0), scenario...)
	b = strconv.AppendInt(append(b, 0), int64(replicate), 10)
	b = strconv.AppendInt(append(b, 0), int64(turn), 10)
	h := sha256.Sum256(b)
	return int64(binary.BigEndian.Uint64(h[:8]) & 0x7fffffff)
}

// Config holds the study-wide settings of a decision.
type Config struct {
	StudySeed   uint64         // from the manifest
	Temperature float64        // sampling temperature
	ReplayCap   int            // most replays per decision (docs/specification.md section 4.2)
	Options     map[string]any // the model's backend options
	// Env, when set, makes replays live (manifest replay: live): each
	// decision gets a fresh environment seeded by EnvSeed, and every
	// policy the model chooses (but stop_or_escalate) is executed in it
	// under the replay cap. Nil: stored replay, the paper's simulator.
	Env EnvFactory
	// Act makes the decision the action task (manifest task: act; needs
	// Env, whose environments must be Actors): the model sees the tools
	// and the failing call and writes the call each policy needs, which
	// the harness checks and sends (see RunAct's rules in Run).
	Act bool
	// NativeTools offers the server's tools as native tool definitions
	// (manifest tool_calls: native) under Act; the model may then give its
	// call as a native tool call.
	NativeTools bool
	// Task, when set, renders the request in place of the prompt: a task
	// of one turn with a prompt and an answer of its own (the model
	// coder's, package coder). It needs ReplayCap 0 and stored replay.
	Task Task
}

// Task is a task of one turn that is no policy choice: the model coder's
// coding of a record. The decision is its one call. Its answer is still
// scored as a label answer, as Group.Row in package results scores the
// call lines; a coding is none, so the row's label columns do not apply:
// the task reads its answers from the call lines itself.
type Task interface {
	// Messages renders the request of decision key on scenario s.
	Messages(key Key, s *study.Scenario) ([]models.Message, error)
}

// Turn is one model call of a decision.
type Turn struct {
	Index   int            // 0-based turn number
	Request models.Request // exactly what the model was sent
	Reply   models.Reply   // what it returned
	Latency time.Duration  // wall time of the call
	Err     error          // transport or backend error; Reply is then empty
	Answer  Answer         // Reply.Text parsed
	// Observation is, under live replay, what the environment returned
	// for the call this turn shows: Start's at turn 0, else the result of
	// the policy executed after the previous turn. Nil under stored
	// replay.
	Observation json.RawMessage
	// Result is, under live replay, the observation of the policy
	// executed after this turn when no later turn shows it (the
	// environment settled the decision); nil otherwise.
	Result json.RawMessage
	// Action is, under task: act, what the harness did with this turn's
	// answer: the call it sent, or refused (nil when it sent none: a stop,
	// an invalid label, the cap).
	Action *Action
}

// Decision is a completed trajectory.
type Decision struct {
	Key     Key
	Server  string // the scenario's server (bootstrap cluster)
	Live    bool   // replays were live (Config.Env was set)
	Act     bool   // the action task (Config.Act)
	Turns   []Turn
	Outcome Outcome // zero when Err is set
	// Env is the environment's outcome of a live decision that completed
	// (nil under stored replay and when Err is set).
	Env *EnvOutcome
	// Err says the decision could not complete: a model call failed for
	// good (the last turn's Err, a transport failure), or the prompt
	// failed to render or the environment failed (no turn has an Err).
	Err error
}

// Run plays one decision of model m on scenario s under condition
// key.Condition, rendering through prompt p. With cfg.Env set, replays
// are live: see Config.Env and ContinuesLive.
func Run(ctx context.Context, m models.Model, p *conditions.Prompt, s *study.Scenario, key Key, cfg Config) Decision {
	d := Decision{Key: key, Server: s.Server, Live: cfg.Env != nil, Act: cfg.Act}
	if cfg.Act && !d.Live {
		d.Err = fmt.Errorf("scenario %s: task act needs live replay (an environment)", s.ID)
		return d
	}
	var msgs []models.Message
	var err error
	switch {
	case cfg.Task != nil:
		if cfg.ReplayCap != 0 || d.Live {
			panic("simulator: a Task needs replay cap 0 and stored replay")
		}
		msgs, err = cfg.Task.Messages(key, s)
	case !cfg.Act:
		msgs, err = p.InitialOnce(s, key.Condition)
	}
	if err != nil {
		d.Err = err
		return d
	}
	var env Environment
	var shown json.RawMessage // the environment's observation the next turn shows
	if d.Live {
		if env, shown, err = startEnv(ctx, cfg.Env, s.ID, EnvSeed(cfg.StudySeed, s.ID, key.Replicate), key.Condition); err != nil {
			d.envFailed(err, Seed(cfg.StudySeed, s.ID, key.Replicate, 0), msgs)
			return d
		}
		defer closeEnv(env)
	}
	var ac *acting
	if cfg.Act {
		if ac, msgs, err = startAct(ctx, env, p, s, key.Condition, cfg.NativeTools); err != nil {
			if _, failed := errors.AsType[*EnvError](err); failed {
				d.envFailed(err, Seed(cfg.StudySeed, s.ID, key.Replicate, 0), nil)
			} else {
				d.Err = err
			}
			return d
		}
	}
	var answers []Answer
	executed := 0
	invalidAction := false
	for t := 0; ; t++ {
		req := models.Request{
			Messages:    append([]models.Message(nil), msgs...),
			Seed:        Seed(cfg.StudySeed, s.ID, key.Replicate, t),
			Temperature: cfg.Temperature,
			Options:     cfg.Options,
		}
		if ac != nil && cfg.NativeTools {
			req.Tools = ac.native
		}
		start := time.Now()
		reply, err := m.Generate(ctx, req)
		turn := Turn{Index: t, Request: req, Reply: reply, Latency: time.Since(start), Err: err, Observation: shown}
		if err != nil {
			d.Turns = append(d.Turns, turn)
			d.Err = fmt.Errorf("turn %d: %w", t, err)
			return d
		}
		if ac != nil {
			turn.Answer = ParseAct(reply.Text, reply.ToolCalls)
		} else {
			turn.Answer = ParseAnswer(reply.Text)
		}
		d.Turns = append(d.Turns, turn)
		answers = append(answers, turn.Answer)
		var next models.Message
		if !d.Live {
			if !Continues(turn.Answer, t, cfg.ReplayCap) {
				break
			}
			// Replay the identical request: the same stored failure comes back.
			next, err = p.Replayed(s, key.Condition, t+1)
		} else {
			if !ContinuesLive(turn.Answer, t, cfg.ReplayCap) {
				break
			}
			var obs json.RawMessage
			var more bool
			var act *Action
			if ac != nil {
				act = ac.action(turn.Answer)
				d.Turns[t].Action = act
				if act.Invalid != "" {
					invalidAction = true
					break
				}
				obs, more, err = ac.actor.Send(ctx, t, act.ToolCall, act.WaitMS)
				act.Sent = err == nil
				ac.last = act.ToolCall
			} else {
				obs, more, err = env.Execute(ctx, t, turn.Answer)
			}
			if err == nil {
				err = validJSON("the observation", obs)
			}
			if err != nil {
				d.envFailed(fmt.Errorf("environment of scenario %s: execute %s after turn %d: %w", s.ID, turn.Answer.Policy, t, err), 0, nil)
				return d
			}
			executed++
			if !more {
				d.Turns[t].Result = obs
				break
			}
			if act != nil {
				next, err = p.Acted(s, key.Condition, t+1, turn.Answer.Policy, act.ToolCall.JSON(), obs)
			} else {
				next, err = p.Live(s, key.Condition, t+1, turn.Answer.Policy, obs)
			}
			shown = obs
		}
		if err != nil {
			d.Err = err
			return d
		}
		msgs = append(msgs, models.Message{Role: conditions.Assistant, Content: reply.Text}, next)
	}
	if !d.Live {
		d.Outcome = Score(Scoring{Answers: answers, Preferred: s.Preferred, Proven: s.PreferredSet, NonHarm: s.NonHarm})
		return d
	}
	eo, err := env.Final(ctx)
	if err == nil && eo.State != nil && !eo.Compact {
		eo.State, err = compactJSON("the final state", eo.State)
		eo.Compact = err == nil
	}
	if err != nil {
		d.envFailed(fmt.Errorf("environment of scenario %s: final state: %w", s.ID, err), 0, nil)
		return d
	}
	d.Env = &eo
	d.Outcome = Score(Scoring{Answers: answers, Preferred: s.Preferred, Proven: s.PreferredSet, NonHarm: s.NonHarm, Env: &eo, Executed: executed, InvalidAction: invalidAction})
	return d
}

// EnvError is a failure of a decision's environment, not of a model
// call: the environment did not start within its deadline, died, or its
// final state could not be read. The decision is an error decision (the
// last turn, or a turn 0 that never reached the model, carries it), kept
// out of the counts, reported apart and run again by a resume with
// -retry-errors; the run goes on.
type EnvError struct{ Err error }

// Error returns the failure's message.
func (e *EnvError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *EnvError) Unwrap() error { return e.Err }

// envFailed records the failure err of d's environment on its last turn,
// or, when the model was not called yet, on a turn 0 of its own (the
// request it would have sent: seed and, for the label task, msgs).
func (d *Decision) envFailed(err error, seed int64, msgs []models.Message) {
	e := &EnvError{Err: err}
	if len(d.Turns) == 0 {
		d.Turns = append(d.Turns, Turn{Request: models.Request{Messages: msgs, Seed: seed}})
	}
	t := &d.Turns[len(d.Turns)-1]
	t.Err = e
	d.Err = fmt.Errorf("turn %d: %w", t.Index, e)
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

// Replays reports whether stored replay replays the failure after
// answer a: a valid retry_now.
func Replays(a Answer) bool { return a.Valid && a.Policy == study.RetryNow }

// Executes reports whether live replay executes answer a: any valid
// policy but stop_or_escalate.
func Executes(a Answer) bool { return a.Valid && a.Policy != study.StopOrEscalate }

// Continues reports whether the simulator replays after answer a at turn t
// under stored replay: Replays(a), while fewer than replayCap replays have
// happened.
func Continues(a Answer, t, replayCap int) bool { return Replays(a) && t < replayCap }

// ContinuesLive reports whether the simulator executes answer a of turn t
// under live replay: Executes(a), while fewer than replayCap policies have
// been executed. Whether a turn follows the execution is the
// environment's call (Environment.Execute's more).
func ContinuesLive(a Answer, t, replayCap int) bool { return Executes(a) && t < replayCap }

// Outcome is the scored trajectory of a decision
// (docs/specification.md section 4).
type Outcome struct {
	Final       study.Policy // final label, "" when the final answer is invalid
	FinalStatus study.Status // final operation status, "" when absent or invalid
	Turns       int          // model calls, 1 to cap+1
	Replays     int          // replays the simulator issued, or policies it executed (Extra)
	Values      Values       // the columns, each by its rule in Columns
}

// Scoring is what Score judges: a trajectory's answers, in turn order,
// against its scenario, and under live replay what the environment did.
type Scoring struct {
	Answers   []Answer
	Preferred study.Policy
	// Proven is the scenario's execution-proven preferred set
	// (study.Scenario.PreferredSet, Preferred first), which the Proven
	// column credits; nil stands for {Preferred}.
	Proven  []study.Policy
	NonHarm []study.Policy
	// Env is the outcome the environment read from its final state under
	// live replay; nil under stored replay, where the lab columns stay
	// absent.
	Env *EnvOutcome
	// Executed is, under live replay, the policies carried out in the
	// environment (the last answer's included when the environment
	// settled the decision after it): the replays.
	Executed int
	// InvalidAction says, under task: act, that the harness refused the
	// call of an answer (see the action reasons): not sent, and the
	// decision ended.
	InvalidAction bool
}

// Score scores a trajectory: each column of Columns by its rule. Under
// stored replay the replays are the answers after the first.
func Score(s Scoring) Outcome {
	if len(s.Answers) == 0 {
		return Outcome{}
	}
	t := trajectory{answers: s.Answers, final: s.Answers[len(s.Answers)-1], preferred: s.Preferred, proven: s.Proven,
		retryHarm: !slices.Contains(s.NonHarm, study.RetryNow), env: s.Env, invalidAction: s.InvalidAction}
	o := Outcome{Turns: len(s.Answers), Replays: len(s.Answers) - 1, FinalStatus: t.final.Status}
	if t.final.Valid {
		o.Final = t.final.Policy
	}
	if s.Env != nil {
		o.Replays = s.Executed
		t.harms = statediff.KindsOf(s.Env.Harms)
	}
	for i := range Columns {
		if s.Env != nil || !Columns[i].Kind.Lab() {
			o.Values.Set(Col(i), Columns[i].rule(&t))
		}
	}
	return o
}
