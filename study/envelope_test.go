package study

import (
	"strings"
	"testing"
)

// TestEnvelopeText: the envelope repeats the failure text, except a blank
// one or one over EnvelopeTextMax, which it replaces by the cause in words.
func TestEnvelopeText(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"text repeated", "quantity must be an integer", `"text":"quantity must be an integer"`},
		{"blank text replaced", "  ", `"text":"The call failed: an argument has the wrong type."`},
		{"text over max replaced", strings.Repeat("x", EnvelopeTextMax+1), `"text":"The call failed: an argument has the wrong type."`},
		{"text at max repeated", strings.Repeat("x", EnvelopeTextMax), `"text":"` + strings.Repeat("x", EnvelopeTextMax) + `"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := MarshalEnvelope(EnvelopeSpec{Code: "c", Target: Target{Kind: "parameter", Pointer: "/q"}, Policy: ReviseArguments,
				SameRequest: "unsafe", SideEffects: "none_committed", Text: c.text, Words: "an argument has the wrong type"})
			if err != nil || !strings.Contains(string(b), c.want) {
				t.Errorf("text of %d bytes: %s, %v", len(c.text), b, err)
			}
		})
	}
}
