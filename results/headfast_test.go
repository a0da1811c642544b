package results

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestFastHead: on call lines of every shape, and on every prefix and
// byte-level damage of them, the fast scanner either declines or decodes
// exactly what encoding/json decodes (and never accepts a line
// encoding/json rejects).
func TestFastHead(t *testing.T) {
	key := simulator.Key{Model: "m", Prompt: "p", Condition: study.Normalized, Scenario: "S01", Replicate: 3}
	base := Call{Key: key, Server: "P01", Preferred: study.RetryNow, NonHarm: []study.Policy{study.RetryNow, study.StopOrEscalate},
		Turn: 1, Seed: 12345, Response: `{"operation_status": "failed", "recovery_policy": "retry_now"} é <&> \u2028`,
		Request:   models.Request{Messages: []models.Message{{Role: "user", Content: "hi\n\"there\""}}, Seed: 7, Temperature: 0.7, Options: map[string]any{"top_k": 1.5e3, "x": nil, "y": []any{true, false}}},
		LatencyMS: 0.25, Body: []byte("body"), BodySHA256: "ab", PromptTokens: 3, Meta: map[string]any{"a": map[string]any{"b": -1.5}}}
	base.ResponseSHA256 = SHA256([]byte(base.Response))
	withErr := base
	withErr.Error, withErr.Events = "boom", []models.TransportEvent{{Kind: "timeout"}}
	live := base
	live.Replay, live.Observation, live.Env = "live", json.RawMessage(`{"x":1}`), &simulator.EnvOutcome{Recovered: true, Calls: 2}
	noNonHarm := base
	noNonHarm.NonHarm = nil
	proven := base
	proven.PreferredSet = []study.Policy{study.RetryNow, study.StopOrEscalate}
	native := base
	native.Thinking, native.ToolCalls = "let me think", json.RawMessage(`[{"function":{"name":"f","arguments":{"a":1}}}]`)
	native.Request.Tools = []models.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}}
	var lines [][]byte
	for _, c := range []Call{base, withErr, live, noNonHarm, native, proven} {
		b, _ := json.Marshal(&c)
		lines = append(lines, b)
		sc := &storedCall{Call: &c, Request: wireRequest{Refs: []string{"0123456789abcdef", "x"}, Temperature: 0.7}}
		sc.carry(carried{true, true})
		b, _ = json.Marshal(sc)
		lines = append(lines, b)
		sc.Request.Refs = []string{}
		b, _ = json.Marshal(sc)
		lines = append(lines, b)
	}
	for _, c := range []carried{{false, false}, {true, false}, {false, true}} { // format 3
		sc := &storedCall{Call: &proven, Request: wireRequest{Refs: []string{"0123456789abcdef"}, Temperature: 0.7}}
		sc.carry(c)
		b, _ := json.Marshal(sc)
		lines = append(lines, b)
	}
	lines = append(lines, []byte(` {"key":{"model":"m","replicate":01},"turn":0}`), []byte(`{"key":null}`), []byte(`{"turn":1.0}`),
		[]byte(`{"Turn":1}`), []byte(`{"response":"\ud800"}`), []byte("{\"response\":\"a\xffb\"}"), []byte(`{"meta":{"a":tru}}`), []byte(`{"meta":[1,]}`),
		[]byte(`{"seed":9223372036854775807}`), []byte(`{"seed":9223372036854775808}`), []byte(`{"seed":-9223372036854775808}`), []byte(`{"seed":-0}`),
		[]byte(`{"turn":1e2}`), []byte(`{"turn":-}`), []byte(`{"seed":12-3}`), []byte(`{"seed":99999999999999999999}`))
	fast := 0
	var tab strTable
	check := func(b []byte) {
		var want, got Head
		wc, werr := jsonHead(b, &want)
		gc, ok := fastHead(b, &got, nil)
		if !ok {
			return
		}
		fast++
		if werr != nil {
			t.Fatalf("fastHead accepted %q, which encoding/json rejects: %v", b, werr)
		}
		if !reflect.DeepEqual(got, want) || gc != wc {
			t.Fatalf("%q:\nfast %+v %+v\njson %+v %+v", b, got, gc, want, wc)
		}
		// Interned strings decode the same, whatever lines came before.
		var in Head
		if _, ok := fastHead(b, &in, &tab); !ok || !reflect.DeepEqual(in, want) {
			t.Fatalf("%q: interned %+v, want %+v", b, in, want)
		}
	}
	for _, b := range lines {
		check(b)
		for n := range len(b) {
			check(b[:n])
			d := append([]byte(nil), b...)
			d[n] = 0
			check(d)
			d[n] = '"'
			check(d)
			d[n] = '}'
			check(d)
		}
	}
	var h Head
	if _, ok := fastHead(lines[1], &h, nil); !ok || len(h.Request.Refs) != 2 || h.Response != base.Response || h.Turn != 1 || h.Key != key {
		t.Errorf("a compact line is not decoded by the fast path: %+v", h)
	}
	if _, ok := fastHead(lines[6], &h, nil); ok {
		t.Error("a live line must go to encoding/json")
	}
	if _, ok := fastHead(lines[0], &h, nil); ok {
		t.Error("a line with its messages inline (format 1) must go to encoding/json")
	}
	if _, ok := fastHead(lines[16], &h, nil); !ok || !reflect.DeepEqual(h.PreferredSet, proven.PreferredSet) {
		t.Errorf("a compact line with its proven preferred set is not decoded by the fast path: %+v", h)
	}
	for _, tc := range []struct { // thinking, tool calls and tools
		name string
		line int
	}{{"native line with refs", 13}, {"native line with no refs", 14}} {
		t.Run(tc.name, func(t *testing.T) {
			var h Head
			if _, ok := fastHead(lines[tc.line], &h, nil); !ok || h.Response != base.Response {
				t.Errorf("line %d with thinking, tool calls and tools is not decoded by the fast path: %s", tc.line, lines[tc.line])
			}
		})
	}
	t.Logf("%d lines decoded by the fast path", fast)
}
