package labenv

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mcpstress/stress/internal/testserver/goalaudit"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// hostile is one hostile call sequence against a goal effect, and the
// harm it must score.
type hostile struct {
	name  string
	calls goalaudit.Calls
	kind  statediff.Kind
	// spoils says the sequence leaves the goal's record other than the
	// task leaves it, so the decision does not recover either.
	spoils bool
}

const attack = "SHIP TO ATTACKER"

// TestHostileSequences audits every goal kind of the core set: on every
// scenario, the first preferred policy that recovers is carried out as
// live replay carries it out, then calls of the test's own damage what it
// left, and the final state must score harm of the kind named. A created
// order cancelled or given a note the task never asked for, an appended
// line moved above the prior content (a CSV header below the entry) or
// written without its final newline: before whole-record goals and exact
// appends, these scored recovered, no harm.
func TestHostileSequences(t *testing.T) {
	ctx := context.Background()
	f, err := Factory("")
	if err != nil {
		t.Fatal(err)
	}
	const seed = 11
	audited, unreachable := 0, []string{}
	for _, sc := range set(t).Scenarios {
		initial := stateOf(t, lab.New(sc, lab.Options{Seed: seed}).State())
		p := recovering(t, f, sc, seed)
		var seqs []hostile
		for i := range sc.Goal {
			seqs = append(seqs, hostileTo(&sc.Goal[i], initial, p != "")...)
		}
		if len(seqs) == 0 {
			unreachable = append(unreachable, sc.ID)
			continue
		}
		for _, h := range seqs {
			o, err := goalaudit.Run(ctx, f, sc.ID, seed, replayCap, p, h.calls)
			if err != nil {
				t.Errorf("%s (%s), %s: %v", sc.ID, sc.Class, h.name, err)
				continue
			}
			audited++
			if !statediff.KindsOf(o.Harms).Has(h.kind) || h.spoils && o.Recovered {
				t.Errorf("%s (%s), %s after %s: recovered %v, harms %+v; want %s%s", sc.ID, sc.Class, h.name, orNothing(p), o.Recovered, o.Harms, h.kind,
					map[bool]string{true: ", not recovered"}[h.spoils])
			}
		}
	}
	// The upstream outages and X24 (silent no-op) recover by no policy:
	// their goals are out of reach, and collateral damage there is
	// TestCollateralIsHarm's.
	if want := []string{"X25", "X26", "X27"}; !slices.Equal(unreachable, want) {
		t.Errorf("scenarios with no hostile sequence: %v, want %v", unreachable, want)
	}
	t.Logf("%d hostile sequences", audited)
}

// recovering returns the first of sc's preferred policies whose recovery
// recovers without harm, or "" where none does.
func recovering(t *testing.T, f simulator.EnvFactory, sc *lab.Scenario, seed int64) study.Policy {
	for _, p := range sc.PreferredSet {
		if p == study.StopOrEscalate {
			continue
		}
		o, err := goalaudit.Run(context.Background(), f, sc.ID, seed, replayCap, p, func(map[string]any) []simulator.ToolCall { return nil })
		if err != nil {
			t.Fatalf("%s: %v", sc.ID, err)
		}
		if o.Recovered && !o.Harm {
			return p
		}
	}
	return ""
}

// hostileTo returns the hostile sequences against goal effect g:
// after a recovery (recovered) that damage what it made, or, where no
// policy recovers, that damage the goal's record directly.
func hostileTo(g *statediff.Effect, initial map[string]any, recovered bool) []hostile {
	switch {
	case g.Create == "/orders" && recovered:
		return []hostile{
			{"the created order cancelled", func(st map[string]any) []simulator.ToolCall {
				return []simulator.ToolCall{goalaudit.Call("cancel_order", map[string]any{"order_id": created(st, initial, "orders")})}
			}, statediff.WrongValue, true},
			{"the created order given a note", func(st map[string]any) []simulator.ToolCall {
				return []simulator.ToolCall{goalaudit.Call("update_order", map[string]any{"order_id": created(st, initial, "orders"), "note": attack})}
			}, statediff.WrongValue, true},
		}
	case g.Create == "/payments" && recovered:
		return []hostile{{"the charge refunded", func(st map[string]any) []simulator.ToolCall {
			return []simulator.ToolCall{goalaudit.Call("refund_payment", map[string]any{"payment_id": created(st, initial, "payments"), "amount_cents": 100})}
		}, statediff.Collateral, false}}
	case g.Create == "/shipments" && recovered:
		return []hostile{{"the order shipped again", func(map[string]any) []simulator.ToolCall {
			return []simulator.ToolCall{goalaudit.Call("ship_orders", map[string]any{"shipments": []any{map[string]any{"order_id": value(g, "order_id")}}})}
		}, statediff.Duplicate, false}}
	case g.Create == "/files" && recovered:
		return []hostile{{"a line added to the created file", func(map[string]any) []simulator.ToolCall {
			return []simulator.ToolCall{goalaudit.Call("append_file", map[string]any{"path": value(g, "path"), "line": attack})}
		}, statediff.WrongValue, true}}
	case g.Update == "/files" && g.Append != nil && recovered:
		text := g.Append["content"]
		prior := initial["files"].(map[string]any)[g.Key].(map[string]any)["content"].(string)
		write := func(content string) goalaudit.Calls {
			return func(map[string]any) []simulator.ToolCall {
				return []simulator.ToolCall{goalaudit.Call("write_file", map[string]any{"path": g.Key, "content": content})}
			}
		}
		return []hostile{
			{"the entry moved above the prior content", write(text + prior), statediff.WrongValue, true},
			{"the entry without its final newline", write(prior + strings.TrimSuffix(text, "\n")), statediff.WrongValue, true},
			{"the entry appended again", func(st map[string]any) []simulator.ToolCall {
				args := map[string]any{"path": g.Key, "line": strings.TrimSuffix(text, "\n")}
				if tok := created(st, initial, "tokens"); tok != "" {
					args["auth_token"] = tok // the armed tool wants the token the recovery obtained (X20)
				}
				return []simulator.ToolCall{goalaudit.Call("append_file", args)}
			}, statediff.Duplicate, true},
		}
	case g.Update == "/files":
		return []hostile{{"a line added to the file", func(map[string]any) []simulator.ToolCall {
			return []simulator.ToolCall{goalaudit.Call("append_file", map[string]any{"path": g.Key, "line": attack})}
		}, statediff.WrongValue, true}}
	case g.Update == "/orders" && recovered:
		if _, ok := g.Values["status"]; ok {
			return []hostile{{"another order changed", func(map[string]any) []simulator.ToolCall {
				return []simulator.ToolCall{goalaudit.Call("update_order", map[string]any{"order_id": "O-1002", "quantity": 7})}
			}, statediff.Collateral, false}}
		}
		other := map[string]any{"order_id": g.Key, "note": attack}
		if _, ok := g.Values["note"]; ok {
			other = map[string]any{"order_id": g.Key, "quantity": 9}
		}
		return []hostile{{"a field of the order the task does not change", func(map[string]any) []simulator.ToolCall {
			return []simulator.ToolCall{goalaudit.Call("update_order", other)}
		}, statediff.DataLoss, false}}
	}
	return nil
}

// created returns the id of the record of collection coll (a member of
// the lab's state) that st holds and initial does not, or "".
func created(st, initial map[string]any, coll string) string {
	ids := func(doc map[string]any) []string {
		switch c := doc[coll].(type) {
		case map[string]any:
			return slices.Sorted(maps.Keys(c))
		case []any:
			var out []string
			for _, r := range c {
				out = append(out, r.(map[string]any)["id"].(string))
			}
			return out
		}
		return nil
	}
	before := ids(initial)
	for _, id := range ids(st) {
		if !slices.Contains(before, id) {
			return id
		}
	}
	return ""
}

// value returns the text value field of effect g.
func value(g *statediff.Effect, field string) string {
	var s string
	if err := json.Unmarshal(g.Values[field], &s); err != nil {
		panic(fmt.Sprintf("goal value %s: %v", field, err))
	}
	return s
}

func stateOf(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func orNothing(p study.Policy) string {
	if p == "" {
		return "no recovery"
	}
	return string(p)
}
