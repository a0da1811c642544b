package results

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/simulator"
)

// This file holds one decision's call lines (Group) and the one scoring
// path from them to the decision's row (Group.Row).

// Group is the call lines of one decision: consecutive lines with the same
// key, starting at turn 0.
type Group struct {
	Key    simulator.Key
	Heads  []Head // in file order
	Offset int64  // byte offset of the first line
	Size   int64  // bytes of the lines, newlines included
	Line   int    // 1-based line number of the first line
	// answers, when not nil, remembers parsed answers (a GroupReader's).
	answers *answerCache
}

// answerCache remembers the answers parsed from recent response texts:
// a study's answers repeat (the same few JSON objects), and parsing is
// a large part of re-scoring. It holds at most maxAnswers texts.
type answerCache map[string]simulator.Answer

const maxAnswers = 4096

// answer returns the answer of line h: too large when the line keeps only
// the first simulator.MaxAnswerBytes bytes of it (ResponseSize), else
// its stored response parsed.
func (g *Group) answer(h *Head) simulator.Answer {
	if h.ResponseSize > simulator.MaxAnswerBytes {
		return simulator.Answer{Reason: simulator.ReasonTooLarge}
	}
	return g.parse(h.Response)
}

// parse returns simulator.ParseAnswer(text), from the cache when it can.
func (g *Group) parse(text string) simulator.Answer {
	if g.answers == nil {
		return simulator.ParseAnswer(text)
	}
	if a, ok := (*g.answers)[text]; ok {
		return a
	}
	a := simulator.ParseAnswer(text)
	if len(*g.answers) >= maxAnswers {
		clear(*g.answers)
	}
	(*g.answers)[text] = a
	return a
}

// Check reports whether the group's turns run 0, 1, … without gaps, and
// only a failed call ends them early.
func (g *Group) Check() error {
	for i, h := range g.Heads {
		if h.Turn != i {
			return fmt.Errorf("decision %s: line %d is turn %d, want turn %d", g.Key, g.Line+i, h.Turn, i)
		}
		if i < len(g.Heads)-1 && h.Error != "" {
			return fmt.Errorf("decision %s: turn %d failed but later turns exist", g.Key, i)
		}
	}
	return nil
}

// Complete reports whether the group is a finished decision under replay
// cap replayCap: its last call failed for good, or its last answer ends
// the trajectory (under live replay: its last line carries the
// environment's outcome). An incomplete group is a decision interrupted
// mid-trajectory.
func (g *Group) Complete(replayCap int) bool {
	if len(g.Heads) == 0 || g.Check() != nil {
		return false
	}
	last := &g.Heads[len(g.Heads)-1]
	if last.Error != "" {
		return true
	}
	if last.Replay != "" {
		return last.Env != nil
	}
	return !simulator.Continues(g.answer(last), last.Turn, replayCap)
}

// Failed reports whether the group's last call failed for good: an error
// decision.
func (g *Group) Failed() bool {
	return len(g.Heads) > 0 && g.Heads[len(g.Heads)-1].Error != ""
}

// Row scores the group into its decisions.parquet row: the one scoring
// path of a decision from its call lines, used by the run, resume, merge
// and analyze. It fails when the turns break the trajectory rules (a gap,
// a failed call before the last, a replay after an answer other than a
// valid retry_now; under live replay, a call after an answer other than a
// valid policy but stop_or_escalate, or no environment outcome at the
// end; lines of both replay modes).
func (g *Group) Row() (Row, error) {
	if len(g.Heads) == 0 {
		return Row{}, fmt.Errorf("decision %s: no call lines", g.Key)
	}
	if err := g.Check(); err != nil {
		return Row{}, err
	}
	h0 := &g.Heads[0]
	last := &g.Heads[len(g.Heads)-1]
	for i := range g.Heads {
		if g.Heads[i].Replay != h0.Replay {
			return Row{}, fmt.Errorf("decision %s: turn 0 has replay %q but turn %d has %q", g.Key, h0.Replay, i, g.Heads[i].Replay)
		}
		if g.Heads[i].Task != h0.Task {
			return Row{}, fmt.Errorf("decision %s: turn 0 has task %q but turn %d has %q", g.Key, h0.Task, i, g.Heads[i].Task)
		}
	}
	switch {
	case h0.Task == "":
		for i := range g.Heads {
			if g.Heads[i].Action != nil {
				return Row{}, fmt.Errorf("decision %s: turn %d carries an action but the decision is not of task %q", g.Key, i, manifests.TaskAct)
			}
		}
	case h0.Task != manifests.TaskAct:
		return Row{}, fmt.Errorf("decision %s: unknown task %q (want %q)", g.Key, h0.Task, manifests.TaskAct)
	case h0.Replay != manifests.ReplayLive:
		return Row{}, fmt.Errorf("decision %s: task %q without live replay", g.Key, h0.Task)
	}
	switch h0.Replay {
	case "":
		if last.Env != nil || bool(last.Result) {
			return Row{}, fmt.Errorf("decision %s: a stored-replay decision carries a live environment's outcome", g.Key)
		}
	case manifests.ReplayLive:
	default:
		return Row{}, fmt.Errorf("decision %s: unknown replay %q (want %q)", g.Key, h0.Replay, manifests.ReplayLive)
	}
	if set := h0.PreferredSet; len(set) > 0 && set[0] != h0.Preferred {
		return Row{}, fmt.Errorf("decision %s: preferred_policies %v does not start with the preferred policy %q", g.Key, set, h0.Preferred)
	}
	if last.Error != "" {
		return errorRow(g.Key, h0.Server, h0.Seed, len(g.Heads), fmt.Sprintf("turn %d: %s", last.Turn, last.Error)), nil
	}
	if h0.Replay == manifests.ReplayLive {
		return g.liveRow()
	}
	answers := make([]simulator.Answer, len(g.Heads))
	for i := range g.Heads {
		answers[i] = g.answer(&g.Heads[i])
		if i < len(g.Heads)-1 && !simulator.Replays(answers[i]) {
			return Row{}, fmt.Errorf("decision %s: turn %d answered %q but a replay followed (only retry_now is replayed)", g.Key, i, g.Heads[i].Response)
		}
	}
	o := simulator.Score(simulator.Scoring{Answers: answers, Preferred: h0.Preferred, Proven: h0.PreferredSet, NonHarm: h0.NonHarm})
	return scoredRow(g.Key, h0.Server, h0.Seed, &o), nil
}

// liveRow scores a live decision that completed. Every answer but the
// last was executed (a valid policy other than stop_or_escalate) and
// followed by a turn; the last was executed too when its line carries the
// result; the last line carries the environment's outcome.
func (g *Group) liveRow() (Row, error) {
	h0 := &g.Heads[0]
	n := len(g.Heads)
	answers := make([]simulator.Answer, n)
	for i := range g.Heads {
		h := &g.Heads[i]
		answers[i] = g.answer(h)
		executable := simulator.Executes(answers[i])
		if i < n-1 && !executable {
			return Row{}, fmt.Errorf("decision %s: turn %d answered %q but a call followed (live replay executes a valid policy other than stop_or_escalate)", g.Key, i, h.Response)
		}
		if i < n-1 && (h.Env != nil || bool(h.Result)) {
			return Row{}, fmt.Errorf("decision %s: turn %d carries the environment's result or outcome but is not the last turn", g.Key, i)
		}
		if i == n-1 && bool(h.Result) && !executable {
			return Row{}, fmt.Errorf("decision %s: turn %d answered %q but carries the result of an executed policy", g.Key, i, h.Response)
		}
		if h0.Task == manifests.TaskAct && (i < n-1 || bool(h.Result)) && (h.Action == nil || !h.Action.Sent || h.Action.Invalid != "") {
			return Row{}, fmt.Errorf("decision %s: turn %d was followed by a result but its line does not record a call sent", g.Key, i)
		}
	}
	invalidAction := false
	if a := g.Heads[n-1].Action; a != nil && a.Invalid != "" {
		if a.Sent || bool(g.Heads[n-1].Result) {
			return Row{}, fmt.Errorf("decision %s: turn %d records a refused call (%s) as sent", g.Key, n-1, a.Invalid)
		}
		invalidAction = true
	}
	last := &g.Heads[n-1]
	if last.Env == nil {
		return Row{}, fmt.Errorf("decision %s: the last line (turn %d) of a live decision lacks the environment's outcome", g.Key, last.Turn)
	}
	executed := n - 1
	if last.Result {
		executed++
	}
	e := last.Env
	o := simulator.Score(simulator.Scoring{Answers: answers, Preferred: h0.Preferred, Proven: h0.PreferredSet, NonHarm: h0.NonHarm, Executed: executed, InvalidAction: invalidAction,
		Env: &simulator.EnvOutcome{Recovered: e.Recovered, Harm: e.Harm, Harms: e.Harms, Calls: e.Calls, ClockMS: e.ClockMS}})
	return scoredRow(g.Key, h0.Server, h0.Seed, &o), nil
}

// ParseGroup decodes b, the lines of one decision as a GroupReader located
// them, into g (whose Heads are reused); d, the bundle's defaults table,
// fills what lines leave out.
func ParseGroup(b []byte, g *Group, d *Defaults) error {
	g.Heads = g.Heads[:0]
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i+1], b[i+1:]
		} else {
			b = nil
		}
		var h Head
		c, err := decodeHead(line, &h, nil)
		if err == nil {
			err = d.fill(&h, c)
		}
		if err != nil {
			return err
		}
		g.Heads = append(g.Heads, h)
	}
	if len(g.Heads) == 0 {
		return errors.New("no call lines")
	}
	g.Key = g.Heads[0].Key
	for i := range g.Heads {
		if g.Heads[i].Key != g.Key {
			return fmt.Errorf("lines of decisions %s and %s are mixed", g.Key, g.Heads[i].Key)
		}
	}
	return g.Check()
}
