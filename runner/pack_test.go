package runner

import (
	"context"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/internal/testserver/fakeenv"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

type answerAll string

func (a answerAll) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	return models.Reply{Text: string(a)}, nil
}

// TestPackRoundTrip: the packed outcome of a decision, stored or live,
// rebuilds its row; numbers that do not fit are read back instead.
func TestPackRoundTrip(t *testing.T) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	s := &m.Corpus.Scenarios[1]
	key := simulator.Key{Model: "m", Prompt: "default", Condition: study.Normalized, Scenario: s.ID, Replicate: 3}
	for _, tc := range []struct {
		name   string
		answer string
		env    simulator.EnvFactory
	}{
		{"stored retries", `{"operation_status": "succeeded", "recovery_policy": "retry_now"}`, nil},
		{"stored invalid", `no`, nil},
		{"live duplicate", `{"operation_status": "failed", "recovery_policy": "revise_arguments", "delay_ms": 9}`, fakeenv.New(m.Corpus.Scenarios, nil, fakeenv.Spec{Kind: fakeenv.Committed})},
		{"live retry later", `{"operation_status": "succeeded", "recovery_policy": "retry_later"}`, fakeenv.New(m.Corpus.Scenarios, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 9})},
		{"live stop", `{"operation_status": "failed", "recovery_policy": "stop_or_escalate"}`, fakeenv.New(m.Corpus.Scenarios, nil, fakeenv.Spec{Kind: fakeenv.Committed})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := simulator.Run(context.Background(), answerAll(tc.answer), p, s, key, simulator.Config{StudySeed: 1, ReplayCap: 3, Env: tc.env})
			if d.Err != nil {
				t.Fatal(d.Err)
			}
			o := pack(&d)
			want := results.RowOf(&d)
			got := o.row(key, s.Server, d.Turns[0].Request.Seed)
			if !o.ok || got != want || got.Lab() != (tc.env != nil) {
				t.Errorf("packed %+v rebuilds %+v, want %+v", o, got, want)
			}
		})
	}
	// A lab time beyond 32 bits is read back.
	d := simulator.Run(context.Background(), answerAll(`{"operation_status": "failed", "recovery_policy": "stop_or_escalate"}`), p, s, key,
		simulator.Config{ReplayCap: 3, Env: fakeenv.New(m.Corpus.Scenarios, nil, fakeenv.Spec{Kind: fakeenv.Committed})})
	d.Outcome.Values.Set(simulator.LabMS, 1<<32)
	if o := pack(&d); o.ok {
		t.Errorf("a lab time of 2^32 ms packed as %+v", o)
	}
}
