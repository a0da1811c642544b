package labenv

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/baseline"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// actPrompt loads the shipped action prompt.
func actPrompt(t testing.TB) *conditions.Prompt {
	t.Helper()
	text, err := fs.ReadFile(manifests.Builtin, "prompts/act.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt("act", "act.tmpl", string(text))
	if err != nil {
		t.Fatal(err)
	}
	if !p.ShowsTools() {
		t.Fatal("act.tmpl does not show .Tools and .Call")
	}
	return p
}

// studyScenario is the corpus record of lab scenario sc that the
// simulator needs: its observation is the first call's, from a lab.
func studyScenario(t testing.TB, sc *lab.Scenario) *study.Scenario {
	t.Helper()
	e := New(sc, 1)
	obs, err := e.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &study.Scenario{ID: sc.ID, Server: sc.Server, Observation: obs, Preferred: sc.Preferred, NonHarm: sc.NonHarm}
}

// actCounts runs baseline kind on every scenario of the core set under
// task act and returns per class "recovered/harm/invalid_action/calls",
// followed by the decisions per kind of harm when there is harm
// ("0/3/0/12(collateral:3)").
func actCounts(t *testing.T, kind string) (map[study.Cause]string, []simulator.Decision) {
	t.Helper()
	set, err := lab.BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Factory("")
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.New(models.Spec{Name: kind, Backend: baseline.Backend, Model: kind})
	if err != nil {
		t.Fatal(err)
	}
	p := actPrompt(t)
	type agg struct {
		rec, harm, inv, calls int
		kinds                 map[statediff.Kind]int
	}
	per := map[study.Cause]*agg{}
	var ds []simulator.Decision
	for _, sc := range set.Scenarios {
		s := studyScenario(t, sc)
		key := simulator.Key{Model: kind, Prompt: "act", Condition: study.Normalized, Scenario: sc.ID, Replicate: 1}
		d := simulator.Run(context.Background(), m, p, s, key, simulator.Config{StudySeed: 7, ReplayCap: replayCap, Env: f, Task: simulator.Act})
		if d.Err != nil {
			t.Fatalf("%s: %v", sc.ID, d.Err)
		}
		a := per[sc.Class]
		if a == nil {
			a = &agg{kinds: map[statediff.Kind]int{}}
			per[sc.Class] = a
		}
		o := d.Outcome
		a.rec += b2i(o.Values.Of(simulator.Recovered))
		a.harm += b2i(o.Values.Of(simulator.Harm))
		a.inv += b2i(o.Values.Of(simulator.InvalidAction))
		a.calls += int(o.Values.Value(simulator.Calls))
		for _, k := range statediff.Kinds {
			if o.Values.Of(simulator.HarmColumns[k]) {
				a.kinds[k]++
			}
		}
		ds = append(ds, d)
	}
	out := map[study.Cause]string{}
	for c, a := range per {
		out[c] = fmt.Sprintf("%d/%d/%d/%d", a.rec, a.harm, a.inv, a.calls)
		var ks []string
		for _, k := range statediff.Kinds {
			if a.kinds[k] > 0 {
				ks = append(ks, fmt.Sprintf("%s:%d", k, a.kinds[k]))
			}
		}
		if len(ks) > 0 {
			out[c] += "(" + strings.Join(ks, ",") + ")"
		}
	}
	return out, ds
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func format(m map[study.Cause]string) string {
	var ks []string
	for k, v := range m {
		ks = append(ks, string(k)+"="+v)
	}
	sort.Strings(ks)
	return strings.Join(ks, " ")
}

// TestActBaselines pins, per fault class of the core set, what each
// acting baseline's calls did to the lab's state under task act
// (recovered/harm/invalid_action/calls over the class's scenarios,
// condition normalized, replay cap 3).
func TestActBaselines(t *testing.T) {
	want := map[string]string{
		baseline.AlwaysStop: "authentication=0/0/0/3 idempotency=3/0/0/3 invalid_type=0/0/0/3 invalid_value=0/0/0/3 locked=0/0/0/3 partial_commit=0/0/0/3 " +
			"rate_limit=0/0/0/4 silent_noop=1/0/0/3 stale_revision=0/0/0/3 timeout_committed=3/0/0/3 transient=0/0/0/3 unknown_tool=0/0/0/3 upstream_outage=0/0/0/3",
		baseline.NaiveRetry: "authentication=0/0/0/12 idempotency=2/1/0/6(duplicate:1) invalid_type=0/0/0/12 invalid_value=0/0/0/12 locked=0/0/0/12 partial_commit=1/2/0/6(duplicate:2) " +
			"rate_limit=0/4/0/16(collateral:4) silent_noop=1/1/0/8(duplicate:1) stale_revision=0/0/0/12 timeout_committed=1/2/0/6(duplicate:2) transient=2/0/0/9 unknown_tool=0/0/0/12 upstream_outage=0/0/0/12",
		baseline.SchemaRepair: "authentication=0/0/0/3 idempotency=3/0/0/3 invalid_type=1/2/0/6(wrong_value:2) invalid_value=0/1/0/4(wrong_value:1) locked=0/0/0/3 partial_commit=0/0/0/3 " +
			"rate_limit=0/0/0/4 silent_noop=1/0/0/3 stale_revision=0/0/0/3 timeout_committed=3/0/0/3 transient=0/0/0/3 unknown_tool=3/0/0/6 upstream_outage=0/0/0/3",
	}
	want[baseline.ReplaySame] = want[baseline.NaiveRetry] // the same client under the name
	for _, kind := range []string{baseline.AlwaysStop, baseline.NaiveRetry, baseline.ReplaySame, baseline.SchemaRepair} {
		c, ds := actCounts(t, kind)
		if got := format(c); got != want[kind] {
			t.Errorf("%s:\n got %s\nwant %s", kind, got, want[kind])
		}
		for _, d := range ds {
			for _, tu := range d.Turns {
				if a := tu.Action; a != nil && (a.Invalid != "") == a.Sent {
					t.Errorf("%s %s turn %d: action %+v", kind, d.Key.Scenario, tu.Index, a)
				}
			}
		}
	}
	// The oracle's calls, as sent: the closest tool for an unknown one,
	// types coerced, ranges clamped.
	_, ds := actCounts(t, baseline.SchemaRepair)
	sent := map[string]string{}
	for _, d := range ds {
		if a := d.Turns[0].Action; a != nil {
			sent[d.Key.Scenario] = a.Tool + string(a.Arguments)
		}
	}
	for id, call := range map[string]string{
		"X28": `charge_payment{"amount_cents":4200,"currency":"EUR","invoice_id":"INV-2001"}`,
		"X29": `create_order{"customer":"C-23","quantity":4,"sku":"SKU-RED"}`,
		"X31": `create_order{"customer":"C-17","quantity":2,"sku":"SKU-RED"}`,
		"X35": `create_order{"customer":"C-17","quantity":1,"sku":"SKU-RED"}`,
	} {
		t.Run(id, func(t *testing.T) {
			if sent[id] != call {
				t.Errorf("%s: sent %s, want %s", id, sent[id], call)
			}
		})
	}
	if len(sent) != 7 {
		t.Errorf("the oracle acted on %d scenarios, want 7 (3 unknown tools, 3 invalid types, 1 out-of-range value): %v", len(sent), sent)
	}
}

// TestActSendsWhatIsRecorded: every call the lab received during a task
// act decision is the call the decision records, in order (the lab's own
// call log against the actions).
func TestActSendsWhatIsRecorded(t *testing.T) {
	set, err := lab.BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := set.Scenario("X31")
	e := New(sc, 3)
	ctx := context.Background()
	if _, err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tools, err := e.Tools(ctx)
	if err != nil || len(tools) == 0 {
		t.Fatal(tools, err)
	}
	if e.First().Tool != "create_order" {
		t.Errorf("first %+v", e.First())
	}
	obs, more, err := e.Send(ctx, 0, simulator.ToolCall{Tool: "create_order", Arguments: []byte(`{"customer":"C-17","sku":"SKU-RED","quantity":2}`)}, 0)
	if err != nil || more || !strings.Contains(string(obs), `"isError": false`) && !strings.Contains(string(obs), `"isError":false`) {
		t.Errorf("send: %s %v %v", obs, more, err)
	}
	o, _ := e.Final(ctx)
	if !o.Recovered || o.Harm || o.Calls != 2 {
		t.Errorf("outcome %+v", o)
	}
	if !strings.Contains(string(o.State), `"tool":"create_order"`) {
		t.Errorf("the lab's call log lacks the call: %s", o.State)
	}
}
