package simulator

import (
	"encoding/json"
	"testing"
)

// FuzzParseAnswer: any text parses without panicking into either a valid
// answer (both fields in the vocabulary, no reason) or an invalid one with
// a reason; a valid answer re-marshals to an object the parser accepts.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		`{"operation_status": "failed", "recovery_policy": "select_tool"}`,
		"```json\n{\"operation_status\": \"succeeded\", \"recovery_policy\": \"retry_now\"}\n```",
		`{"operation_status": "failed", "recovery_policy": "retry_later", "delay_ms": 2500}`,
		"", "```", "```\n```", `{"operation_status": 1}`, `[]`, `{"a":`, "\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		a := ParseAnswer(text)
		if a.Valid {
			if a.Reason != "" || !a.Status.Valid() || !a.Policy.Valid() {
				t.Fatalf("valid answer %+v for %q", a, text)
			}
			m := map[string]any{"operation_status": string(a.Status), "recovery_policy": string(a.Policy)}
			if a.DelayMS > 0 {
				m["delay_ms"] = a.DelayMS
			}
			b, _ := json.Marshal(m)
			if again := ParseAnswer(string(b)); again != a {
				t.Fatalf("round trip %+v -> %+v", a, again)
			}
			return
		}
		if a.Reason == "" {
			t.Fatalf("invalid answer without a reason for %q", text)
		}
	})
}

// FuzzAct: any answer text and tool_calls parse without panicking, the
// label as ParseAnswer reads it; an action is set only for a valid label
// whose policy needs a call, with an object of arguments under the cap,
// else a reason says why there is none; the client's check of whatever
// call results never panics.
func FuzzAct(f *testing.F) {
	f.Add(`{"operation_status":"failed","recovery_policy":"revise_arguments","tool":"write","arguments":{"n":2}}`, ``)
	f.Add(`{"operation_status":"failed","recovery_policy":"select_tool"}`, `[{"function":{"name":"read","arguments":"{}"}}]`)
	f.Add(`{"operation_status":"failed","recovery_policy":"authenticate","tool":"x","arguments":[1]}`, `[{"function":{"name":"","arguments":7}}]`)
	f.Add(`{"operation_status":"failed","recovery_policy":"select_tool"}`, `{"not":"an array"}`)
	tb, err := NewToolbox([]json.RawMessage{
		json.RawMessage(`{"name":"write","inputSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}}`),
		json.RawMessage(`{"name":"read","inputSchema":{"type":"object","properties":{"p":{"type":"string","pattern":"^[a-z]+$"}}}}`),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text, calls string) {
		a := ParseAct(text, json.RawMessage(calls))
		l := ParseAnswer(text)
		if a.Valid != l.Valid || a.Policy != l.Policy || a.Status != l.Status || a.Reason != l.Reason {
			t.Fatalf("label %+v differs from ParseAnswer's %+v", a, l)
		}
		if a.Action != nil {
			var obj map[string]any
			if !a.Valid || !needsCall(a.Policy) || a.ActionReason != "" || json.Unmarshal(a.Action.Arguments, &obj) != nil || obj == nil || len(a.Action.Arguments) > maxArgumentBytes {
				t.Fatalf("action %+v for %q, %q", a, text, calls)
			}
			tb.Check(*a.Action)
		} else if a.Valid && needsCall(a.Policy) && a.ActionReason == "" {
			t.Fatalf("no action and no reason for %q, %q", text, calls)
		}
	})
}
