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
