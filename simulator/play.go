package simulator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/study"
)

// play is the trajectory core every task's decision loop shares: the
// conversation so far, and the turns it plays and records on the
// decision.
type play struct {
	ctx context.Context
	m   models.Model
	cfg Config
	s   *study.Scenario
	d   Decision // the decision played, returned by Run
	// msgs is the conversation so far: the next request's messages.
	msgs []models.Message
	// tools are the native tool definitions every request offers (task
	// Act with tool_calls: native); nil otherwise.
	tools []models.Tool
	// shown is the environment's observation the next turn shows; nil
	// under stored replay.
	shown   json.RawMessage
	answers []Answer // every turn's answer, in turn order
}

// step is what a decision loop does after the answer of turn t (turn,
// already recorded): it returns the message that opens turn t+1 and the
// observation that turn shows (nil under stored replay), or more false
// when the decision ends with turn t. An *EnvError is a failure of the
// environment, recorded on turn t; any other error (a prompt that fails
// to render) ends the decision as it is.
type step func(t int, turn *Turn) (next models.Message, shown json.RawMessage, more bool, err error)

// once is the step of a decision of one turn.
func once(int, *Turn) (models.Message, json.RawMessage, bool, error) {
	return models.Message{}, nil, false, nil
}

// turns plays turns from turn 0 on, each answer read by parse, until
// next ends the decision. It reports whether the decision completed:
// false when a model call or next failed (d.Err is then set).
func (pl *play) turns(parse func(models.Reply) Answer, next step) bool {
	d := &pl.d
	for t := 0; ; t++ {
		req := models.Request{
			Messages:    append([]models.Message(nil), pl.msgs...),
			Seed:        Seed(pl.cfg.StudySeed, pl.s.ID, d.Key.Replicate, t),
			Temperature: pl.cfg.Temperature,
			Options:     pl.cfg.Options,
			Tools:       pl.tools,
		}
		start := time.Now()
		reply, err := pl.m.Generate(pl.ctx, req)
		turn := Turn{Index: t, Request: req, Reply: reply, Latency: time.Since(start), Err: err, Observation: pl.shown}
		if err != nil {
			d.Turns = append(d.Turns, turn)
			d.Err = fmt.Errorf("turn %d: %w", t, err)
			return false
		}
		turn.Answer = parse(reply)
		d.Turns = append(d.Turns, turn)
		pl.answers = append(pl.answers, turn.Answer)
		msg, shown, more, err := next(t, &d.Turns[t])
		if err != nil {
			if e, ok := err.(*EnvError); ok {
				d.envFailed(e.Err, 0, nil)
			} else {
				d.Err = err
			}
			return false
		}
		if !more {
			return true
		}
		pl.shown = shown
		pl.msgs = append(pl.msgs, models.Message{Role: conditions.Assistant, Content: reply.Text}, msg)
	}
}

// scoring is what Score judges of the trajectory played: its answers
// against the scenario (the environment's part is the replay mode's).
func (pl *play) scoring() Scoring {
	return Scoring{Answers: pl.answers, Preferred: pl.s.Preferred, Proven: pl.s.PreferredSet, NonHarm: pl.s.NonHarm}
}

// end records the outcome of the completed trajectory (Outcome and Env),
// or the environment's failure err to read it.
func (pl *play) end(o Outcome, env *EnvOutcome, err error) {
	if err != nil {
		pl.d.envFailed(err, 0, nil)
		return
	}
	pl.d.Outcome, pl.d.Env = o, env
}

// failedBeforeTurn0 records the failure err of the decision's
// environment before the model was called: on a turn 0 of its own, with
// the request it would have sent (msgs: the label task's).
func (pl *play) failedBeforeTurn0(err error, msgs []models.Message) {
	pl.d.envFailed(err, Seed(pl.cfg.StudySeed, pl.s.ID, pl.d.Key.Replicate, 0), msgs)
}

// parseLabel reads a label answer: the policy and status of the text.
func parseLabel(r models.Reply) Answer { return ParseAnswer(r.Text) }
