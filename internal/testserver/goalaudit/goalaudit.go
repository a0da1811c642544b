// Package goalaudit runs hostile call sequences against a scenario's
// environment: a recovery carried out as live replay carries it out,
// then calls of the test's own that damage what the recovery left (a
// created record changed, an appended line moved), and the outcome read
// from the final state. The tests of the goal rules (every goal checked
// whole) use it on the lab and on the reference MCP servers.
package goalaudit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// Calls builds the hostile calls from the state the recovery left (the
// environment's state document, decoded).
type Calls func(state map[string]any) []simulator.ToolCall

// Run starts scenario id in a fresh environment of f seeded with seed,
// carries out policy p as live replay does (again while its call fails,
// at most replayCap times; nothing when p is ""), reads the state, sends
// the calls calls makes of it, one after the other with no wait, and
// returns the outcome of the final state. A hostile call that fails is
// an error naming it and what the server said: the damage it was to do
// was not done.
func Run(ctx context.Context, f simulator.EnvFactory, id string, seed int64, replayCap int, p study.Policy, calls Calls) (simulator.EnvOutcome, error) {
	env, err := f.NewEnv(ctx, id, seed)
	if err != nil {
		return simulator.EnvOutcome{}, err
	}
	if c, ok := env.(io.Closer); ok {
		defer c.Close()
	}
	actor, ok := env.(simulator.Actor)
	if !ok {
		return simulator.EnvOutcome{}, fmt.Errorf("scenario %s: the environment cannot send calls of its own", id)
	}
	if _, err := env.Start(ctx); err != nil {
		return simulator.EnvOutcome{}, err
	}
	t := 0
	if p != "" {
		a := simulator.Answer{Status: study.Failed, Policy: p, Valid: true}
		for ; simulator.ContinuesLive(a, t, replayCap); t++ {
			_, more, err := env.Execute(ctx, t, a)
			if err != nil {
				return simulator.EnvOutcome{}, err
			}
			if !more {
				t++
				break
			}
		}
	}
	mid, err := env.Final(ctx)
	if err != nil {
		return simulator.EnvOutcome{}, err
	}
	var state map[string]any
	if err := json.Unmarshal(mid.State, &state); err != nil {
		return simulator.EnvOutcome{}, fmt.Errorf("scenario %s: the state: %w", id, err)
	}
	for _, c := range calls(state) {
		obs, failed, err := actor.Send(ctx, t, c, 0)
		if err != nil {
			return simulator.EnvOutcome{}, err
		}
		if failed {
			return simulator.EnvOutcome{}, fmt.Errorf("scenario %s: the hostile call %s %s failed: %.300s", id, c.Tool, c.Arguments, obs)
		}
		t++
	}
	return env.Final(ctx)
}

// Call returns the call of tool with args, encoded.
func Call(tool string, args map[string]any) simulator.ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err) // the tests' own plain values
	}
	return simulator.ToolCall{Tool: tool, Arguments: b}
}
