package failclosed

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/study"
)

// envelope returns the docs/specification.md section 6 listing as a mutable
// map.
func envelope() map[string]any {
	return map[string]any{
		"resultType": "complete",
		"isError":    true,
		"error": map[string]any{
			"schema":      envelopeSchema,
			"code":        "example.mcp.arguments.invalid_type",
			"target":      map[string]any{"kind": "parameter", "pointer": "/walletAddress"},
			"policy":      "revise_arguments",
			"retry":       map[string]any{"sameRequest": "unsafe"},
			"sideEffects": "none_committed",
		},
		"content": []any{map[string]any{"type": "text", "text": "walletAddress must be a string."}},
	}
}

// transient returns a safe transient envelope with the given policy.
func transient(p study.Policy) map[string]any {
	e := envelope()
	env := e["error"].(map[string]any)
	env["code"] = "example.mcp.upstream.unavailable"
	env["target"] = map[string]any{"kind": "dependency", "name": "price-feed"}
	env["policy"] = string(p)
	env["retry"] = map[string]any{"sameRequest": "safe"}
	return e
}

func errOf(e map[string]any) map[string]any { return e["error"].(map[string]any) }

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// with applies f to a fresh listing envelope and returns its bytes.
func with(t testing.TB, base func() map[string]any, f func(e map[string]any)) []byte {
	e := base()
	f(e)
	return marshal(t, e)
}

func listing() map[string]any { return envelope() }

func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

type reasonCase struct {
	name   string
	raw    []byte
	modes  []Mode // nil means both
	policy study.Policy
	reason Reason
	delay  time.Duration
}

func reasonCases(t testing.TB) []reasonCase {
	S := study.StopOrEscalate
	tr := func(p study.Policy) func() map[string]any { return func() map[string]any { return transient(p) } }
	big := with(t, listing, func(e map[string]any) {
		e["content"] = []any{map[string]any{"type": "text", "text": strings.Repeat("x", MaxSize)}}
	})
	deep64 := with(t, listing, func(e map[string]any) { e["structuredContent"] = json.RawMessage(nested(MaxDepth - 1)) })
	deep65 := with(t, listing, func(e map[string]any) { e["structuredContent"] = json.RawMessage(nested(MaxDepth)) })
	return []reasonCase{
		// Accepted inputs.
		{name: "listing", raw: with(t, listing, func(map[string]any) {}), policy: study.ReviseArguments},
		{name: "depth exactly MaxDepth", raw: deep64, policy: study.ReviseArguments},
		{name: "outer members ignored", raw: with(t, listing, func(e map[string]any) {
			e["structuredContent"] = map[string]any{"x": 1}
			e["_meta"] = map[string]any{"y": 2}
		}), policy: study.ReviseArguments},
		{name: "non-text block", raw: with(t, listing, func(e map[string]any) {
			e["content"] = append(e["content"].([]any), map[string]any{"type": "image", "data": "AA==", "mimeType": "image/png"})
		}), policy: study.ReviseArguments},
		{name: "escaped pointer", raw: with(t, listing, func(e map[string]any) {
			errOf(e)["target"] = map[string]any{"kind": "parameter", "pointer": "/a~1b/~0c"}
		}), policy: study.ReviseArguments},
		{name: "credential without name", raw: with(t, listing, func(e map[string]any) {
			errOf(e)["code"], errOf(e)["policy"] = "example.mcp.auth.required", "authenticate"
			errOf(e)["target"] = map[string]any{"kind": "credential"}
		}), policy: study.Authenticate},
		{name: "credential with name", raw: with(t, listing, func(e map[string]any) {
			errOf(e)["code"], errOf(e)["policy"] = "example.mcp.auth.required", "authenticate"
			errOf(e)["target"] = map[string]any{"kind": "credential", "name": "apiKey"}
		}), policy: study.Authenticate},
		{name: "dependency without name", raw: with(t, tr(study.RetryNow), func(e map[string]any) {
			errOf(e)["target"] = map[string]any{"kind": "dependency"}
		}), policy: study.RetryNow},
		{name: "zero delay", raw: with(t, tr(study.RetryLater), func(e map[string]any) {
			errOf(e)["retry"] = map[string]any{"sameRequest": "safe", "afterMs": 0}
		}), policy: study.RetryLater},
		{name: "maximum delay", raw: with(t, tr(study.RetryLater), func(e map[string]any) {
			errOf(e)["retry"] = map[string]any{"sameRequest": "safe", "afterMs": MaxRetryDelay.Milliseconds()}
		}), policy: study.RetryLater, delay: MaxRetryDelay},
		{name: "declared stop, registry", raw: with(t, listing, func(e map[string]any) { errOf(e)["policy"] = "stop_or_escalate" }),
			modes: []Mode{Registry}, policy: study.ReviseArguments},
		{name: "declared stop on safe transient, registry", raw: with(t, tr(S), func(map[string]any) {}),
			modes: []Mode{Registry}, policy: study.RetryNow},

		// One or more inputs per reason, in check order.
		{name: "too large", raw: big, policy: S, reason: TooLarge},
		{name: "empty", raw: nil, policy: S, reason: InvalidJSON},
		{name: "blank", raw: []byte(" \n\t"), policy: S, reason: InvalidJSON},
		{name: "truncated", raw: []byte(`{"resultType": "complete"`), policy: S, reason: InvalidJSON},
		{name: "trailing data", raw: []byte(`{} {}`), policy: S, reason: InvalidJSON},
		{name: "trailing garbage", raw: []byte(`{}]`), policy: S, reason: InvalidJSON},
		{name: "non-string key", raw: []byte(`{1: 2}`), policy: S, reason: InvalidJSON},
		{name: "invalid UTF-8", raw: []byte("{\"resultType\": \"compl\xffete\"}"), policy: S, reason: InvalidJSON},
		{name: "too deep", raw: deep65, policy: S, reason: TooDeep},
		{name: "too deep and unterminated", raw: []byte(strings.Repeat("[", 10000)), policy: S, reason: TooDeep},
		{name: "duplicate policy", raw: []byte(`{"resultType": "complete", "isError": true, "error": {"policy": "revise_arguments", "policy": "retry_now"}}`), policy: S, reason: DuplicateMember},
		{name: "duplicate top-level", raw: []byte(`{"isError": false, "isError": true}`), policy: S, reason: DuplicateMember},
		{name: "array", raw: []byte(`[]`), policy: S, reason: NotObject},
		{name: "null", raw: []byte(`null`), policy: S, reason: NotObject},
		{name: "number", raw: []byte(`12`), policy: S, reason: NotObject},
		{name: "string", raw: []byte(`"complete"`), policy: S, reason: NotObject},
		{name: "resultType absent", raw: with(t, listing, func(e map[string]any) { delete(e, "resultType") }), policy: S, reason: WrongResultType},
		{name: "resultType other", raw: with(t, listing, func(e map[string]any) { e["resultType"] = "input_required" }), policy: S, reason: WrongResultType},
		{name: "resultType number", raw: with(t, listing, func(e map[string]any) { e["resultType"] = 1 }), policy: S, reason: WrongResultType},
		{name: "content absent", raw: with(t, listing, func(e map[string]any) { delete(e, "content") }), policy: S, reason: MissingContent},
		{name: "content empty", raw: with(t, listing, func(e map[string]any) { e["content"] = []any{} }), policy: S, reason: MissingContent},
		{name: "content null", raw: with(t, listing, func(e map[string]any) { e["content"] = nil }), policy: S, reason: InvalidContent},
		{name: "content object", raw: with(t, listing, func(e map[string]any) { e["content"] = map[string]any{"type": "text", "text": "x"} }), policy: S, reason: InvalidContent},
		{name: "block string", raw: with(t, listing, func(e map[string]any) { e["content"] = []any{"x"} }), policy: S, reason: InvalidContent},
		{name: "block without type", raw: with(t, listing, func(e map[string]any) { e["content"] = []any{map[string]any{"text": "x"}} }), policy: S, reason: InvalidContent},
		{name: "block empty type", raw: with(t, listing, func(e map[string]any) { e["content"] = []any{map[string]any{"type": "", "text": "x"}} }), policy: S, reason: InvalidContent},
		{name: "text block without text", raw: with(t, listing, func(e map[string]any) { e["content"] = []any{map[string]any{"type": "text"}} }), policy: S, reason: InvalidContent},
		{name: "text block number", raw: with(t, listing, func(e map[string]any) {
			e["content"] = append(e["content"].([]any), map[string]any{"type": "text", "text": 3})
		}), policy: S, reason: InvalidContent},
		{name: "isError false", raw: with(t, listing, func(e map[string]any) { e["isError"] = false }), policy: S, reason: NotErrorResult},
		{name: "isError absent", raw: with(t, listing, func(e map[string]any) { delete(e, "isError") }), policy: S, reason: NotErrorResult},
		{name: "isError string", raw: with(t, listing, func(e map[string]any) { e["isError"] = "true" }), policy: S, reason: NotErrorResult},
		{name: "error absent", raw: with(t, listing, func(e map[string]any) { delete(e, "error") }), policy: S, reason: MissingEnvelope},
		{name: "error string", raw: with(t, listing, func(e map[string]any) { e["error"] = "invalid type" }), policy: S, reason: InvalidEnvelope},
		{name: "error null", raw: with(t, listing, func(e map[string]any) { e["error"] = nil }), policy: S, reason: InvalidEnvelope},
		{name: "schema absent", raw: with(t, listing, func(e map[string]any) { delete(errOf(e), "schema") }), policy: S, reason: WrongSchema},
		{name: "schema other", raw: with(t, listing, func(e map[string]any) { errOf(e)["schema"] = "urn:example:mcp-error:2" }), policy: S, reason: WrongSchema},
		{name: "unknown envelope member", raw: with(t, listing, func(e map[string]any) { errOf(e)["onlyIf"] = "weekday" }), policy: S, reason: UnknownMember},
		{name: "case-variant member", raw: with(t, listing, func(e map[string]any) { errOf(e)["Policy"] = "retry_now" }), policy: S, reason: UnknownMember},
		{name: "unknown target member", raw: with(t, listing, func(e map[string]any) { errOf(e)["target"].(map[string]any)["scope"] = "all" }), policy: S, reason: UnknownMember},
		{name: "unknown retry member", raw: with(t, listing, func(e map[string]any) { errOf(e)["retry"].(map[string]any)["maxAttempts"] = 9 }), policy: S, reason: UnknownMember},
		{name: "code absent", raw: with(t, listing, func(e map[string]any) { delete(errOf(e), "code") }), policy: S, reason: UnknownCode},
		{name: "code number", raw: with(t, listing, func(e map[string]any) { errOf(e)["code"] = -32602 }), policy: S, reason: UnknownCode},
		{name: "code unknown", raw: with(t, listing, func(e map[string]any) { errOf(e)["code"] = "example.mcp.rate.limited" }), policy: S, reason: UnknownCode},
		{name: "target absent", raw: with(t, listing, func(e map[string]any) { delete(errOf(e), "target") }), policy: S, reason: InvalidTarget},
		{name: "target string", raw: with(t, listing, func(e map[string]any) { errOf(e)["target"] = "/walletAddress" }), policy: S, reason: InvalidTarget},
		{name: "target kind absent", raw: with(t, listing, func(e map[string]any) { errOf(e)["target"] = map[string]any{"pointer": "/walletAddress"} }), policy: S, reason: InvalidTarget},
		{name: "pointer absent", raw: with(t, listing, func(e map[string]any) { errOf(e)["target"] = map[string]any{"kind": "parameter"} }), policy: S, reason: InvalidTarget},
		{name: "pointer without slash", raw: with(t, listing, func(e map[string]any) {
			errOf(e)["target"] = map[string]any{"kind": "parameter", "pointer": "walletAddress"}
		}), policy: S, reason: InvalidTarget},
		{name: "root pointer", raw: with(t, listing, func(e map[string]any) { errOf(e)["target"] = map[string]any{"kind": "parameter", "pointer": ""} }), policy: S, reason: InvalidTarget},
		{name: "bad pointer escape", raw: with(t, listing, func(e map[string]any) { errOf(e)["target"] = map[string]any{"kind": "parameter", "pointer": "/a~2"} }), policy: S, reason: InvalidTarget},
		{name: "parameter with name", raw: with(t, listing, func(e map[string]any) {
			errOf(e)["target"] = map[string]any{"kind": "parameter", "pointer": "/a", "name": "a"}
		}), policy: S, reason: InvalidTarget},
		{name: "tool without name", raw: with(t, listing, func(e map[string]any) {
			errOf(e)["code"], errOf(e)["policy"] = "example.mcp.tool.unknown", "select_tool"
			errOf(e)["target"] = map[string]any{"kind": "tool"}
		}), policy: S, reason: InvalidTarget},
		{name: "tool empty name", raw: with(t, listing, func(e map[string]any) {
			errOf(e)["code"], errOf(e)["policy"] = "example.mcp.tool.unknown", "select_tool"
			errOf(e)["target"] = map[string]any{"kind": "tool", "name": ""}
		}), policy: S, reason: InvalidTarget},
		{name: "credential name number", raw: with(t, listing, func(e map[string]any) {
			errOf(e)["code"], errOf(e)["policy"] = "example.mcp.auth.required", "authenticate"
			errOf(e)["target"] = map[string]any{"kind": "credential", "name": 7}
		}), policy: S, reason: InvalidTarget},
		{name: "unknown target kind", raw: with(t, listing, func(e map[string]any) { errOf(e)["target"] = map[string]any{"kind": "widget"} }), policy: S, reason: TargetMismatch},
		{name: "transient with tool target", raw: with(t, tr(study.RetryNow), func(e map[string]any) { errOf(e)["target"] = map[string]any{"kind": "tool", "name": "x"} }), policy: S, reason: TargetMismatch},
		{name: "policy absent", raw: with(t, listing, func(e map[string]any) { delete(errOf(e), "policy") }), policy: S, reason: UnknownPolicy},
		{name: "policy wrong case", raw: with(t, listing, func(e map[string]any) { errOf(e)["policy"] = "Revise_Arguments" }), policy: S, reason: UnknownPolicy},
		{name: "policy array", raw: with(t, listing, func(e map[string]any) { errOf(e)["policy"] = []any{"revise_arguments"} }), policy: S, reason: UnknownPolicy},
		{name: "select_tool for invalid type", raw: with(t, listing, func(e map[string]any) { errOf(e)["policy"] = "select_tool" }), policy: S, reason: IncompatiblePolicy},
		{name: "retry_now for invalid type", raw: with(t, listing, func(e map[string]any) { errOf(e)["policy"] = "retry_now" }), policy: S, reason: IncompatiblePolicy},
		{name: "revise for transient", raw: with(t, tr(study.ReviseArguments), func(map[string]any) {}), policy: S, reason: IncompatiblePolicy},
		{name: "retry absent", raw: with(t, listing, func(e map[string]any) { delete(errOf(e), "retry") }), policy: S, reason: InvalidSameRequest},
		{name: "retry string", raw: with(t, listing, func(e map[string]any) { errOf(e)["retry"] = "unsafe" }), policy: S, reason: InvalidSameRequest},
		{name: "sameRequest absent", raw: with(t, listing, func(e map[string]any) { errOf(e)["retry"] = map[string]any{} }), policy: S, reason: InvalidSameRequest},
		{name: "sameRequest boolean", raw: with(t, listing, func(e map[string]any) { errOf(e)["retry"] = map[string]any{"sameRequest": true} }), policy: S, reason: InvalidSameRequest},
		{name: "sameRequest upper case", raw: with(t, listing, func(e map[string]any) { errOf(e)["retry"] = map[string]any{"sameRequest": "SAFE"} }), policy: S, reason: InvalidSameRequest},
		{name: "negative delay", raw: []byte(strings.Replace(string(with(t, tr(study.RetryLater), func(map[string]any) {})), `"sameRequest":"safe"`, `"sameRequest":"safe","afterMs":-1`, 1)), policy: S, reason: InvalidRetryDelay},
		{name: "fractional delay", raw: []byte(strings.Replace(string(with(t, tr(study.RetryLater), func(map[string]any) {})), `"sameRequest":"safe"`, `"sameRequest":"safe","afterMs":1.5`, 1)), policy: S, reason: InvalidRetryDelay},
		{name: "exponent delay", raw: []byte(strings.Replace(string(with(t, tr(study.RetryLater), func(map[string]any) {})), `"sameRequest":"safe"`, `"sameRequest":"safe","afterMs":1e3`, 1)), policy: S, reason: InvalidRetryDelay},
		{name: "string delay", raw: []byte(strings.Replace(string(with(t, tr(study.RetryLater), func(map[string]any) {})), `"sameRequest":"safe"`, `"sameRequest":"safe","afterMs":"2000"`, 1)), policy: S, reason: InvalidRetryDelay},
		{name: "huge delay", raw: []byte(strings.Replace(string(with(t, tr(study.RetryLater), func(map[string]any) {})), `"sameRequest":"safe"`, `"sameRequest":"safe","afterMs":99999999999999999999999`, 1)), policy: S, reason: InvalidRetryDelay},
		{name: "delay over maximum", raw: with(t, tr(study.RetryLater), func(e map[string]any) {
			errOf(e)["retry"] = map[string]any{"sameRequest": "safe", "afterMs": MaxRetryDelay.Milliseconds() + 1}
		}), policy: S, reason: InvalidRetryDelay},
		{name: "retry_later without delay", raw: with(t, tr(study.RetryLater), func(map[string]any) {}), policy: S, reason: MissingRetryDelay},
		{name: "delay with retry_now", raw: with(t, tr(study.RetryNow), func(e map[string]any) {
			errOf(e)["retry"] = map[string]any{"sameRequest": "safe", "afterMs": 10}
		}), policy: S, reason: UnexpectedRetryDelay},
		{name: "delay with revise", raw: with(t, listing, func(e map[string]any) {
			errOf(e)["retry"] = map[string]any{"sameRequest": "unsafe", "afterMs": 10}
		}), policy: S, reason: UnexpectedRetryDelay},
		{name: "sideEffects absent", raw: with(t, listing, func(e map[string]any) { delete(errOf(e), "sideEffects") }), policy: S, reason: InvalidSideEffects},
		{name: "sideEffects other", raw: with(t, listing, func(e map[string]any) { errOf(e)["sideEffects"] = "none" }), policy: S, reason: InvalidSideEffects},
		{name: "retry_now unsafe", raw: with(t, tr(study.RetryNow), func(e map[string]any) { errOf(e)["retry"] = map[string]any{"sameRequest": "unsafe"} }), policy: S, reason: UnsafeReplay},
		{name: "retry_now committed", raw: with(t, tr(study.RetryNow), func(e map[string]any) { errOf(e)["sideEffects"] = "committed" }), policy: S, reason: UnsafeReplay},
		{name: "retry_now side effects unknown", raw: with(t, tr(study.RetryNow), func(e map[string]any) { errOf(e)["sideEffects"] = "unknown" }), policy: S, reason: UnsafeReplay},
		{name: "retry_later unsafe", raw: with(t, tr(study.RetryLater), func(e map[string]any) {
			errOf(e)["retry"] = map[string]any{"sameRequest": "unsafe", "afterMs": 500}
		}), policy: S, reason: UnsafeReplay},
		{name: "declared stop on unsafe transient, registry", raw: with(t, tr(S), func(e map[string]any) { errOf(e)["retry"] = map[string]any{"sameRequest": "unsafe"} }),
			modes: []Mode{Registry}, policy: S, reason: UnsafeReplay},
		{name: "declared stop, explicit", raw: with(t, listing, func(e map[string]any) { errOf(e)["policy"] = "stop_or_escalate" }),
			modes: []Mode{ExplicitAction}, policy: S, reason: DeclaredStop},
		{name: "declared stop on transient, explicit", raw: with(t, tr(S), func(map[string]any) {}),
			modes: []Mode{ExplicitAction}, policy: S, reason: DeclaredStop},
		{name: "empty mode", raw: with(t, listing, func(map[string]any) {}), modes: []Mode{""}, policy: S, reason: UnknownMode},
		{name: "other mode", raw: with(t, listing, func(map[string]any) {}), modes: []Mode{"Registry"}, policy: S, reason: UnknownMode},
	}
}

func TestDecideReasons(t *testing.T) {
	covered := map[Reason]bool{}
	for _, tc := range categoryCases(t) {
		covered[tc.reason] = true
	}
	for _, c := range shapeCases(t) {
		covered[c.WantReason] = true // decided in TestShapeSuite
	}
	for _, tc := range reasonCases(t) {
		modes := tc.modes
		if modes == nil {
			modes = allModes
		}
		for _, m := range modes {
			t.Run(fmt.Sprintf("%s/%s", tc.name, m), func(t *testing.T) {
				d := Decide(tc.raw, m)
				if d.Policy != tc.policy || d.Reason != tc.reason || d.Delay != tc.delay {
					t.Errorf("Decide = {%s %q %v} (%s), want {%s %q %v}", d.Policy, d.Reason, d.Delay, d.Message, tc.policy, tc.reason, tc.delay)
				}
				if d.Mode != m {
					t.Errorf("Mode = %q, want %q", d.Mode, m)
				}
				if (d.Reason == "") != (d.Message == "") {
					t.Errorf("Reason %q with Message %q", d.Reason, d.Message)
				}
				if len(d.Message) > 300 {
					t.Errorf("Message is %d bytes", len(d.Message))
				}
				checkProperty(t, tc.raw, m, d)
			})
		}
		covered[tc.reason] = true
	}
	for _, r := range allReasons {
		if !covered[r] {
			t.Errorf("no test case for reason %s", r)
		}
	}
}

func TestSuite(t *testing.T) {
	cases, err := BuiltinSuite()
	if err != nil {
		t.Fatal(err)
	}
	disk, err := loadSuite(os.DirFS("."), suiteDir)
	if err != nil || len(disk) != len(cases) {
		t.Fatalf("suite on disk: %d cases, %v; embedded: %d", len(disk), err, len(cases))
	}
	count := map[Kind]int{}
	reasons := map[Reason]int{}
	for _, c := range cases {
		count[c.Kind]++
		if c.Kind != KindShape {
			reasons[c.WantReason]++
		}
		if len(c.Modes) != 2 {
			t.Errorf("%s: modes %v, want both", c.ID, c.Modes)
		}
	}
	if count[KindTransient] != 2 || count[KindMalformed] != 17 || count[KindControl] != 0 || count[KindCategory] != 25 || count[KindShape] != 55 {
		t.Errorf("suite holds %v, want 2 transient, 17 malformed, 25 category and 55 shape cases", count)
	}
	if reasons[MissingContent] < 1 || reasons[InvalidContent] < 1 || reasons[TargetMismatch] != 3 || reasons[UnsafeReplay] < 1 {
		t.Errorf("suite reasons %v lack a required case", reasons)
	}
	// The contradictions the issue names, each failing closed on its own.
	if reasons[ContradictoryRetryable] != 3 || reasons[TextCopyMismatch] < 1 || reasons[UnknownCategory] < 1 || reasons[RetryableConflict] < 1 || reasons[MissingExplanation] < 1 {
		t.Errorf("suite reasons %v lack a category contradiction", reasons)
	}
	results := Run(cases)
	if len(results) != 2*len(cases) {
		t.Fatalf("Run returned %d results, want %d", len(results), 2*len(cases))
	}
	for _, r := range results {
		if !r.Pass {
			t.Errorf("%s/%s: %s (%s)", r.ID, r.Mode, r.Diff, r.Got.Message)
		}
	}
}

// TestCorpusControls runs the 21 control cases Controls builds from the
// shipped corpus: the preferred policy in both modes.
func TestCorpusControls(t *testing.T) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	cases := Controls(m.Corpus.Scenarios)
	if len(cases) != 21 {
		t.Fatalf("%d controls, want 21", len(cases))
	}
	res := Run(cases)
	if len(res) != 42 {
		t.Fatalf("%d results, want 42", len(res))
	}
	for i, r := range res {
		if !r.Pass || r.Kind != KindControl || r.Got.Policy != m.Corpus.Scenarios[i/2].Preferred {
			t.Errorf("%s/%s: %s (%s)", r.ID, r.Mode, r.Diff, r.Got.Message)
		}
	}
	tr := study.Scenario{ID: "X", Preferred: study.RetryLater, ControlEnvelope: with(t, func() map[string]any { return transient(study.RetryLater) }, func(e map[string]any) {
		errOf(e)["retry"] = map[string]any{"sameRequest": "safe", "afterMs": 1500}
	})}
	if c := Controls([]study.Scenario{tr}); c[0].WantDelay != 1500 || !Run(c)[0].Pass {
		t.Errorf("a retry_later control: %+v", c[0])
	}
}

// TestControls checks the 21 counterfactual control envelopes
// (docs/specification.md sections 2 and 6): the preferred policy in both
// modes.
func TestControls(t *testing.T) {
	type row struct {
		cause  study.Cause
		target map[string]any
		n      int
	}
	rows := []row{
		{study.UnknownTool, map[string]any{"kind": "tool", "name": "nonexistent_tool_probe"}, 10},
		{study.InvalidType, map[string]any{"kind": "parameter", "pointer": "/walletAddress"}, 7},
		{study.InvalidValue, map[string]any{"kind": "parameter", "pointer": "/query"}, 3},
		{study.AuthRequired, map[string]any{"kind": "credential"}, 1},
	}
	var cases []Case
	for _, r := range rows {
		info, _ := r.cause.Info()
		for i := range r.n {
			e := envelope()
			env := errOf(e)
			env["code"], env["target"], env["policy"] = info.Code, r.target, string(info.Preferred[0])
			cases = append(cases, Case{
				ID: fmt.Sprintf("%s_%d", r.cause, i+1), Kind: KindControl, Modes: allModes,
				WantPolicy: info.Preferred[0], Input: marshal(t, e),
			})
		}
	}
	if len(cases) != 21 {
		t.Fatalf("%d controls, want 21", len(cases))
	}
	for _, r := range Run(cases) {
		if !r.Pass {
			t.Errorf("%s/%s: %s (%s)", r.ID, r.Mode, r.Diff, r.Got.Message)
		}
	}
}

func TestLoadSuiteErrors(t *testing.T) {
	good := `{"id": "a", "kind": "malformed", "modes": ["registry"], "want_policy": "stop_or_escalate", "want_reason": "not_object", "input_text": "[]"}`
	for name, files := range map[string]map[string]string{
		"empty dir":           {"s/README": "x"},
		"unknown field":       {"s/a.json": strings.Replace(good, `"id"`, `"ID2": 1, "id"`, 1)},
		"duplicate id":        {"s/a.json": good, "s/b.json": good},
		"bad reason":          {"s/a.json": strings.Replace(good, "not_object", "nope", 1)},
		"reason and policy":   {"s/a.json": strings.Replace(good, "stop_or_escalate", "retry_now", 1)},
		"bad mode":            {"s/a.json": strings.Replace(good, `["registry"]`, `["both"]`, 1)},
		"no modes":            {"s/a.json": strings.Replace(good, `["registry"]`, `[]`, 1)},
		"no input":            {"s/a.json": strings.Replace(good, `"input_text": "[]"`, `"note": ""`, 1)},
		"both inputs":         {"s/a.json": strings.Replace(good, `"input_text"`, `"input": {}, "input_text"`, 1)},
		"bad kind":            {"s/a.json": strings.Replace(good, `"malformed"`, `"broken"`, 1)},
		"delay without later": {"s/a.json": strings.Replace(good, `"input_text"`, `"want_delay_ms": 5, "input_text"`, 1)},
		"malformed no reason": {"s/a.json": `{"id": "a", "kind": "malformed", "modes": ["registry"], "want_policy": "retry_now", "want_reason": "", "input": {}}`},
	} {
		t.Run(name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for p, s := range files {
				fsys[p] = &fstest.MapFile{Data: []byte(s)}
			}
			if _, err := loadSuite(fsys, "s"); err == nil {
				t.Errorf("%s: LoadSuite succeeded, want an error", name)
			}
		})
	}
	fsys := fstest.MapFS{"s/a.json": &fstest.MapFile{Data: []byte(good)}}
	cases, err := loadSuite(fsys, "s")
	if err != nil || len(cases) != 1 || string(cases[0].Raw()) != "[]" {
		t.Errorf("LoadSuite(good) = %v, %v", cases, err)
	}
}

// checkProperty asserts the fuzz property on one decision: either an
// actionable policy consistent with the envelope, or stop_or_escalate with a
// known reason.
func checkProperty(t *testing.T, raw []byte, mode Mode, d Decision) {
	t.Helper()
	if d.Mode != mode {
		t.Fatalf("Mode = %q, want %q", d.Mode, mode)
	}
	if d.Reason != "" {
		if d.Policy != study.StopOrEscalate || !d.Reason.Valid() || d.Delay != 0 {
			t.Fatalf("stop decision %+v: want stop_or_escalate, a known reason and no delay", d)
		}
		return
	}
	if !d.Policy.Valid() || d.Policy == study.StopOrEscalate {
		t.Fatalf("empty reason with policy %q", d.Policy)
	}
	if len(raw) > MaxSize {
		t.Fatalf("accepted %d bytes", len(raw))
	}
	// Read the envelope independently, with exact member names.
	var res map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("accepted input that does not decode: %v", err)
	}
	if res["resultType"] != "complete" || res["isError"] != true {
		t.Fatalf("accepted resultType %v isError %v", res["resultType"], res["isError"])
	}
	if c, ok := res["content"].([]any); !ok || len(c) == 0 {
		t.Fatalf("accepted content %v", res["content"])
	}
	env, _ := res["error"].(map[string]any)
	if env["schema"] != envelopeSchema {
		t.Fatalf("accepted schema %v", env["schema"])
	}
	code, _ := env["code"].(string)
	cause, ok := study.CauseOfCode(code)
	if !ok || cause != d.Cause {
		t.Fatalf("accepted code %q as cause %q", code, d.Cause)
	}
	info, _ := cause.Info()
	declared, _ := env["policy"].(string)
	switch mode {
	case ExplicitAction:
		if study.Policy(declared) != d.Policy {
			t.Fatalf("explicit mode chose %s, envelope says %q", d.Policy, declared)
		}
	case Registry:
		if !slices.Contains(info.Preferred, d.Policy) {
			t.Fatalf("registry chose %s for %s", d.Policy, code)
		}
		if declared != string(d.Policy) && declared != string(study.StopOrEscalate) {
			t.Fatalf("registry chose %s, envelope says %q", d.Policy, declared)
		}
	}
	retry, _ := env["retry"].(map[string]any)
	if d.Policy == study.RetryNow || d.Policy == study.RetryLater {
		if retry["sameRequest"] != "safe" || env["sideEffects"] != "none_committed" {
			t.Fatalf("replay %s with sameRequest %v and sideEffects %v", d.Policy, retry["sameRequest"], env["sideEffects"])
		}
	}
	if d.Policy == study.RetryLater {
		n, _ := retry["afterMs"].(json.Number)
		if ms, err := n.Int64(); err != nil || time.Duration(ms)*time.Millisecond != d.Delay {
			t.Fatalf("retry_later delay %v, afterMs %v", d.Delay, retry["afterMs"])
		}
	} else if d.Delay != 0 {
		t.Fatalf("delay %v with %s", d.Delay, d.Policy)
	}
}

// FuzzDecide feeds every input to both clients (Decide and
// DecideCategory) in both modes and checks each one's property.
func FuzzDecide(f *testing.F) {
	cases, err := BuiltinSuite()
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		f.Add(c.Raw())
	}
	for _, tc := range append(reasonCases(f), categoryCases(f)...) {
		if len(tc.raw) <= 1<<16 {
			f.Add(tc.raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, m := range allModes {
			checkProperty(t, raw, m, Decide(raw, m))
			checkCategoryProperty(t, raw, m, DecideCategory(raw, m))
		}
	})
}

func BenchmarkDecide(b *testing.B) {
	raw := marshal(b, envelope())
	for _, m := range allModes {
		b.Run(string(m), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d := Decide(raw, m); d.Reason != "" {
					b.Fatal(d.Reason)
				}
			}
		})
	}
}

func ExampleDecide() {
	raw := []byte(`{"resultType": "complete", "isError": true,
 "error": {"schema": "urn:example:mcp-error:1",
           "code": "example.mcp.arguments.invalid_type",
           "target": {"kind": "parameter", "pointer": "/walletAddress"},
           "policy": "revise_arguments",
           "retry": {"sameRequest": "unsafe"},
           "sideEffects": "none_committed"},
 "content": [{"type": "text", "text": "walletAddress must be a string."}]}`)
	d := Decide(raw, ExplicitAction)
	fmt.Println(d.Policy, d.Cause)

	unsafe := []byte(`{"resultType": "complete", "isError": true,
 "error": {"schema": "urn:example:mcp-error:1",
           "code": "example.mcp.upstream.unavailable",
           "target": {"kind": "dependency"},
           "policy": "retry_now",
           "retry": {"sameRequest": "unsafe"},
           "sideEffects": "none_committed"},
 "content": [{"type": "text", "text": "Upstream unavailable."}]}`)
	d = Decide(unsafe, Registry)
	fmt.Println(d.Policy, d.Reason)
	// Output:
	// revise_arguments invalid_type
	// stop_or_escalate unsafe_replay
}
