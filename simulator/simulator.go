// Package simulator runs one decision: it shows a model a rendered failure,
// replays the unchanged request when the model asks for an immediate replay
// (at most the replay cap, 3 by default), and scores the trajectory into
// the counts of docs/specification.md section 4. Under live replay
// (Config.Env) it executes every policy the model chooses in a fresh
// environment instead, shows the model what came back, and adds the
// environment's outcome (docs/specification.md section 7).
//
// Each Task has its own decision loop (label.go, act.go, coding.go) over
// one trajectory core (play.go); the replay mode (replay.go: stored or
// live) is what the label loop is given, not a branch inside it.
package simulator

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
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

// Task is what a decision asks of the model: the manifest's task
// (manifests.TaskLabel, TaskAct, TaskCode). Each task has its own
// decision loop; "" is Label.
type Task string

// The tasks.
const (
	// Label: the model names a policy for the failure shown, and the
	// replay mode carries it out (manifest task: label, the paper's).
	Label Task = "label"
	// Act: the model sees the server's tools and the failing call, names
	// a policy and writes the call it needs, which the harness checks and
	// sends to the decision's environment (manifest task: act; live
	// replay only, and the environments must be Actors).
	Act Task = "act"
	// Coding: the model codes a record in one turn (stress code); the
	// Config's Coder renders the request. Stored replay, replay cap 0.
	Coding Task = "code"
)

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
	// Task is what the decision asks of the model; "" is Label.
	Task Task
	// NativeTools offers the server's tools as native tool definitions
	// (manifest tool_calls: native) under task Act; the model may then
	// give its call as a native tool call.
	NativeTools bool
	// Coder renders the request of task Coding (the model coder's, package
	// coder) in place of the prompt; the coding task needs it, the others
	// ignore it.
	Coder Coder
}

// Coder renders the one request of task Coding: the model coder's coding
// of a record, which is no policy choice. Its answer is still scored as
// a label answer, as Group.Row in package results scores the call lines;
// a coding is none, so the row's label columns do not apply: the coding
// reads its answers from the call lines itself.
type Coder interface {
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
	// Action is, under task Act, what the harness did with this turn's
	// answer: the call it sent, or refused (nil when it sent none: a stop,
	// an invalid label, the cap).
	Action *Action
}

// Decision is a completed trajectory.
type Decision struct {
	Key    Key
	Server string // the scenario's server (bootstrap cluster)
	Live   bool   // replays were live (Config.Env was set)
	Task   Task   // what the model was asked (Config.Task; never "")
	Turns  []Turn
	// Outcome is the scored trajectory; zero when Err is set.
	Outcome Outcome
	// Env is the environment's outcome of a live decision that completed
	// (nil under stored replay and when Err is set).
	Env *EnvOutcome
	// Err says the decision could not complete: a model call failed for
	// good (the last turn's Err, a transport failure), or the prompt
	// failed to render or the environment failed (no turn has an Err).
	Err error
}

// Run plays one decision of model m on scenario s under condition
// key.Condition, rendering through prompt p, by the decision loop of
// cfg.Task (label.go, act.go, coding.go). With cfg.Env set, replays are
// live: see Config.Env and ContinuesLive.
func Run(ctx context.Context, m models.Model, p *conditions.Prompt, s *study.Scenario, key Key, cfg Config) Decision {
	if cfg.Task == "" {
		cfg.Task = Label
	}
	pl := play{ctx: ctx, m: m, cfg: cfg, s: s, d: Decision{Key: key, Server: s.Server, Live: cfg.Env != nil, Task: cfg.Task}}
	switch cfg.Task {
	case Label:
		pl.label(p)
	case Act:
		pl.act(p)
	case Coding:
		pl.coding()
	default:
		pl.d.Err = fmt.Errorf("scenario %s: unknown task %q (want %s, %s or %s)", s.ID, cfg.Task, Label, Act, Coding)
	}
	return pl.d
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
