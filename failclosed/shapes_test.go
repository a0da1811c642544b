package failclosed

import (
	"encoding/json"
	"testing"

	"github.com/mcpstress/stress/study"
)

// shapeCases returns the suite's cases of the error shapes.
func shapeCases(t testing.TB) []Case {
	t.Helper()
	cases, err := BuiltinSuite()
	if err != nil {
		t.Fatal(err)
	}
	var out []Case
	for _, c := range cases {
		if c.Kind == KindShape {
			out = append(out, c)
		}
	}
	return out
}

// TestShapeSuite pins the error-shape cases: every reason of the two
// adapters has a case, the misplaced-trust case (a committed write
// declared retryable) stops, and each decision keeps the properties of
// the other entry points.
func TestShapeSuite(t *testing.T) {
	cases := shapeCases(t)
	reasons := map[Reason]int{}
	shapes := map[study.Condition]int{}
	for _, c := range cases {
		reasons[c.WantReason]++
		shapes[c.Shape]++
		t.Run(c.ID, func(t *testing.T) {
			for _, m := range c.Modes {
				d := c.Decide(m)
				if d.Policy != c.WantPolicy || d.Reason != c.WantReason || d.Delay.Milliseconds() != c.WantDelay {
					t.Errorf("%s: {%s %q %v} (%s), want {%s %q %dms}", m, d.Policy, d.Reason, d.Delay, d.Message, c.WantPolicy, c.WantReason, c.WantDelay)
				}
				if d.Mode != m || (d.Reason == "") != (d.Message == "") || len(d.Message) > 300 {
					t.Errorf("%s: mode %q, reason %q, message %q", m, d.Mode, d.Reason, d.Message)
				}
			}
		})
	}
	for _, r := range []Reason{MissingToolFailure, InvalidToolFailure, UnknownClass, MissingFailureCode, MissingCorrelationID,
		InvalidAgentGuidance, InvalidRetryNotBefore, IdempotencyUnknown, CapabilityFailure, GovernanceRefusal,
		NotRateLimited, InvalidErrorObject, InvalidQuota, ContradictoryRetryable, NotRetryable, MissingRetryDelay, InvalidRetryDelay,
		InvalidApplied, MayBeApplied} {
		if reasons[r] == 0 {
			t.Errorf("no shape case for reason %s", r)
		}
	}
	if shapes[study.ToolFailureShape] != 36 || shapes[study.RateLimited] != 19 {
		t.Errorf("shape cases %v, want 36 toolfailure (5 of them the counter-proposal's applied) and 19 ratelimited", shapes)
	}
	var lie *Case
	for i := range cases {
		if cases[i].ID == "shape_lie_committed_write_retryable" {
			lie = &cases[i]
		}
	}
	if lie == nil || lie.Decide(Registry).Reason != IdempotencyUnknown {
		t.Error("the committed write declared retryable is not refused")
	}
}

// TestShapeUnknownMode checks both adapters refuse an unknown mode.
func TestShapeUnknownMode(t *testing.T) {
	if d := DecideToolFailure([]byte(`{}`), "guess", Call{}); d.Reason != UnknownMode {
		t.Errorf("DecideToolFailure: %+v", d)
	}
	if d := DecideRateLimited([]byte(`{}`), "guess"); d.Reason != UnknownMode {
		t.Errorf("DecideRateLimited: %+v", d)
	}
}

// checkShape is the property every adapter decision keeps: a stop has a
// valid reason and no delay, a policy has no reason, and only retry_later
// waits, at most MaxRetryDelay.
func checkShape(t *testing.T, d Decision) {
	t.Helper()
	if d.Reason != "" && (!d.Reason.Valid() || d.Policy != study.StopOrEscalate || d.Delay != 0) {
		t.Fatalf("stop %+v", d)
	}
	if d.Reason == "" && (!d.Policy.Valid() || d.Policy == study.StopOrEscalate) {
		t.Fatalf("policy %+v", d)
	}
	if d.Delay < 0 || d.Delay > MaxRetryDelay || (d.Delay > 0 && d.Policy != study.RetryLater) {
		t.Fatalf("delay %+v", d)
	}
}

func FuzzDecideToolFailure(f *testing.F) {
	for _, c := range shapeCases(f) {
		if c.Shape == study.ToolFailureShape {
			f.Add(c.Raw(), c.Idempotent)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, idempotent bool) {
		for _, m := range allModes {
			checkShape(t, DecideToolFailure(raw, m, Call{Idempotent: idempotent, Now: study.ShapeEpoch}))
		}
	})
}

func FuzzDecideRateLimited(f *testing.F) {
	for _, c := range shapeCases(f) {
		if c.Shape == study.RateLimited {
			f.Add(c.Raw())
		}
	}
	f.Add([]byte(`{"code": -32023, "message": "", "data": {"retryAfterMs": 0}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, m := range allModes {
			checkShape(t, DecideRateLimited(raw, m))
		}
	})
}

// TestShapeInputsFromRenderings checks the adapters accept what the
// conditions render: a result with a well-formed classification is
// decided without a parse or shape error.
func TestShapeInputsFromRenderings(t *testing.T) {
	raw, _ := json.Marshal(map[string]any{"resultType": "complete", "isError": true,
		"content": []any{map[string]any{"type": "text", "text": "x"}},
		"_meta":   map[string]any{study.ToolFailureKey: study.ToolFailure{Class: study.GovernanceClass, Code: "auth_required", CorrelationID: "S21"}}})
	if d := DecideToolFailure(raw, Registry, Call{}); d.Policy != study.Authenticate {
		t.Errorf("%+v", d)
	}
}
