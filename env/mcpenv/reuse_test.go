package mcpenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/baseline"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestReuseEquivalent: on every scenario of every reference server, a
// decision on a reused process, one that has just served other decisions
// (writes included; on server-everything, calls of its stateless tools
// and of tools it does not list) and had its sandbox emptied, is the same
// as on a fresh process: every turn's observation, the outcome and the
// final state, for the writing baselines. It also times both ways.
func TestReuseEquivalent(t *testing.T) {
	mods := modules(t)
	set, err := BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	recs := records(t, set, mods)
	p := actPrompt(t)
	fresh := Factory(set, Options{Modules: mods, CallTimeout: loadedTimeout})
	reuse := Factory(set, Options{Modules: mods, Reuse: true, CallTimeout: loadedTimeout})
	defer reuse.(io.Closer).Close()
	var tFresh, tReuse time.Duration
	n := 0
	for _, kind := range []string{baseline.SchemaRepair, baseline.NaiveRetry} {
		m, err := models.New(models.Spec{Name: kind, Backend: baseline.Backend, Model: kind})
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range set.Scenarios {
			key := simulator.Key{Model: kind, Prompt: "act", Condition: study.Normalized, Scenario: sc.ID, Replicate: 1}
			cfg := func(f simulator.EnvFactory) simulator.Config {
				return simulator.Config{StudySeed: 1, ReplayCap: 3, Env: f, Task: simulator.Act}
			}
			start := time.Now()
			a := simulator.Run(context.Background(), m, p, recs[sc.ID], key, cfg(fresh))
			tFresh += time.Since(start)
			start = time.Now()
			b := simulator.Run(context.Background(), m, p, recs[sc.ID], key, cfg(reuse))
			tReuse += time.Since(start)
			n++
			if a.Err != nil || b.Err != nil {
				t.Fatalf("%s %s: fresh %v, reused %v", kind, sc.ID, a.Err, b.Err)
			}
			if len(a.Turns) != len(b.Turns) {
				t.Fatalf("%s %s: %d turns fresh, %d reused", kind, sc.ID, len(a.Turns), len(b.Turns))
			}
			for i := range a.Turns {
				if !bytes.Equal(a.Turns[i].Result, b.Turns[i].Result) || !bytes.Equal(a.Turns[i].Observation, b.Turns[i].Observation) {
					t.Errorf("%s %s turn %d: fresh and reused observations differ:\n%s\n%s", kind, sc.ID, i, a.Turns[i].Observation, b.Turns[i].Observation)
				}
			}
			ja, _ := json.Marshal(a.Outcome)
			jb, _ := json.Marshal(b.Outcome)
			if !bytes.Equal(ja, jb) || !bytes.Equal(a.Env.State, b.Env.State) {
				t.Errorf("%s %s: fresh and reused outcomes differ:\n%s %s\n%s %s", kind, sc.ID, ja, a.Env.State, jb, b.Env.State)
			}
		}
	}
	f := reuse.(*factory)
	kept := 0
	for _, q := range f.pool.idle {
		kept += len(q)
	}
	if kept != 3 { // one process of each server served them all
		t.Errorf("%d processes kept, want 2", kept)
	}
	t.Logf("%d decisions: fresh processes %v, reused %v", n, tFresh.Round(time.Millisecond), tReuse.Round(time.Millisecond))
}

// actPrompt parses the built-in prompt of the action task.
func actPrompt(t testing.TB) *conditions.Prompt {
	t.Helper()
	raw, err := fs.ReadFile(manifests.Builtin, "prompts/act.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt("act", "act.tmpl", string(raw))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReusableAfter: a process that keeps state (server-everything) is
// reused only after a decision whose calls named its stateless tools or
// tools it does not list; the reset servers always are.
func TestReusableAfter(t *testing.T) {
	listed := func(tool string) bool {
		return slices.Contains([]string{"echo", "get-sum", "toggle-simulated-logging"}, tool)
	}
	calls := func(tools ...string) []callRecord {
		var cs []callRecord
		for _, tool := range tools {
			cs = append(cs, callRecord{Tool: tool})
		}
		return cs
	}
	for _, tc := range []struct {
		server string
		calls  []callRecord
		want   bool
	}{
		{"everything", calls("echo", "get-sum"), true},
		{"everything", calls("echo", "no-such-tool"), true},
		{"everything", calls("echo", "toggle-simulated-logging"), false},
		{"everything", nil, true},
		{"memory", calls("toggle-simulated-logging"), true},
		{"filesystem", calls("write_file"), true},
	} {
		t.Run(fmt.Sprintf("%s after %v", tc.server, tc.calls), func(t *testing.T) {
			if got := Servers[tc.server].reusable(tc.calls, listed); got != tc.want {
				t.Errorf("%s after %v: reusable %v, want %v", tc.server, tc.calls, got, tc.want)
			}
		})
	}

	// On the real server: a decision that toggles the simulated logging
	// leaves its process stopped, one that only echoes leaves it kept.
	_, _, f := reusingFactory(t)
	idle := func() int { return len(f.(*factory).pool.idle["everything"]) }
	for _, tc := range []struct {
		tool string
		args string
		kept int
	}{{"toggle-simulated-logging", `{}`, 0}, {"echo", `{"message":"hi"}`, 1}, {"toggle-simulated-logging", `{}`, 0}} {
		t.Run(fmt.Sprintf("after a decision that calls %s", tc.tool), func(t *testing.T) {
			env, err := f.NewEnv(context.Background(), "R15", 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := env.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, _, err := env.(simulator.Actor).Send(context.Background(), 1, simulator.ToolCall{Tool: tc.tool, Arguments: json.RawMessage(tc.args)}, 0); err != nil {
				t.Fatal(err)
			}
			if err := env.(io.Closer).Close(); err != nil {
				t.Fatal(err)
			}
			if got := idle(); got != tc.kept {
				t.Errorf("after a decision that called %s: %d everything processes kept, want %d", tc.tool, got, tc.kept)
			}
		})
	}
}
