package failclosed

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpstress/stress/study"
)

// categoryResult returns a category-contract result whose text copy is the
// serialized structuredContent sc.
func categoryResult(t testing.TB, sc map[string]any) map[string]any {
	return map[string]any{
		"resultType":        "complete",
		"isError":           true,
		"content":           []any{map[string]any{"type": "text", "text": string(marshal(t, sc))}},
		"structuredContent": sc,
	}
}

func contractOf(cat string, retryable bool) map[string]any {
	return map[string]any{"errorCategory": cat, "isRetryable": retryable, "explanation": "The " + cat + " check failed."}
}

// cat builds a result from a contract, edits the contract (f) and then,
// when resync is set, rewrites the text copy to match it.
func cat(t testing.TB, sc map[string]any, resync bool, f func(res, sc map[string]any)) []byte {
	res := categoryResult(t, sc)
	f(res, sc)
	if resync {
		res["content"] = []any{map[string]any{"type": "text", "text": string(marshal(t, sc))}}
	}
	return marshal(t, res)
}

func categoryCases(t testing.TB) []reasonCase {
	S := study.StopOrEscalate
	none := func(res, sc map[string]any) {}
	tr, va, pe, bu := contractOf("transient", true), contractOf("validation", false), contractOf("permission", false), contractOf("business", false)
	edit := func(base map[string]any, f func(sc map[string]any)) map[string]any {
		sc := map[string]any{}
		for k, v := range base {
			sc[k] = v
		}
		f(sc)
		return sc
	}
	return []reasonCase{
		// Accepted inputs.
		{name: "transient retryable", raw: cat(t, tr, false, none), policy: study.RetryLater},
		{name: "validation", raw: cat(t, va, false, none), policy: study.ReviseArguments},
		{name: "permission", raw: cat(t, pe, false, none), policy: study.Authenticate},
		{name: "alias only", raw: cat(t, edit(va, func(sc map[string]any) { delete(sc, "isRetryable"); sc["retriable"] = false }), false, none), policy: study.ReviseArguments},
		{name: "copy uses the alias", raw: cat(t, va, false, func(res, sc map[string]any) {
			res["content"] = []any{map[string]any{"type": "text", "text": `{"errorCategory":"validation","retriable":false,"explanation":"The validation check failed."}`}}
		}), policy: study.ReviseArguments},
		{name: "aliases agree", raw: cat(t, edit(tr, func(sc map[string]any) { sc["retriable"] = true }), false, none), policy: study.RetryLater},
		{name: "next action", raw: cat(t, edit(va, func(sc map[string]any) { sc["nextAction"] = "Retry now." }), false, none), policy: study.ReviseArguments},
		{name: "two equal copies and prose", raw: cat(t, pe, false, func(res, sc map[string]any) {
			c := res["content"].([]any)[0]
			res["content"] = []any{map[string]any{"type": "text", "text": "Access denied."}, c, map[string]any{"type": "image", "data": "AA=="}, c}
		}), policy: study.Authenticate},
		{name: "copy with white space", raw: cat(t, va, false, func(res, sc map[string]any) {
			res["content"] = []any{map[string]any{"type": "text", "text": "\n  {\"explanation\": \"The validation check failed.\", \"errorCategory\": \"validation\", \"isRetryable\": false}\n"}}
		}), policy: study.ReviseArguments},
		{name: "section 6 envelope ignored", raw: cat(t, va, false, func(res, sc map[string]any) { res["error"] = "anything" }), policy: study.ReviseArguments},

		// Shared checks.
		{name: "category not object", raw: []byte(`[]`), policy: S, reason: NotObject},
		{name: "category isError false", raw: cat(t, va, false, func(res, sc map[string]any) { res["isError"] = false }), policy: S, reason: NotErrorResult},
		{name: "category no content", raw: cat(t, va, false, func(res, sc map[string]any) { delete(res, "content") }), policy: S, reason: MissingContent},

		// One or more inputs per category reason, in check order.
		{name: "structuredContent absent", raw: cat(t, va, false, func(res, sc map[string]any) { delete(res, "structuredContent") }), policy: S, reason: MissingStructuredContent},
		{name: "structuredContent null", raw: cat(t, va, false, func(res, sc map[string]any) { res["structuredContent"] = nil }), policy: S, reason: InvalidStructuredContent},
		{name: "structuredContent string", raw: cat(t, va, false, func(res, sc map[string]any) { res["structuredContent"] = "validation" }), policy: S, reason: InvalidStructuredContent},
		{name: "unknown contract member", raw: cat(t, edit(tr, func(sc map[string]any) { sc["maxAttempts"] = 3 }), true, none), policy: S, reason: UnknownMember},
		{name: "category absent", raw: cat(t, edit(va, func(sc map[string]any) { delete(sc, "errorCategory") }), true, none), policy: S, reason: UnknownCategory},
		{name: "category unknown", raw: cat(t, edit(va, func(sc map[string]any) { sc["errorCategory"] = "protocol" }), true, none), policy: S, reason: UnknownCategory},
		{name: "category number", raw: cat(t, edit(va, func(sc map[string]any) { sc["errorCategory"] = 2 }), true, none), policy: S, reason: UnknownCategory},
		{name: "retryable absent", raw: cat(t, edit(va, func(sc map[string]any) { delete(sc, "isRetryable") }), true, none), policy: S, reason: InvalidRetryable},
		{name: "retryable string", raw: cat(t, edit(va, func(sc map[string]any) { sc["isRetryable"] = "false" }), true, none), policy: S, reason: InvalidRetryable},
		{name: "retriable null", raw: cat(t, edit(va, func(sc map[string]any) { sc["retriable"] = nil }), true, none), policy: S, reason: InvalidRetryable},
		{name: "aliases disagree", raw: cat(t, edit(va, func(sc map[string]any) { sc["retriable"] = true }), true, none), policy: S, reason: RetryableConflict},
		{name: "aliases disagree on transient", raw: cat(t, edit(tr, func(sc map[string]any) { sc["retriable"] = false }), true, none), policy: S, reason: RetryableConflict},
		{name: "explanation absent", raw: cat(t, edit(va, func(sc map[string]any) { delete(sc, "explanation") }), true, none), policy: S, reason: MissingExplanation},
		{name: "explanation blank", raw: cat(t, edit(va, func(sc map[string]any) { sc["explanation"] = " \n" }), true, none), policy: S, reason: MissingExplanation},
		{name: "next action empty", raw: cat(t, edit(va, func(sc map[string]any) { sc["nextAction"] = "" }), true, none), policy: S, reason: InvalidNextAction},
		{name: "next action object", raw: cat(t, edit(va, func(sc map[string]any) { sc["nextAction"] = map[string]any{"policy": "retry_now"} }), true, none), policy: S, reason: InvalidNextAction},
		{name: "retryable validation", raw: cat(t, edit(va, func(sc map[string]any) { sc["isRetryable"] = true }), true, none), policy: S, reason: ContradictoryRetryable},
		{name: "retryable permission", raw: cat(t, edit(pe, func(sc map[string]any) { sc["isRetryable"] = true }), true, none), policy: S, reason: ContradictoryRetryable},
		{name: "retriable business", raw: cat(t, edit(bu, func(sc map[string]any) { delete(sc, "isRetryable"); sc["retriable"] = true }), true, none), policy: S, reason: ContradictoryRetryable},
		{name: "prose only", raw: cat(t, va, false, func(res, sc map[string]any) {
			res["content"] = []any{map[string]any{"type": "text", "text": "The validation check failed."}}
		}), policy: S, reason: MissingTextCopy},
		{name: "image only", raw: cat(t, va, false, func(res, sc map[string]any) { res["content"] = []any{map[string]any{"type": "image", "data": "AA=="}} }), policy: S, reason: MissingTextCopy},
		{name: "copy says access denied", raw: cat(t, tr, false, func(res, sc map[string]any) {
			res["content"] = []any{map[string]any{"type": "text", "text": string(marshal(t, pe))}}
		}), policy: S, reason: TextCopyMismatch},
		{name: "copy says retryable", raw: cat(t, pe, false, func(res, sc map[string]any) {
			res["content"] = []any{map[string]any{"type": "text", "text": string(marshal(t, contractOf("permission", true)))}}
		}), policy: S, reason: TextCopyMismatch},
		{name: "copy explanation differs", raw: cat(t, va, false, func(res, sc map[string]any) { sc["explanation"] = "Other." }), policy: S, reason: TextCopyMismatch},
		{name: "copy adds next action", raw: cat(t, va, false, func(res, sc map[string]any) {
			res["content"] = []any{map[string]any{"type": "text", "text": string(marshal(t, map[string]any{"errorCategory": "validation", "isRetryable": false, "explanation": "The validation check failed.", "nextAction": "Fix it."}))}}
		}), policy: S, reason: TextCopyMismatch},
		{name: "second copy differs", raw: cat(t, va, false, func(res, sc map[string]any) {
			res["content"] = append(res["content"].([]any), map[string]any{"type": "text", "text": string(marshal(t, contractOf("business", false)))})
		}), policy: S, reason: TextCopyMismatch},
		{name: "copy not JSON", raw: cat(t, va, false, func(res, sc map[string]any) {
			res["content"] = []any{map[string]any{"type": "text", "text": "{validation}"}}
		}), policy: S, reason: TextCopyMismatch},
		{name: "copy with trailing data", raw: cat(t, va, false, func(res, sc map[string]any) {
			res["content"] = []any{map[string]any{"type": "text", "text": string(marshal(t, sc)) + " {}"}}
		}), policy: S, reason: TextCopyMismatch},
		{name: "copy with unknown member", raw: cat(t, va, false, func(res, sc map[string]any) {
			res["content"] = []any{map[string]any{"type": "text", "text": `{"errorCategory":"validation","isRetryable":false,"explanation":"The validation check failed.","x":1}`}}
		}), policy: S, reason: TextCopyMismatch},
		{name: "copy too deep", raw: cat(t, va, false, func(res, sc map[string]any) {
			res["content"] = []any{map[string]any{"type": "text", "text": "{\"a\":" + nested(MaxDepth) + "}"}}
		}), policy: S, reason: TextCopyMismatch},
		{name: "transient not retryable", raw: cat(t, edit(tr, func(sc map[string]any) { sc["isRetryable"] = false }), true, none), policy: S, reason: NotRetryable},
		{name: "business", raw: cat(t, bu, false, none), policy: S, reason: BusinessRule},
		{name: "category other mode", raw: cat(t, va, false, none), modes: []Mode{"both"}, policy: S, reason: UnknownMode},
	}
}

func TestDecideCategoryReasons(t *testing.T) {
	covered := map[Reason]bool{}
	for _, tc := range categoryCases(t) {
		modes := tc.modes
		if modes == nil {
			modes = allModes
		}
		for _, m := range modes {
			t.Run(fmt.Sprintf("%s/%s", tc.name, m), func(t *testing.T) {
				d := DecideCategory(tc.raw, m)
				if d.Policy != tc.policy || d.Reason != tc.reason || d.Delay != 0 {
					t.Errorf("DecideCategory = {%s %q %v} (%s), want {%s %q 0}", d.Policy, d.Reason, d.Delay, d.Message, tc.policy, tc.reason)
				}
				if (d.Reason == "") != (d.Message == "") || len(d.Message) > 300 {
					t.Errorf("Reason %q with Message %q", d.Reason, d.Message)
				}
				checkCategoryProperty(t, tc.raw, m, d)
			})
		}
		covered[tc.reason] = true
	}
	for _, r := range []Reason{MissingStructuredContent, InvalidStructuredContent, UnknownCategory, InvalidRetryable, RetryableConflict,
		MissingExplanation, InvalidNextAction, ContradictoryRetryable, MissingTextCopy, TextCopyMismatch, NotRetryable, BusinessRule} {
		if !covered[r] {
			t.Errorf("no test case for reason %s", r)
		}
	}
}

// TestContractsAreSeparate checks that each client reads only its own
// contract: an envelope is not a category result and vice versa.
func TestContractsAreSeparate(t *testing.T) {
	env := marshal(t, envelope())
	if d := DecideCategory(env, Registry); d.Reason != MissingStructuredContent {
		t.Errorf("DecideCategory(envelope) = %+v, want missing_structured_content", d)
	}
	res := marshal(t, categoryResult(t, contractOf("validation", false)))
	if d := Decide(res, Registry); d.Reason != MissingEnvelope {
		t.Errorf("Decide(category result) = %+v, want missing_envelope", d)
	}
}

// checkCategoryProperty asserts the fuzz property of DecideCategory: a stop
// with a known reason, or a policy that an independent reading of the
// contract supports, never a replay unless the failure is transient and
// declared retryable in both copies.
func checkCategoryProperty(t *testing.T, raw []byte, mode Mode, d Decision) {
	t.Helper()
	if d.Mode != mode {
		t.Fatalf("Mode = %q, want %q", d.Mode, mode)
	}
	if d.Delay != 0 || d.Cause != "" {
		t.Fatalf("category decision %+v has a delay or a cause", d)
	}
	if d.Reason != "" {
		if d.Policy != study.StopOrEscalate || !d.Reason.Valid() {
			t.Fatalf("stop decision %+v: want stop_or_escalate and a known reason", d)
		}
		return
	}
	if len(raw) > MaxSize {
		t.Fatalf("accepted %d bytes", len(raw))
	}
	var res map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("accepted input that does not decode: %v", err)
	}
	if res["resultType"] != "complete" || res["isError"] != true {
		t.Fatalf("accepted resultType %v isError %v", res["resultType"], res["isError"])
	}
	sc, _ := res["structuredContent"].(map[string]any)
	retry, ok := sc["isRetryable"].(bool)
	if alias, aok := sc["retriable"].(bool); aok {
		if ok && alias != retry {
			t.Fatalf("accepted isRetryable %v with retriable %v", retry, alias)
		}
		retry, ok = alias, true
	}
	if !ok {
		t.Fatalf("accepted a contract without retryability: %v", sc)
	}
	category, _ := sc["errorCategory"].(string)
	if study.ErrorCategory(category) != d.Category {
		t.Fatalf("Category %q, errorCategory %q", d.Category, category)
	}
	want := map[string]study.Policy{"validation": study.ReviseArguments, "permission": study.Authenticate}[category]
	if category == "transient" && retry {
		want = study.RetryLater
	}
	if d.Policy != want {
		t.Fatalf("chose %s for errorCategory %q retryable %v", d.Policy, category, retry)
	}
	if retry && category != "transient" {
		t.Fatalf("accepted a retryable %s failure", category)
	}
	copies := 0
	for _, b := range res["content"].([]any) {
		text, _ := b.(map[string]any)["text"].(string)
		var c map[string]any
		if json.Unmarshal([]byte(text), &c) != nil || c == nil {
			continue
		}
		copies++
		if c["errorCategory"] != category || c["explanation"] != sc["explanation"] {
			t.Fatalf("accepted a text copy %s that disagrees with %v", text, sc)
		}
	}
	if copies == 0 {
		t.Fatalf("accepted a result without a text copy")
	}
}

func ExampleDecideCategory() {
	raw := []byte(`{"resultType": "complete", "isError": true,
 "content": [{"type": "text", "text": "{\"errorCategory\":\"validation\",\"isRetryable\":false,\"explanation\":\"The start date is later than the end date.\"}"}],
 "structuredContent": {"errorCategory": "validation", "isRetryable": false,
                       "explanation": "The start date is later than the end date."}}`)
	d := DecideCategory(raw, Registry)
	fmt.Println(d.Policy, d.Category)

	contradiction := []byte(`{"resultType": "complete", "isError": true,
 "content": [{"type": "text", "text": "{\"errorCategory\":\"validation\",\"isRetryable\":true,\"explanation\":\"Bad date.\"}"}],
 "structuredContent": {"errorCategory": "validation", "isRetryable": true, "explanation": "Bad date."}}`)
	d = DecideCategory(contradiction, ExplicitAction)
	fmt.Println(d.Policy, d.Reason)
	// Output:
	// revise_arguments validation
	// stop_or_escalate contradictory_retryable
}
