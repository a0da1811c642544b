package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpstress/stress/failclosed"
	"github.com/mcpstress/stress/scenario"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

func coreSet(t testing.TB) *Set {
	t.Helper()
	s, err := BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCoreSet checks the shape of the embedded core set: at least 30
// scenarios, every class at least twice, at least 3 servers, each class on
// at least two servers where it has three scenarios.
func TestCoreSet(t *testing.T) {
	s := coreSet(t)
	if s.Name != "core" || len(s.Scenarios) < 30 {
		t.Fatalf("set %q has %d scenarios, want core with 30 or more", s.Name, len(s.Scenarios))
	}
	perClass := map[study.Cause]int{}
	servers := map[string]int{}
	classServers := map[study.Cause]map[string]bool{}
	for _, sc := range s.Scenarios {
		perClass[sc.Class]++
		servers[sc.Server]++
		if classServers[sc.Class] == nil {
			classServers[sc.Class] = map[string]bool{}
		}
		classServers[sc.Class][sc.Server] = true
	}
	for _, c := range Classes {
		if perClass[c] < 2 {
			t.Errorf("class %s has %d scenarios, want 2 or more", c, perClass[c])
		}
		if len(classServers[c]) < 2 {
			t.Errorf("class %s is on %d servers, want 2 or more", c, len(classServers[c]))
		}
	}
	if len(servers) < 3 {
		t.Errorf("%d servers, want 3 or more", len(servers))
	}
	ids := map[string]bool{}
	for _, id := range s.IDs() {
		if ids[id] {
			t.Errorf("id %s twice", id)
		}
		ids[id] = true
	}
	if sc, ok := s.Scenario("X04"); !ok || sc.Class != study.RateLimit {
		t.Errorf("Scenario(X04) = %v, %v", sc, ok)
	}
	if _, err := BuiltinSet("nope"); err == nil || !strings.Contains(err.Error(), "core") {
		t.Errorf("BuiltinSet(nope) = %v, want an error listing the sets", err)
	}
}

// TestPreferredPolicies: the policy Strict credits in each scenario is one
// of its class's preferred policies (the vocabulary row's first guess,
// docs/specification.md section 7; TestExecutionTable proves the rest), and
// a replay after a committed write is preferred only with an idempotency
// key.
func TestPreferredPolicies(t *testing.T) {
	for _, sc := range coreSet(t).Scenarios {
		info, _ := sc.Class.Info()
		if !slices.Contains(info.Preferred, sc.Preferred) {
			t.Errorf("%s (%s): preferred %s, want one of the class's %v", sc.ID, sc.Class, sc.Preferred, info.Preferred)
		}
		if sc.Preferred == study.RetryNow && info.SideEffects == study.Committed && !strings.Contains(string(sc.Args), "idempotency_key") {
			t.Errorf("%s: a replay after a committed write is preferred only with an idempotency key", sc.ID)
		}
	}
}

// good is a valid scenario file; bad-input cases edit one field of it.
const good = `{"description": "test", "scenarios": [
 {"id": "T1", "server": "L02", "class": "transient", "summary": "fails once",
  "tool": "charge_payment", "args": {"invoice_id": "INV-2001", "amount_cents": 4200, "currency": "EUR"},
  "fault": {"k": 1}, "surface": "tool_error", "contract": true,
  "preferred_policies": ["retry_now"], "non_harm": ["retry_now", "stop_or_escalate"], "rationale": "r",
  "policies": {"revise_arguments": {"calls": [{"same": true, "set": {"amount_cents": 1}}]},
               "select_tool": {"calls": [{"tool": "list_payments", "args": {}}]}},
  "goal": [{"create": "/payments", "values": {"invoice_id": "INV-2001", "amount_cents": 4200, "currency": "EUR"}, "target": ["invoice_id"], "why": "charged once"}],
  "tolerate": [{"create": "/tokens", "why": "a token"}],
  "harm": [{"count": "/calls", "where": {"tool": "refund_payment"}, "op": "gt", "n": 0, "why": "a refund was asked for", "kind": "collateral"}]}]}`

// TestBadInput checks that a scenario file with a mistake is refused at
// load time, naming the file, the scenario and the field.
func TestBadInput(t *testing.T) {
	if _, err := load(good); err != nil {
		t.Fatalf("the good file does not load: %v", err)
	}
	cases := []struct {
		name, old, new string
		field, says    string
	}{
		{"unknown fault class", `"class": "transient"`, `"class": "flaky"`, "class", "unknown fault class"},
		{"impossible schedule k < 0", `"k": 1`, `"k": -1`, "fault.k", "impossible schedule"},
		{"impossible schedule k = 0", `"k": 1`, `"k": 0`, "fault.k", "impossible schedule"},
		{"predicate on a missing path", `"count": "/calls", "where": {"tool": "refund_payment"}`, `"count": "/charges", "where": {"tool": "refund_payment"}`, "harm[0].count", "does not exist"},
		{"predicate on a missing value", `"count": "/calls", "where": {"tool": "refund_payment"}, "op": "gt", "n": 0`, `"value": "/invoices/INV-9999/currency", "is": "EUR"`, "harm[0].value", "does not exist"},
		{"predicate on a missing field", `"where": {"tool": "refund_payment"}`, `"where": {"tol": "refund_payment"}`, "harm[0].where.tol", "no field tol"},
		{"harm check of an unknown kind", `"kind": "collateral"`, `"kind": "mess"`, "harm[0].kind", "unknown kind of harm"},
		{"no goal", `"goal": [{"create": "/payments", "values": {"invoice_id": "INV-2001", "amount_cents": 4200, "currency": "EUR"}, "target": ["invoice_id"], "why": "charged once"}],`, ``, "goal", "name the goal effect"},
		{"goal on a record the initial state lacks", `{"create": "/payments", "values": {"invoice_id": "INV-2001", "amount_cents": 4200, "currency": "EUR"}, "target": ["invoice_id"], "why": "charged once"}`, `{"update": "/invoices", "key": "INV-9999", "values": {"currency": "USD"}, "why": "w"}`, "goal[0].key", "no record \"INV-9999\""},
		{"goal on a field the records lack", `"values": {"invoice_id": "INV-2001", "amount_cents": 4200, "currency": "EUR"}`, `"values": {"invoice_id": "INV-2001", "cents": 4200, "currency": "EUR"}`, "goal[0].values.cents", "no field cents"},
		{"create goal that leaves a field undeclared", `"amount_cents": 4200, "currency": "EUR"}, "target"`, `"amount_cents": 4200}, "target"`, "goal[0].values.currency", "not declared"},
		{"goal on a collection the state lacks", `{"create": "/payments",`, `{"create": "/charges",`, "goal[0].create", "not a collection"},
		{"tolerance hiding the goal", `"tolerate": [{"create": "/tokens", "why": "a token"}]`, `"tolerate": [{"create": "/payments", "why": "any charge"}]`, "tolerate[0]", "hide the goal effect"},
		{"tolerance of an unknown collection", `"tolerate": [{"create": "/tokens", "why": "a token"}]`, `"tolerate": [{"create": "/audit", "why": "an audit line"}]`, "tolerate[0].create", "not a collection"},
		{"tool the domain lacks", `"tool": "charge_payment"`, `"tool": "charge_card"`, "tool", "has no tool"},
		{"tool of another server", `"tool": "charge_payment"`, `"tool": "create_order"`, "tool", "has no tool"},
		{"action tool the domain lacks", `"tool": "list_payments"`, `"tool": "list_charges"`, "policies.select_tool.calls[0].tool", "has no tool"},
		{"unknown server", `"server": "L02"`, `"server": "L09"`, "server", "unknown server"},
		{"unknown field", `"summary": "fails once"`, `"summary": "fails once", "colour": "red"`, "colour", "unknown field"},
		{"parameter of another class", `"k": 1`, `"k": 1, "window_ms": 10`, "fault.window_ms", "takes no parameter"},
		{"missing parameter", `"fault": {"k": 1}`, `"fault": {}`, "fault.k", "exactly one of k and for_ms"},
		{"surface the class lacks", `"class": "transient"`, `"class": "silent_noop"`, "surface", "not served as tool_error"},
		{"contract on a success-shaped result", `"surface": "tool_error"`, `"surface": "success_shaped"`, "contract", "rides only"},
		{"non-harm set without stop", `"non_harm": ["retry_now", "stop_or_escalate"]`, `"non_harm": ["retry_now"]`, "non_harm", "stop_or_escalate"},
		{"unknown policy", `"preferred_policies": ["retry_now"]`, `"preferred_policies": ["retry"]`, "preferred_policies[0]", "unknown policy"},
		{"no preferred policy", `"preferred_policies": ["retry_now"]`, `"preferred_policies": []`, "preferred_policies", "name the preferred"},
		{"a preferred policy outside the non-harm set", `"preferred_policies": ["retry_now"]`, `"preferred_policies": ["retry_now", "retry_later"]`, "non_harm", "retry_later is missing"},
		{"missing select_tool", `"select_tool": {"calls": [{"tool": "list_payments", "args": {}}]}`, `"authenticate": {"calls": [{"tool": "list_payments", "args": {}}]}`, "policies.select_tool", "say what"},
		{"reference to a later call", `"set": {"amount_cents": 1}`, `"set": {"amount_cents": {"$from": 0, "$pointer": "/id"}}`, "policies.revise_arguments.calls[0].set.amount_cents", "earlier call"},
		{"first call failing with another class", `"amount_cents": 4200, "currency": "EUR"}`, `"amount_cents": "4200", "currency": "EUR"}`, "args", "fails with invalid_type, not transient"},
		{"partial commit past the batch", `"class": "transient", "summary": "fails once",
  "tool": "charge_payment", "args": {"invoice_id": "INV-2001", "amount_cents": 4200, "currency": "EUR"},
  "fault": {"k": 1}`, `"class": "partial_commit", "summary": "fails once",
  "tool": "charge_batch", "args": {"charges": [{"invoice_id": "INV-2001", "amount_cents": 4200, "currency": "EUR"}]},
  "fault": {"at": 1}`, "fault.at", "impossible schedule"},
		{"malformed JSON", `"id": "T1",`, `"id": "T1"`, "", "line 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(good, c.old) {
				t.Fatalf("the good file has no %s", c.old)
			}
			_, err := load(strings.Replace(good, c.old, c.new, 1))
			if err == nil {
				t.Fatal("loaded")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "dir/bad.json") {
				t.Errorf("error does not name the file: %s", msg)
			}
			var le *scenario.Error
			if !errors.As(err, &le) {
				t.Fatalf("not a *scenario.Error: %v", err)
			}
			if c.field != "" {
				if le.Index != 1 || le.ID != "T1" || !strings.Contains(msg, "scenario 1 (T1)") {
					t.Errorf("error does not name scenario 1 (T1): %s", msg)
				}
				if le.Field != c.field || !strings.Contains(msg, "field "+c.field+":") {
					t.Errorf("field %q, want %q: %s", le.Field, c.field, msg)
				}
			}
			if !strings.Contains(msg, c.says) {
				t.Errorf("error %q does not say %q", msg, c.says)
			}
		})
	}
	t.Run("data after the object", func(t *testing.T) {
		for _, tail := range []string{"garbage]]]", "}}", `{"scenarios": []}`} {
			_, err := load(good + "\n" + tail)
			if err == nil || !strings.HasPrefix(err.Error(), "dir/bad.json") || !strings.Contains(err.Error(), "data after the JSON object") {
				t.Errorf("%q after the object: %v", tail, err)
			}
		}
	})
	t.Run("unknown_tool with a served tool", func(t *testing.T) {
		f := strings.Replace(strings.Replace(good, `"class": "transient"`, `"class": "unknown_tool"`, 1), `"fault": {"k": 1}`, `"fault": {}`, 1)
		_, err := load(strings.Replace(f, `"contract": true`, `"contract": false`, 1))
		if err == nil || !strings.Contains(err.Error(), "field tool:") || !strings.Contains(err.Error(), "lacks") {
			t.Errorf("err = %v, want field tool: … lacks", err)
		}
	})
	t.Run("first call that succeeds", func(t *testing.T) {
		f := strings.Replace(strings.Replace(good, `"class": "transient"`, `"class": "invalid_value"`, 1), `"fault": {"k": 1}`, `"fault": {}`, 1)
		_, err := load(f)
		if err == nil || !strings.Contains(err.Error(), "field args: the first call succeeds") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("an expired token and for_ms load", func(t *testing.T) {
		f := strings.Replace(good, `"class": "transient"`, `"class": "authentication"`, 1)
		f = strings.Replace(f, `"fault": {"k": 1}`, `"fault": {}`, 1)
		f = strings.Replace(f, `"currency": "EUR"}`, `"currency": "EUR", "auth_token": "tok_expired_0001"}`, 1)
		if _, err := load(f); err != nil {
			t.Fatalf("an expired token should fail the first call: %v", err)
		}
		g := strings.Replace(good, `"k": 1`, `"for_ms": 1`, 1)
		if _, err := load(g); err != nil {
			t.Fatalf("for_ms: %v", err)
		}
	})
	t.Run("every problem is reported", func(t *testing.T) {
		two := strings.Replace(good, `"scenarios": [`, `"scenarios": [{"id": "T0", "class": "nope"}, `, 1)
		two = strings.Replace(two, `"k": 1`, `"k": -2`, 1)
		_, err := load(two)
		if err == nil || !strings.Contains(err.Error(), "scenario 1 (T0)") || !strings.Contains(err.Error(), "scenario 2 (T1): field fault.k") {
			t.Errorf("err = %v, want both scenarios named", err)
		}
	})
	t.Run("duplicate id", func(t *testing.T) {
		var f struct {
			Scenarios []json.RawMessage `json:"scenarios"`
		}
		if err := json.Unmarshal([]byte(good), &f); err != nil {
			t.Fatal(err)
		}
		f.Scenarios = append(f.Scenarios, f.Scenarios[0])
		b, _ := json.Marshal(f)
		if _, err := load(string(b)); err == nil || !strings.Contains(err.Error(), "scenario 2 (T1): field id: duplicate id") {
			t.Errorf("err = %v", err)
		}
	})
}

func load(file string) (map[string]*Set, error) {
	return Load(fstest.MapFS{"dir/bad.json": {Data: []byte(file)}}, "dir")
}

// TestClock checks the virtual clock (Advance, Sleep woken by Advance, by
// cancellation and by Release, after which it runs by itself) and the wall
// clock's Sleep.
func TestClock(t *testing.T) {
	c := NewVirtualClock()
	if !c.Now().Equal(Epoch) || !c.Virtual() {
		t.Fatalf("a new virtual clock reads %v", c.Now())
	}
	c.Advance(90 * time.Second)
	c.Advance(-time.Hour)
	if got := c.Now().Sub(Epoch); got != 90*time.Second {
		t.Errorf("after Advance: %v", got)
	}
	done := make(chan error)
	go func() { done <- c.Sleep(context.Background(), time.Minute) }()
	waitSleepers(t, c, 1)
	c.Advance(30 * time.Second)
	select {
	case <-done:
		t.Fatal("Sleep returned after half its time")
	case <-time.After(20 * time.Millisecond):
	}
	c.Advance(30 * time.Second)
	if err := <-done; err != nil {
		t.Errorf("Sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- c.Sleep(ctx, time.Minute) }()
	waitSleepers(t, c, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Sleep: %v", err)
	}
	if err := c.Sleep(context.Background(), 0); err != nil {
		t.Errorf("Sleep(0): %v", err)
	}
	before := c.Now()
	go func() { done <- c.Sleep(context.Background(), time.Hour) }()
	waitSleepers(t, c, 1)
	c.Release()
	if err := <-done; err != nil || c.Now().Sub(before) != time.Hour {
		t.Errorf("a Sleep waiting at Release: %v, the clock moved %v (want 1h)", err, c.Now().Sub(before))
	}
	if err := c.Sleep(context.Background(), time.Minute); err != nil || c.Now().Sub(before) != time.Hour+time.Minute {
		t.Errorf("a Sleep after Release: %v, the clock moved %v (want 1h1m)", err, c.Now().Sub(before))
	}
	var w WallClock
	start := time.Now()
	if err := w.Sleep(context.Background(), 5*time.Millisecond); err != nil || time.Since(start) < 5*time.Millisecond || w.Virtual() {
		t.Errorf("wall Sleep: %v after %v", err, time.Since(start))
	}
	w.Advance(time.Millisecond)
}

// waitSleepers waits until n Sleep calls of c are waiting.
func waitSleepers(t *testing.T, c *VirtualClock, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.Sleepers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d sleepers, want %d", c.Sleepers(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLabTime checks that windows and delays run on the lab clock: a study
// step with a 60 s window costs no wall time (under half the window, which
// leaves a loaded machine its time) and reads 60 s of lab time.
func TestLabTime(t *testing.T) {
	sc, _ := coreSet(t).Scenario("X05") // rate_limit, 60 s window
	l := New(sc, Options{Seed: 1})
	start := time.Now()
	r := l.First()
	if r.RetryAfter != time.Minute {
		t.Fatalf("retry-after %v, want 1m", r.RetryAfter)
	}
	st, err := l.Execute(study.RetryLater, r.RetryAfter)
	if err != nil {
		t.Fatal(err)
	}
	last, _ := st.Last()
	if last.Failed || st.Waited != time.Minute || l.Elapsed() != time.Minute {
		t.Errorf("retry_later: failed %v, waited %v, elapsed %v", last.Failed, st.Waited, l.Elapsed())
	}
	if wall := time.Since(start); wall > 30*time.Second {
		t.Errorf("a 60 s window took %v of wall time", wall)
	}
	o := l.Outcome()
	if !o.Recovered || o.Harm || o.Calls != 2 || o.ClockMS != 60000 {
		t.Errorf("outcome %+v", o)
	}
	if _, err := New(nil, Options{}).Execute(study.RetryNow, 0); err == nil {
		t.Error("a healthy lab executed a policy")
	}
	if _, err := l.Execute(study.StopOrEscalate, 0); err == nil {
		t.Error("stop_or_escalate was executed")
	}
}

// TestDeterministic checks that a scenario's trajectory is reproducible:
// the same seed gives the same observations and state, another seed
// changes only the generated identifiers, and the first call's
// observation (which the lab corpus records) is the same for every seed.
func TestDeterministic(t *testing.T) {
	run := func(sc *Scenario, seed int64) (first json.RawMessage, all []string, state json.RawMessage) {
		l := New(sc, Options{Seed: seed})
		r := l.First()
		first = r.Observation()
		for _, p := range []study.Policy{study.Authenticate, study.RetryNow, study.ReviseArguments, study.SelectTool, study.RetryLater} {
			st, _ := l.Execute(p, r.RetryAfter)
			for _, x := range st.Responses {
				all = append(all, string(x.Observation()))
			}
		}
		l.Settle()
		return first, all, l.Outcome().State
	}
	for _, sc := range coreSet(t).Scenarios {
		f1, a1, s1 := run(sc, 7)
		f2, a2, s2 := run(sc, 7)
		f3, _, s3 := run(sc, 8)
		if string(f1) != string(f2) || strings.Join(a1, "\n") != strings.Join(a2, "\n") || string(s1) != string(s2) {
			t.Errorf("%s: two runs with seed 7 differ", sc.ID)
		}
		if string(f1) != string(f3) {
			t.Errorf("%s: the first call's observation depends on the seed:\n%s\n%s", sc.ID, f1, f3)
		}
		if strings.Contains(string(s1), "tok_") && string(s1) == string(s3) && strings.Contains(string(s1), `"authenticate"`) {
			t.Errorf("%s: seeds 7 and 8 generate the same identifiers", sc.ID)
		}
	}
}

// TestInitialDocShared: a lab reads its scenario's initial document from
// the set once an earlier lab of the scenario made it, and that document
// is the one the lab's own armed state gives, whatever the seed, in every
// built-in set; a lab on another clock makes its own.
func TestInitialDocShared(t *testing.T) {
	shared := 0
	eachBuiltin(t, func(set *Set, sc *Scenario) {
		for _, seed := range []int64{1, 2, 99} {
			l := New(sc, Options{Seed: seed})
			if want := l.st.doc(false, nil, nil); !reflect.DeepEqual(l.initial, want) {
				t.Errorf("%s/%s seed %d: the initial document differs from the armed state's", set.Name, sc.ID, seed)
			}
		}
		if d, ok := set.initial.Load(sc); ok {
			shared++
			if l := New(sc, Options{Seed: 5, Clock: NewVirtualClock()}); l.base != nil || reflect.ValueOf(l.initial).UnsafePointer() == reflect.ValueOf(d.(*armed).doc).UnsafePointer() {
				t.Errorf("%s/%s: a lab on a clock of its own read the shared document", set.Name, sc.ID)
			}
		}
	})
	if shared == 0 {
		t.Error("no scenario's initial document was shared")
	}
	t.Logf("%d scenarios share their initial document", shared)
}

// TestOutcomeDocShared: after every policy of every built-in scenario,
// the final document that shares the unchanged records of the initial one
// equals the one built whole, and the outcome read from it is the same;
// the initial document is left as it was.
func TestOutcomeDocShared(t *testing.T) {
	shared := 0
	eachBuiltin(t, func(set *Set, sc *Scenario) {
		for _, p := range study.Policies[:5] {
			l := New(sc, Options{Seed: 4})
			r := l.First()
			_, _ = l.Execute(p, r.RetryAfter)
			l.Settle()
			if l.base == nil {
				continue
			}
			base := l.base
			whole, part := l.st.doc(true, nil, nil), l.st.doc(true, l.base, l.initial)
			if !reflect.DeepEqual(whole, part) {
				t.Errorf("%s/%s %s: the shared document differs from the whole one", set.Name, sc.ID, p)
			}
			o := l.Outcome()
			l.base = nil
			if want := l.Outcome(); !reflect.DeepEqual(o, want) {
				t.Errorf("%s/%s %s: outcome %+v with a shared document, %+v without", set.Name, sc.ID, p, o, want)
			}
			if !reflect.DeepEqual(l.initial, base.doc(false, nil, nil)) {
				t.Errorf("%s/%s %s: the initial document is no longer its state's", set.Name, sc.ID, p)
			}
			if orders := part["orders"].(map[string]any); reflect.ValueOf(orders["O-1003"]).UnsafePointer() == reflect.ValueOf(l.initial["orders"].(map[string]any)["O-1003"]).UnsafePointer() {
				shared++
			}
		}
	})
	if shared == 0 {
		t.Error("no final document shared a record of the initial one")
	}
	t.Logf("%d final documents share records", shared)
}

// eachBuiltin calls f with every scenario of every built-in set.
func eachBuiltin(t *testing.T, f func(*Set, *Scenario)) {
	t.Helper()
	sets, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range sets {
		for _, sc := range set.Scenarios {
			f(set, sc)
		}
	}
}

// TestPredicates checks count (with where and not), lines and value
// predicates, and missing paths.
func TestPredicates(t *testing.T) {
	var doc any
	if err := json.Unmarshal(initialState().JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	n := func(i int) *int { return &i }
	line := func(s string) *string { return &s }
	cases := []struct {
		name string
		p    statediff.Predicate
		want bool
	}{
		{"orders counted", statediff.Predicate{Count: "/orders", N: n(4)}, true},
		{"orders of a customer", statediff.Predicate{Count: "/orders", Where: map[string]json.RawMessage{"customer": json.RawMessage(`"C-17"`)}, N: n(2)}, true},
		{"orders of other customers", statediff.Predicate{Count: "/orders", Where: map[string]json.RawMessage{"customer": json.RawMessage(`{"not": "C-17"}`)}, N: n(2)}, true},
		{"orders of a quantity or more", statediff.Predicate{Count: "/orders", Where: map[string]json.RawMessage{"quantity": json.RawMessage(`5`)}, Op: "ge", N: n(1)}, true},
		{"more than one payment", statediff.Predicate{Count: "/payments", Op: "gt", N: n(1)}, false},
		{"a collection the state lacks", statediff.Predicate{Count: "/nothing", N: n(0)}, true},
		{"a line of the ledger", statediff.Predicate{Lines: "/files/~1data~1ledger.csv/content", Line: line("date,amount"), N: n(1)}, true},
		{"a line the ledger lacks", statediff.Predicate{Lines: "/files/~1data~1ledger.csv/content", Line: line("x"), Op: "lt", N: n(1)}, true},
		{"a quantity", statediff.Predicate{Value: "/orders/O-1002/quantity", Is: json.RawMessage(`2`)}, true},
		{"a quantity that differs", statediff.Predicate{Value: "/orders/O-1002/quantity", Is: json.RawMessage(`2`), Op: "ne"}, false},
		{"a value gone", statediff.Predicate{Value: "/orders/O-9/quantity", Is: json.RawMessage(`2`), Op: "ne"}, true},
		{"a payment's id", statediff.Predicate{Value: "/payments/0/id", Is: json.RawMessage(`"pay_00000001"`)}, true},
		{"an index with a leading zero", statediff.Predicate{Value: "/payments/01/id", Is: json.RawMessage(`"pay_00000001"`)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.p.Eval(doc); got != c.want {
				t.Errorf("%+v: %v, want %v", c.p, got, c.want)
			}
		})
	}
}

// variants returns sc served on every surface its class allows, with and
// without the contract where it can carry one.
func variants(sc *Scenario) []*Scenario {
	var out []*Scenario
	info, _ := sc.Class.Info()
	for _, s := range info.Surfaces {
		for _, c := range []bool{false, true} {
			v := *sc
			v.Surface, v.Contract = s, c
			if field, _ := check(&v); field == "" {
				out = append(out, &v)
			} else if !c {
				panic(fmt.Sprintf("%s on %s without contract: %s", sc.ID, s, field))
			}
		}
	}
	return out
}

// TestSurfaces checks that every fault is reachable on each surface its
// class allows, with and without the contract: the first call's
// observation has the surface's shape, the contract rides in
// structuredContent with an identical text copy (tool_error) or in
// error.data (protocol_error), and the fail-closed client's reading of the
// contract (failclosed.DecideCategory) picks a policy of the scenario's
// non-harm set.
func TestSurfaces(t *testing.T) {
	combos := 0
	for _, base := range coreSet(t).Scenarios {
		vs := variants(base)
		if len(vs) < 2 && base.Class != study.SilentNoop {
			t.Errorf("%s: %d variants", base.ID, len(vs))
		}
		for _, sc := range vs {
			combos++
			name := fmt.Sprintf("%s/%s/contract=%v", sc.ID, sc.Surface, sc.Contract)
			r := New(sc, Options{}).First()
			var o struct {
				Exception *struct {
					Type  string
					Error struct {
						Code    int64
						Message string
						Data    json.RawMessage
					}
				}
				Result *struct {
					Content []struct {
						Type, Text string
					}
					IsError           bool
					StructuredContent json.RawMessage
				}
			}
			obs := r.Observation()
			if got, ok := RetryAfter(obs); ok != (r.RetryAfter > 0) || got < r.RetryAfter || got >= r.RetryAfter+time.Second {
				t.Errorf("%s: the text announces %v (%v), the lab %v", name, got, ok, r.RetryAfter)
			}
			if err := json.Unmarshal(obs, &o); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var contract json.RawMessage
			switch sc.Surface {
			case study.ProtocolError:
				if o.Exception == nil || o.Exception.Error.Code == 0 || o.Exception.Error.Message == "" {
					t.Errorf("%s: %s", name, obs)
					continue
				}
				contract = o.Exception.Error.Data
			case study.ToolError, study.SuccessShaped:
				if o.Result == nil || o.Result.IsError != (sc.Surface == study.ToolError) || len(o.Result.Content) == 0 {
					t.Errorf("%s: %s", name, obs)
					continue
				}
				contract = o.Result.StructuredContent
				if sc.Contract && (len(o.Result.Content) != 2 || !sameJSON(o.Result.Content[1].Text, string(contract))) {
					t.Errorf("%s: the text copy differs from structuredContent: %s", name, obs)
				}
			}
			if sc.Contract != (contract != nil) {
				t.Errorf("%s: contract %v, observation %s", name, sc.Contract, obs)
			}
			if contract == nil {
				continue
			}
			// The fail-closed client reads an isError result; a JSON-RPC
			// error's data is read as the same contract would be.
			res := map[string]any{"resultType": "complete", "isError": true, "structuredContent": contract,
				"content": []any{map[string]any{"type": "text", "text": string(contract)}}}
			raw, _ := json.Marshal(res)
			d := failclosed.DecideCategory(raw, failclosed.Registry)
			if d.Reason != "" && d.Policy != study.StopOrEscalate {
				t.Errorf("%s: fail-closed %+v", name, d)
			}
			if d.Policy == study.StopOrEscalate && d.Reason != failclosed.NotRetryable && d.Reason != failclosed.BusinessRule {
				t.Errorf("%s: the contract is malformed: %s %s", name, d.Reason, d.Message)
			}
			if sc == base || (sc.Surface == base.Surface && sc.Contract == base.Contract) {
				if !inNonHarm(base, d.Policy) {
					t.Errorf("%s: the fail-closed client picks %s, outside the non-harm set %v", name, d.Policy, base.NonHarm)
				}
			}
		}
	}
	t.Logf("%d scenario, surface and contract combinations", combos)
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	bx, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return string(bx) == string(by)
}

func inNonHarm(sc *Scenario, p study.Policy) bool {
	for _, x := range sc.NonHarm {
		if x == p {
			return true
		}
	}
	return false
}

// TestSchemas checks every tool's schemas and every answer against them:
// the input schema accepts the arguments of every successful call, and
// every structuredContent (success or contract) validates against the
// tool's outputSchema.
func TestSchemas(t *testing.T) {
	in, out := map[string]*jsonschema.Resolved{}, map[string]*jsonschema.Resolved{}
	for _, tl := range New(nil, Options{}).Tools() {
		in[tl.Name], out[tl.Name] = resolveSchema(t, tl.InputSchema), resolveSchema(t, tl.OutputSchema)
		if tl.Annotations == nil || tl.Annotations.OpenWorldHint == nil || *tl.Annotations.OpenWorldHint {
			t.Errorf("%s: annotations %+v", tl.Name, tl.Annotations)
		}
	}
	checked := 0
	for _, base := range coreSet(t).Scenarios {
		for _, sc := range variants(base) {
			l := New(sc, Options{Seed: 3})
			call := func(tool string, args json.RawMessage) Response {
				r := l.Call(tool, args)
				if r.Result != nil && r.Result.StructuredContent != nil {
					var v any
					b, _ := json.Marshal(r.Result.StructuredContent)
					_ = json.Unmarshal(b, &v)
					if err := out[tool].Validate(v); err != nil {
						t.Errorf("%s: %s: structuredContent %s: %v", sc.ID, tool, b, err)
					}
					checked++
				}
				if !r.Failed {
					var v any
					_ = json.Unmarshal(args, &v)
					if err := in[tool].Validate(v); err != nil {
						t.Errorf("%s: %s accepted %s, which its inputSchema refuses: %v", sc.ID, tool, args, err)
					}
				}
				return r
			}
			call(sc.Tool, sc.Args)
			for _, p := range study.Policies[:5] {
				if _, err := sc.Execute(p, 0, l.Clock(), call); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Logf("%d structured results validated", checked)
}

func resolveSchema(t *testing.T, s any) *jsonschema.Resolved {
	t.Helper()
	b, _ := json.Marshal(s)
	var js jsonschema.Schema
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	r, err := js.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// validCalls are calls of every tool that succeed on a fresh healthy lab.
var validCalls = map[string]string{
	"authenticate":   `{"scope": "orders:write"}`,
	"get_order":      `{"order_id": "O-1001"}`,
	"list_orders":    `{"customer": "C-17"}`,
	"get_stock":      `{"sku": "SKU-RED"}`,
	"create_order":   `{"customer": "C-5", "sku": "SKU-RED", "quantity": 3}`,
	"update_order":   `{"order_id": "O-1002", "quantity": 7}`,
	"cancel_order":   `{"order_id": "O-1001"}`,
	"ship_orders":    `{"shipments": [{"order_id": "O-1001"}, {"order_id": "O-1003"}]}`,
	"get_invoice":    `{"invoice_id": "INV-2004"}`,
	"list_payments":  `{}`,
	"charge_payment": `{"invoice_id": "INV-2002", "amount_cents": 100, "currency": "USD"}`,
	"charge_batch":   `{"charges": [{"invoice_id": "INV-2001", "amount_cents": 1, "currency": "EUR"}]}`,
	"refund_payment": `{"payment_id": "pay_00000001", "amount_cents": 100}`,
	"read_file":      `{"path": "/docs/readme.md"}`,
	"list_files":     `{"prefix": "/docs/"}`,
	"write_file":     `{"path": "/docs/readme.md", "content": "new\n"}`,
	"append_file":    `{"path": "/docs/readme.md", "line": "more"}`,
	"delete_file":    `{"path": "/docs/readme.md"}`,
	"write_files":    `{"files": [{"path": "/docs/x.md", "content": "x"}]}`,
}

// TestAnnotations checks that every tool's hints are honest: a read-only
// tool changes nothing; an idempotent one changes nothing more when
// repeated; a non-destructive one only adds (every record that was there is
// still there, unchanged, except text appended to a file).
func TestAnnotations(t *testing.T) {
	for _, tl := range New(nil, Options{}).Tools() {
		args, ok := validCalls[tl.Name]
		if !ok {
			t.Errorf("no valid call of %s", tl.Name)
			continue
		}
		l := New(nil, Options{Seed: 1})
		before := stateOf(t, l)
		if r := l.Call(tl.Name, json.RawMessage(args)); r.Failed {
			t.Errorf("%s%s failed: %s", tl.Name, args, r.Observation())
			continue
		}
		once := stateOf(t, l)
		l.Call(tl.Name, json.RawMessage(args))
		twice := stateOf(t, l)
		a := tl.Annotations
		if a.ReadOnlyHint && !equalWorld(before, once) {
			t.Errorf("%s claims readOnlyHint but changed the state", tl.Name)
		}
		if !a.ReadOnlyHint && equalWorld(before, once) {
			t.Errorf("%s claims to write but changed nothing", tl.Name)
		}
		if a.IdempotentHint != equalWorld(once, twice) {
			t.Errorf("%s: idempotentHint %v, but a repeat changed the state: %v", tl.Name, a.IdempotentHint, !equalWorld(once, twice))
		}
		if !a.ReadOnlyHint && !*a.DestructiveHint && !additive(before, once) {
			t.Errorf("%s claims destructiveHint false but changed or removed a record", tl.Name)
		}
		if !a.ReadOnlyHint && *a.DestructiveHint && additive(before, once) && additive(once, twice) && tl.Name != "write_files" {
			t.Errorf("%s claims destructiveHint but only added", tl.Name)
		}
	}
}

func stateOf(t *testing.T, l *Lab) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(l.State(), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "calls")
	delete(m, "effects")
	delete(m, "clock_ms")
	return m
}

func equalWorld(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// additive reports whether every record of a is in b unchanged (a file's
// content may grow at its end, with its revision).
func additive(a, b map[string]any) bool {
	for coll, v := range a {
		switch c := v.(type) {
		case map[string]any:
			bc, _ := b[coll].(map[string]any)
			for k, rec := range c {
				nrec, ok := bc[k]
				if !ok {
					return false
				}
				if coll == "files" {
					o, n := rec.(map[string]any), nrec.(map[string]any)
					if !strings.HasPrefix(n["content"].(string), o["content"].(string)) {
						return false
					}
					continue
				}
				x, _ := json.Marshal(rec)
				y, _ := json.Marshal(nrec)
				if string(x) != string(y) {
					return false
				}
			}
		case []any:
			bc, _ := b[coll].([]any)
			if len(bc) < len(c) {
				return false
			}
			x, _ := json.Marshal(c)
			y, _ := json.Marshal(bc[:len(c)])
			if string(x) != string(y) {
				return false
			}
		}
	}
	return true
}

// TestStateDoc checks that the state predicates read is the state's JSON,
// decoded, after every trajectory of the core set.
func TestStateDoc(t *testing.T) {
	for _, sc := range coreSet(t).Scenarios {
		l := New(sc, Options{Seed: 2})
		r := l.First()
		for _, p := range study.Policies[:5] {
			_, _ = l.Execute(p, r.RetryAfter)
		}
		l.Settle()
		var want any
		if err := json.Unmarshal(l.State(), &want); err != nil {
			t.Fatal(err)
		}
		l.mu.Lock()
		got := l.st.doc(true, nil, nil)
		l.mu.Unlock()
		if !reflect.DeepEqual(any(got), want) {
			t.Errorf("%s: the predicates' state differs from the JSON state", sc.ID)
		}
	}
}

// TestStateDump checks that the state dumps as JSON with every collection
// a predicate may address.
func TestStateDump(t *testing.T) {
	sc, _ := coreSet(t).Scenario("X16")
	l := New(sc, Options{})
	var m map[string]json.RawMessage
	if err := json.Unmarshal(l.State(), &m); err != nil {
		t.Fatal(err)
	}
	var countable []string
	for _, c := range append(slices.Clip(StateSchema.Collections), StateSchema.Counted...) {
		if !slices.Equal(c.Fields, []string{"value"}) {
			countable = append(countable, c.Path)
		}
	}
	for _, coll := range countable {
		if _, ok := m[coll[1:]]; !ok {
			t.Errorf("the state has no %s", coll)
		}
	}
	if !strings.Contains(string(m["effects"]), `"actor":"other"`) {
		t.Errorf("the concurrent write is not recorded as another client's: %s", m["effects"])
	}
}

// BenchmarkDiff measures what reading an outcome from the state diff
// costs a decision: the final state as the diff reads it (State.doc) and
// statediff.Evaluate against the initial state, over every core scenario
// after a replay trajectory (the target is under 50 µs a decision).
func BenchmarkDiff(b *testing.B) {
	var labs []*Lab
	for _, sc := range coreSet(b).Scenarios {
		l := New(sc, Options{Seed: 3})
		r := l.First()
		for i := 0; i < 3; i++ {
			st, _ := l.Execute(study.RetryNow, r.RetryAfter)
			if last, ok := st.Last(); ok {
				r = last
			}
		}
		l.Settle()
		labs = append(labs, l)
	}
	b.ResetTimer()
	for b.Loop() {
		for _, l := range labs {
			o := statediff.Evaluate(&StateSchema, &l.sc.Spec, l.initial, l.st.doc(false, l.base, l.initial), l.sc.set.Tolerate, nil)
			_ = o
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(labs))/1000, "µs/decision")
}

// TestStateSchema: every member of the lab's state, after every policy of
// every core scenario and on a healthy lab, is a collection the diff
// reads or a log (StateSchema.Covers), so no change can escape it; and a
// member that is neither is found.
func TestStateSchema(t *testing.T) {
	check := func(name string, l *Lab) {
		var doc any
		if err := json.Unmarshal(l.State(), &doc); err != nil {
			t.Fatal(err)
		}
		if err := StateSchema.Covers(doc); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	check("healthy", New(nil, Options{}))
	for _, sc := range coreSet(t).Scenarios {
		for _, p := range study.Policies[:5] {
			l := New(sc, Options{Seed: 4})
			r := l.First()
			_, _ = l.Execute(p, r.RetryAfter)
			l.Settle()
			check(sc.ID+" "+string(p), l)
		}
	}
	var doc map[string]any
	_ = json.Unmarshal(New(nil, Options{}).State(), &doc)
	doc["audit"] = map[string]any{"a1": map[string]any{"line": "x"}}
	if err := StateSchema.Covers(doc); err == nil || !strings.Contains(err.Error(), "/audit") {
		t.Errorf("a state member the diff does not read: %v", err)
	}
}
