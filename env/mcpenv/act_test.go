package mcpenv

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/baseline"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// records makes the corpus record the simulator needs of every scenario:
// its observation is the first call's, from a real server.
func records(t *testing.T, set *Set, mods string) map[string]*study.Scenario {
	t.Helper()
	out := map[string]*study.Scenario{}
	var mu sync.Mutex
	each(t, set, func(sc *Scenario) error {
		e := New(sc, Options{Modules: mods, CallTimeout: loadedTimeout})
		defer e.Close()
		obs, err := e.Start(context.Background())
		if err != nil {
			return err
		}
		mu.Lock()
		out[sc.ID] = &study.Scenario{ID: sc.ID, Server: sc.Server, Observation: obs, Preferred: sc.Preferred, NonHarm: sc.NonHarm}
		mu.Unlock()
		return nil
	})
	return out
}

// each runs fn on every scenario, four at a time.
func each(t *testing.T, set *Set, fn func(*Scenario) error) {
	t.Helper()
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	errs := make([]error, len(set.Scenarios))
	for i, sc := range set.Scenarios {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = fn(sc)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestActBaselines runs the acting baselines through the simulator on
// every reference scenario, each decision on its own server, and pins
// per class recovered/harm/invalid_action/calls; every call a server
// received is a call the decision recorded as sent, in order.
func TestActBaselines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 80 Node servers")
	}
	mods := modules(t)
	set, err := BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	recs := records(t, set, mods)
	p := actPrompt(t)
	want := map[string]string{
		baseline.AlwaysStop:   "invalid_type=0/0/0/8 invalid_value=0/0/0/3 missing_field=0/0/0/3 unknown_tool=0/0/0/6",
		baseline.NaiveRetry:   "invalid_type=0/0/0/32 invalid_value=0/0/0/12 missing_field=0/0/0/12 unknown_tool=0/0/0/24",
		baseline.SchemaRepair: "invalid_type=3/0/0/11 invalid_value=0/0/0/4 missing_field=0/0/0/3 unknown_tool=5/0/1/11",
	}
	want[baseline.ReplaySame] = want[baseline.NaiveRetry] // the same client under the name
	for _, kind := range []string{baseline.AlwaysStop, baseline.NaiveRetry, baseline.ReplaySame, baseline.SchemaRepair} {
		m, err := models.New(models.Spec{Name: kind, Backend: baseline.Backend, Model: kind})
		if err != nil {
			t.Fatal(err)
		}
		f := &recording{EnvFactory: Factory(set, Options{Modules: mods, CallTimeout: loadedTimeout})}
		var mu sync.Mutex
		per := map[study.Cause]*[4]int{}
		each(t, set, func(sc *Scenario) error {
			key := simulator.Key{Model: kind, Prompt: "act", Condition: study.Normalized, Scenario: sc.ID, Replicate: 1}
			d := simulator.Run(context.Background(), m, p, recs[sc.ID], key, simulator.Config{StudySeed: 1, ReplayCap: 3, Env: f, Task: simulator.Act})
			if d.Err != nil {
				return fmt.Errorf("%s %s: %w", kind, sc.ID, d.Err)
			}
			var sent []string
			for _, tu := range d.Turns {
				if a := tu.Action; a != nil && a.Sent {
					sent = append(sent, a.Tool+" "+string(a.Arguments))
				}
			}
			var got []string
			for _, c := range f.calls(sc.ID)[1:] { // the first failing call is Start's
				got = append(got, c.Tool+" "+string(c.Arguments))
			}
			if strings.Join(sent, "\n") != strings.Join(got, "\n") {
				return fmt.Errorf("%s %s: recorded %q, the server received %q", kind, sc.ID, sent, got)
			}
			mu.Lock()
			defer mu.Unlock()
			a := per[sc.Class]
			if a == nil {
				a = &[4]int{}
				per[sc.Class] = a
			}
			o := d.Outcome
			a[0] += b2i(o.Values.Of(simulator.Recovered))
			a[1] += b2i(o.Values.Of(simulator.Harm))
			a[2] += b2i(o.Values.Of(simulator.InvalidAction))
			a[3] += int(o.Values.Value(simulator.Calls))
			return nil
		})
		var ks []string
		for c, a := range per {
			ks = append(ks, fmt.Sprintf("%s=%d/%d/%d/%d", c, a[0], a[1], a[2], a[3]))
		}
		sort.Strings(ks)
		if got := strings.Join(ks, " "); got != want[kind] {
			t.Errorf("%s:\n got %s\nwant %s", kind, got, want[kind])
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// recording keeps the environments it makes, to read their calls.
type recording struct {
	simulator.EnvFactory
	mu   sync.Mutex
	envs map[string]*Env
}

func (r *recording) NewEnv(ctx context.Context, scenario string, seed int64) (simulator.Environment, error) {
	e, err := r.EnvFactory.NewEnv(ctx, scenario, seed)
	if err == nil {
		r.mu.Lock()
		if r.envs == nil {
			r.envs = map[string]*Env{}
		}
		r.envs[scenario] = e.(*Env)
		r.mu.Unlock()
	}
	return e, err
}

func (r *recording) calls(scenario string) []callRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.envs[scenario].calls
}
