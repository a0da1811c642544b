package labenv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// replayCap is the simulator's default cap on extra calls
// (docs/specification.md section 4).
const replayCap = 3

// paperClasses keep the paper's non-harm set ({preferred,
// stop_or_escalate}, docs/specification.md section 1.3) so that the lab's
// label counts compare with the paper's: a replay of a deterministic
// failure is counted as harmful by the Retry column although it changes no
// state.
var paperClasses = map[study.Cause]bool{study.UnknownTool: true, study.InvalidType: true, study.InvalidValue: true, study.AuthRequired: true}

// trajectory starts a decision of sc and executes policy p until a call
// succeeds or the replay cap is reached (none for stop_or_escalate).
func trajectory(t *testing.T, sc *lab.Scenario, p study.Policy, seed int64) (simulator.EnvOutcome, []json.RawMessage) {
	t.Helper()
	ctx := context.Background()
	e := New(sc, seed)
	first, err := e.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	obs := []json.RawMessage{first}
	for turn := 0; p != study.StopOrEscalate && turn < replayCap; turn++ {
		o, more, err := e.Execute(ctx, turn, simulator.Answer{Status: study.Failed, Policy: p, Valid: true})
		if err != nil {
			t.Fatal(err)
		}
		obs = append(obs, o)
		if !more {
			break
		}
	}
	out, err := e.Final(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return out, obs
}

// TestNonHarm checks every scenario's labels against its state: executing
// a policy of the non-harm set (repeated while its call fails, up to the
// replay cap) never harms; executing any other policy harms, except in the
// classes that keep the paper's non-harm set; stop_or_escalate never harms;
// and the preferred policy, unless it is stop, recovers.
func TestNonHarm(t *testing.T) {
	for _, sc := range set(t).Scenarios {
		for _, p := range study.Policies {
			out, _ := trajectory(t, sc, p, 11)
			in := false
			for _, x := range sc.NonHarm {
				in = in || x == p
			}
			switch {
			case in && out.Harm:
				t.Errorf("%s (%s): %s is in the non-harm set but harms", sc.ID, sc.Class, p)
			case !in && !out.Harm && !paperClasses[sc.Class]:
				t.Errorf("%s (%s): %s is outside the non-harm set but harms nothing", sc.ID, sc.Class, p)
			}
			if p == sc.Preferred && p != study.StopOrEscalate && !out.Recovered {
				t.Errorf("%s (%s): the preferred policy %s does not recover", sc.ID, sc.Class, p)
			}
			if out.Calls < 1 || (p == study.StopOrEscalate && out.Calls != 1) {
				t.Errorf("%s %s: %d calls", sc.ID, p, out.Calls)
			}
		}
	}
}

// TestOutcomes pins a few trajectories whose outcome is the point of their
// scenario.
func TestOutcomes(t *testing.T) {
	cases := []struct {
		id        string
		p         study.Policy
		recovered bool
		harm      bool
		calls     int
		clockMS   int64
		lastSays  string
	}{
		{"X01", study.RetryNow, true, false, 2, 0, `"quantity":2`},                     // transient k=1: one replay
		{"X02", study.RetryNow, false, false, 4, 0, "temporarily unavailable"},         // 5 s outage: immediate replays fail
		{"X02", study.RetryLater, true, false, 2, 5000, `"amount_cents":4200`},         // the announced 5 s
		{"X04", study.RetryLater, true, false, 2, 30000, `"invoice_id":"INV-2002"`},    // the announced retry-after
		{"X04", study.RetryNow, false, true, 4, 0, "retry after 30 s"},                 // each violation restarts the window
		{"X05", study.RetryNow, false, true, 4, 0, "locked it for the rest"},           // over budget
		{"X07", study.StopOrEscalate, true, false, 1, 30000, "request timed out"},      // committed: present exactly once
		{"X07", study.RetryNow, false, true, 2, 30000, `"invoice_id":"INV-2001"`},      // the replay duplicates
		{"X08", study.RetryNow, true, false, 2, 30000, `"idempotency_key":"ik-7f3a"`},  // the key dedupes
		{"X10", study.ReviseArguments, true, false, 2, 0, `"applied":2`},               // the remainder only
		{"X10", study.RetryNow, false, true, 2, 0, `"applied":3`},                      // the prefix twice
		{"X16", study.ReviseArguments, true, false, 3, 0, `"note":"leave at door 2"`},  // read, then write
		{"X19", study.Authenticate, true, false, 3, 0, `"invoice_id":"INV-2003"`},      // token, then the call
		{"X23", study.StopOrEscalate, true, false, 1, 0, "0 records were written"},     // the queued charge lands
		{"X23", study.RetryLater, false, true, 2, 1000, `"amount_cents":4200`},         // the default backoff, then a duplicate
		{"X28", study.SelectTool, true, false, 2, 0, `"invoice_id":"INV-2001"`},        // the tool that exists
		{"X36", study.ReviseArguments, true, false, 2, 0, `"path":"/data/ledger.csv"`}, // the corrected path
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s %s", c.id, c.p), func(t *testing.T) {
			sc, ok := set(t).Scenario(c.id)
			if !ok {
				t.Fatalf("no %s", c.id)
			}
			out, obs := trajectory(t, sc, c.p, 5)
			last := string(obs[len(obs)-1])
			if out.Recovered != c.recovered || out.Harm != c.harm || out.Calls != c.calls || out.ClockMS != c.clockMS || !strings.Contains(last, c.lastSays) {
				t.Errorf("%s %s: recovered %v harm %v calls %d clock %d ms, last %s; want %v %v %d %d, %q",
					c.id, c.p, out.Recovered, out.Harm, out.Calls, out.ClockMS, last, c.recovered, c.harm, c.calls, c.clockMS, c.lastSays)
			}
			if !json.Valid(out.State) {
				t.Errorf("%s: state is not JSON", c.id)
			}
		})
	}
}

// TestFactory checks the factory the runner uses: the default and named
// sets, unknown sets and scenarios, and that environments are fresh and
// seeded.
func TestFactory(t *testing.T) {
	ctx := context.Background()
	f, err := Factory("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Factory("nope"); err == nil {
		t.Error("Factory(nope) succeeded")
	}
	if _, err := f.NewEnv(ctx, "S01", 1); err == nil || !strings.Contains(err.Error(), "S01") {
		t.Errorf("NewEnv(S01) = %v", err)
	}
	ids := Scenarios()
	if len(ids) < 30 || ids[0] != "X01" {
		t.Errorf("Scenarios() = %v", ids)
	}
	var states []string
	for _, seed := range []int64{1, 1, 2} {
		e, err := f.NewEnv(ctx, "X19", seed)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.Execute(ctx, 0, simulator.Answer{Policy: study.Authenticate, Status: study.Failed, Valid: true}); err != nil {
			t.Fatal(err)
		}
		out, _ := e.Final(ctx)
		states = append(states, string(out.State))
	}
	if states[0] != states[1] || states[0] == states[2] {
		t.Error("environments are not seeded: the same seed must give the same state, another seed other identifiers")
	}
}

// TestMisuse checks the errors of the adapter: Execute before Start, a
// second Start, stop_or_escalate and invalid answers.
func TestMisuse(t *testing.T) {
	ctx := context.Background()
	sc, _ := set(t).Scenario("X01")
	e := New(sc, 1)
	if _, _, err := e.Execute(ctx, 0, simulator.Answer{Policy: study.RetryNow, Valid: true}); err == nil {
		t.Error("Execute before Start")
	}
	if _, err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Start(ctx); err == nil {
		t.Error("a second Start")
	}
	if _, _, err := e.Execute(ctx, 0, simulator.Answer{Policy: study.StopOrEscalate, Valid: true}); err == nil {
		t.Error("stop_or_escalate executed")
	}
	if _, _, err := e.Execute(ctx, 0, simulator.Answer{Reason: simulator.ReasonNotJSON}); err == nil {
		t.Error("an invalid answer executed")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := e.Execute(cctx, 0, simulator.Answer{Policy: study.RetryNow, Valid: true}); err == nil {
		t.Error("Execute with a cancelled context")
	}
}

func set(t testing.TB) *lab.Set {
	t.Helper()
	s, err := lab.BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// BenchmarkExecute measures what in-process execution adds per executed
// call: one Execute of retry_now, which makes one call, on a decision
// whose calls keep failing (X25, an outage), so the trajectory never ends.
func BenchmarkExecute(b *testing.B) {
	ctx := context.Background()
	sc, _ := set(b).Scenario("X25")
	e := New(sc, 1)
	if _, err := e.Start(ctx); err != nil {
		b.Fatal(err)
	}
	a := simulator.Answer{Policy: study.RetryNow, Status: study.Failed, Valid: true}
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, _, err := e.Execute(ctx, i, a); err != nil {
			b.Fatal(err)
		}
	}
	report(b, cpuTime()-cpu, b.N)
}

// report reports wall and CPU microseconds per call (the CPU time of the
// process, every thread and the collector included, is what the work costs
// when the machine is shared and wall time is not).
func report(b *testing.B, cpu time.Duration, calls int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1000/float64(calls), "µs/call")
	b.ReportMetric(float64(cpu.Nanoseconds())/1000/float64(calls), "cpu-µs/call")
}

// cpuTime returns the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecision measures a whole decision in process, over every
// scenario of the core set: NewEnv, Start (the first call), one Execute
// of retry_now (one call) and Final (settle, predicates, state JSON);
// µs/call is the time divided by the two calls.
func BenchmarkDecision(b *testing.B) {
	ctx := context.Background()
	f, err := Factory("")
	if err != nil {
		b.Fatal(err)
	}
	ids := Scenarios()
	a := simulator.Answer{Policy: study.RetryNow, Status: study.Failed, Valid: true}
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		e, _ := f.NewEnv(ctx, ids[i%len(ids)], int64(i))
		if _, err := e.Start(ctx); err != nil {
			b.Fatal(err)
		}
		if _, _, err := e.Execute(ctx, 0, a); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Final(ctx); err != nil {
			b.Fatal(err)
		}
	}
	report(b, cpuTime()-cpu, 2*b.N)
}

// TestAnswerDelay: a retry_later whose answer gives delay_ms waits that
// long on the lab clock, not the announced retry-after: X02's outage
// lasts 5 s, so a 2 s wait fails again and a 6 s one recovers.
func TestAnswerDelay(t *testing.T) {
	sc, ok := set(t).Scenario("X02")
	if !ok {
		t.Fatal("no X02")
	}
	for _, c := range []struct {
		delay     int64
		recovered bool
		clockMS   int64
	}{{2000, false, 2000}, {6000, true, 6000}, {0, true, 5000}} {
		t.Run(fmt.Sprintf("delay_ms %d", c.delay), func(t *testing.T) {
			ctx := context.Background()
			e := New(sc, 5)
			if _, err := e.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if _, _, err := e.Execute(ctx, 0, simulator.Answer{Status: study.Failed, Policy: study.RetryLater, Valid: true, DelayMS: c.delay}); err != nil {
				t.Fatal(err)
			}
			out, err := e.Final(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if out.Recovered != c.recovered || out.ClockMS != c.clockMS {
				t.Errorf("delay_ms %d: recovered %v after %d ms; want %v after %d", c.delay, out.Recovered, out.ClockMS, c.recovered, c.clockMS)
			}
		})
	}
}
