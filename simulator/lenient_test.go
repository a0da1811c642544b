package simulator

import (
	"strings"
	"testing"

	"github.com/mcpstress/stress/study"
)

// TestParseLenient: each relaxation the lenient parser documents, and what
// stays invalid.
func TestParseLenient(t *testing.T) {
	const obj = `{"operation_status": "failed", "recovery_policy": "select_tool"}`
	for _, c := range []struct {
		name         string
		text         string
		strictReason string // "" when the strict parser accepts it
		valid        bool
		policy       study.Policy
		reason       string
	}{
		{"strict answer", obj, "", true, study.SelectTool, ""},
		{"trailing reasoning", obj + "\nI chose select_tool because the tool is unknown.", ReasonTrailing, true, study.SelectTool, ""},
		{"fence on one line", "```json " + obj + " ```", ReasonFence, true, study.SelectTool, ""},
		{"unclosed fence", "```json\n" + obj, ReasonFence, true, study.SelectTool, ""},
		{"fenced in prose", "Here is my answer:\n```json\n" + obj + "\n```\nHope this helps.", ReasonNotJSON, true, study.SelectTool, ""},
		{"case of the labels", `{"operation_status": "FAILED", "recovery_policy": "Select_Tool"}`, ReasonInvalidStatus, true, study.SelectTool, ""},
		{"spaces in the status", `{"operation_status": " failed ", "recovery_policy": "RETRY_NOW"}`, ReasonInvalidStatus, true, study.RetryNow, ""},
		{"object in prose", `The answer is {"operation_status":"failed","recovery_policy":"authenticate"} since the token expired.`, ReasonNotJSON, true, study.Authenticate, ""},
		{"note before the object", `{"note": "first"} then {"operation_status":"failed","recovery_policy":"retry_later"}`, ReasonTrailing, true, study.RetryLater, ""},
		{"object nested", `{"answer": {"operation_status":"failed","recovery_policy":"stop_or_escalate"}}`, ReasonMissingStatus, true, study.StopOrEscalate, ""},
		// Still invalid: labels outside the vocabulary, other field names, no object.
		{"policy outside the vocabulary", `{"operation_status": "failed", "recovery_policy": "retry"}`, ReasonInvalidPolicy, false, "", ReasonInvalidPolicy},
		{"policy outside the vocabulary in prose", `Sure! {"operation_status": "failed", "recovery_policy": "give up"}`, ReasonNotJSON, false, "", ReasonInvalidPolicy},
		{"field names in another case", `{"Operation_Status": "failed", "Recovery_Policy": "select_tool"}`, ReasonMissingStatus, false, "", ReasonMissingStatus},
		{"second object's policy outside the vocabulary", `{"status": "failed"} and {"operation_status": "failed", "recovery_policy": "nope"}`, ReasonTrailing, false, "", ReasonInvalidPolicy},
		{"prose only", "I would select another tool.", ReasonNotJSON, false, "", ReasonNotJSON},
		{"blank", "   ", ReasonEmpty, false, "", ReasonEmpty},
		{"unclosed object", `{"operation_status": 1, "recovery_policy": "select_tool"`, ReasonNotJSON, false, "", ReasonNotJSON},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := ParseAnswer(c.text)
			if s.Reason != c.strictReason {
				t.Errorf("%q: strict reason %q, want %q", c.text, s.Reason, c.strictReason)
			}
			a := ParseLenient(c.text)
			if a.Valid != c.valid || a.Policy != c.policy || a.Reason != c.reason {
				t.Errorf("%q: lenient %+v, want valid %v, policy %q, reason %q", c.text, a, c.valid, c.policy, c.reason)
			}
		})
	}
}

// TestParseLenientBounded: a text of many braces is read in linear time.
func TestParseLenientBounded(t *testing.T) {
	text := strings.Repeat("{", 1<<20)
	if a := ParseLenient(text); a.Valid || a.Reason != ReasonNotJSON {
		t.Errorf("%+v", a)
	}
}

// FuzzParseLenient: the lenient parser accepts everything the strict one
// does, with the same labels, and never panics; an invalid answer has a
// reason.
func FuzzParseLenient(f *testing.F) {
	for _, s := range []string{
		`{"operation_status": "failed", "recovery_policy": "select_tool"}`,
		"```json\n{\"operation_status\": \"succeeded\", \"recovery_policy\": \"retry_now\"}\n```",
		`x {"operation_status": "FAILED", "recovery_policy": "Retry_Now"} y`,
		"", "```", `{"operation_status": 1}`, `[]`, `{"a":`, "\xff", "{{{{",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, l := ParseAnswer(text), ParseLenient(text)
		if s.Valid && l != s {
			t.Fatalf("%q: strict %+v, lenient %+v", text, s, l)
		}
		if !l.Valid && l.Reason == "" || l.Valid && (!l.Status.Valid() || !l.Policy.Valid()) {
			t.Fatalf("%q: lenient %+v", text, l)
		}
	})
}
