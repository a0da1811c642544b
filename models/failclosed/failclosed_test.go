package failclosed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	failclosedmodel "github.com/mcpstress/stress/models/failclosed"
	"github.com/mcpstress/stress/study"
)

func answer(t *testing.T, m models.Model, msgs []conditions.Message) (study.Policy, map[string]any) {
	t.Helper()
	r, err := m.Generate(context.Background(), models.Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Status study.Status `json:"operation_status"`
		Policy study.Policy `json:"recovery_policy"`
	}
	if err := json.Unmarshal([]byte(r.Text), &a); err != nil || a.Status != study.Failed || !a.Policy.Valid() {
		t.Fatalf("answer %q: %v", r.Text, err)
	}
	return a.Policy, r.Meta
}

// load returns the default manifest and its prompt.
func load(t *testing.T) (*manifests.Resolved, *conditions.Prompt) {
	t.Helper()
	man, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt("default", man.Prompts[0].Path, man.Prompts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	return man, p
}

// TestCorpus renders every scenario of the default corpus under each
// condition through the default prompt, with a replay turn, and checks the
// client's answer: the preferred policy from the envelope, the category
// mapping from the category result (a stop without one), a stop with
// reason no_result under the paired conditions and the factorial cells,
// and a stop with the check that fails under every single-channel and
// misplaced-trust condition: a host that drops a channel leaves a result
// the client refuses (missing_content without the text copy,
// missing_structured_content without structuredContent), and each lie
// fails a check (incompatible_policy for a replay the code does not
// allow, target_mismatch for a target of another kind,
// contradictory_retryable for a retryable validation or permission
// failure).
func TestCorpus(t *testing.T) {
	man, p := load(t)
	for _, mode := range []string{"registry", "explicit_action"} {
		m, err := models.New(models.Spec{Name: "fc", Backend: failclosedmodel.Backend, Model: mode})
		if err != nil {
			t.Fatal(err)
		}
		for i := range man.Corpus.Scenarios {
			s := &man.Corpus.Scenarios[i]
			for _, c := range study.AllConditions {
				msgs, err := p.Initial(s, c)
				if err != nil {
					t.Fatal(err)
				}
				replay, _ := p.Replayed(s, c, 1)
				for turn, conv := range [][]conditions.Message{msgs, append(msgs, conditions.Message{Role: conditions.Assistant, Content: "{}"}, replay)} {
					got, meta := answer(t, m, conv)
					want, reason := study.StopOrEscalate, failclosedmodel.NoResult
					switch {
					case c == study.Envelope:
						want, reason = s.Preferred, ""
					case c == study.Category:
						switch cat, _ := study.CategoryOf(s.Cause); cat {
						case study.ValidationCategory:
							want, reason = study.ReviseArguments, ""
						case study.PermissionCategory:
							want, reason = study.Authenticate, ""
						}
					case c.Shape():
						// The shape replaces the observation: a JSON-RPC
						// error is no -32023 (the paper corpus has no rate
						// limit); a success is no error; an isError result
						// without a classification carries nothing
						// machine-readable; a classified one decides by
						// class and code (agentGuidance is never read).
						raw, label, ok, _ := conditions.ShapeResult(s, c)
						switch {
						case !ok:
						case label == conditions.ShapeErrorLabel:
							reason = "not_rate_limited"
						case !strings.Contains(string(raw), `"isError":true`):
							reason = "not_error_result"
						case !c.Classifies():
							reason = "missing_tool_failure"
						case s.Cause == study.UnknownTool:
							reason = "capability_failure"
						case s.Cause == study.InvalidType || s.Cause == study.InvalidValue:
							want, reason = study.ReviseArguments, ""
						case s.Cause == study.AuthRequired:
							want, reason = study.Authenticate, ""
						}
					case c == study.EnvelopeFalseReplay:
						reason = "incompatible_policy"
					case c == study.EnvelopeFalseTarget:
						reason = "target_mismatch"
					case c == study.CategoryStructured, c == study.CategoryText, c == study.CategoryFalseRetryable:
						if _, ok := study.CategoryOf(s.Cause); ok {
							reason = map[study.Condition]string{study.CategoryStructured: "missing_content", study.CategoryText: "missing_structured_content",
								study.CategoryFalseRetryable: "contradictory_retryable"}[c]
						}
					}
					if got != want || (meta["reason"] == nil) != (reason == "") || (reason != "" && meta["reason"] != reason) {
						t.Errorf("%s %s %s turn %d: %s %v, want %s %q", mode, s.ID, c, turn, got, meta, want, reason)
					}
				}
			}
		}
	}
}

// TestFind checks that find reads the contract after the last label line
// (conditions.ContractAt) and nowhere else.
func TestFind(t *testing.T) {
	env := `{"resultType": "complete"}`
	for name, tc := range map[string]struct {
		msg      string
		contract conditions.Contract
		raw      string
	}{
		"none":             {"The tool call returned:\n{}", "", ""},
		"envelope":         {"x\n\n" + conditions.EnvelopeLabel + "\n" + env, conditions.ContractEnvelope, env},
		"category":         {"x\n" + conditions.CategoryLabel + "\n" + env + "\n\nAnswer now.", conditions.ContractCategory, env},
		"crlf":             {"x\r\n" + conditions.EnvelopeLabel + "\r\n" + env, conditions.ContractEnvelope, env},
		"last label wins":  {conditions.EnvelopeLabel + "\n{}\n" + conditions.CategoryLabel + "\n" + env, conditions.ContractCategory, env},
		"label in a value": {"{\"message\": \"" + conditions.EnvelopeLabel + "\\n{}\"}", "", ""},
		"label mid-line":   {"see " + conditions.EnvelopeLabel + "\n{}", "", ""},
		"label, no JSON":   {conditions.EnvelopeLabel + "\n{\"resultType\":", conditions.ContractEnvelope, "{\"resultType\":"},
		"label at the end": {"x\n" + conditions.CategoryLabel, conditions.ContractCategory, ""},
		"shape result":     {"x\n" + conditions.ShapeResultLabel + "\n" + env, conditions.ContractShapeResult, env},
		"shape error":      {"x\n" + conditions.ShapeErrorLabel + "\n{\"code\": -32023}", conditions.ContractShapeError, "{\"code\": -32023}"},
	} {
		t.Run(name, func(t *testing.T) {
			c, raw := failclosedmodel.Find(tc.msg)
			if c != tc.contract || strings.TrimSpace(string(raw)) != tc.raw {
				t.Errorf("Find = %q, %q; want %q, %q", c, raw, tc.contract, tc.raw)
			}
		})
	}
}

// TestStops checks that a result after a label that fails a check stops
// with the client's reason, and that an unknown mode is refused.
func TestStops(t *testing.T) {
	m, err := models.New(models.Spec{Name: "fc", Backend: failclosedmodel.Backend, Model: "registry"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, msg, reason string }{
		{"envelope not JSON", conditions.EnvelopeLabel + "\n{\"resultType\": ", "invalid_json"},
		{"envelope not an object", conditions.EnvelopeLabel + "\n[]", "not_object"},
		{"category without content", conditions.CategoryLabel + "\n{\"resultType\": \"complete\", \"isError\": true, \"content\": []}", "missing_content"},
		{"no label", "no label", failclosedmodel.NoResult},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, meta := answer(t, m, []conditions.Message{{Role: conditions.User, Content: tc.msg}})
			if p != study.StopOrEscalate || meta["reason"] != tc.reason || meta["message"] == "" {
				t.Errorf("%q: %s %v, want a stop with %s", tc.msg, p, meta, tc.reason)
			}
		})
	}
	if _, err := models.New(models.Spec{Name: "fc", Backend: failclosedmodel.Backend, Model: "both"}); err == nil || !strings.Contains(err.Error(), `"both"`) {
		t.Errorf("New(both) = %v, want an error naming the mode", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Generate(ctx, models.Request{}); err == nil {
		t.Error("Generate ignored a cancelled context")
	}
}

// TestMisplacedTrustTransient covers the lies on a synthetic transient
// failure, where the declared replay fits the code: the client still
// stops, on the committed side effect (unsafe_replay), and on a transient
// failure declared not retryable (not_retryable).
func TestMisplacedTrustTransient(t *testing.T) {
	_, p := load(t)
	s := &study.Scenario{ID: "T1", Cause: study.Transient, Code: "example.mcp.upstream.unavailable", Preferred: study.RetryNow,
		NonHarm:     []study.Policy{study.RetryNow, study.StopOrEscalate},
		Target:      study.Target{Kind: "dependency", Name: "price-feed"},
		Observation: json.RawMessage(`{"result": {"isError": true, "content": [{"type": "text", "text": "price feed unavailable"}]}}`),
		ControlEnvelope: json.RawMessage(`{"resultType": "complete", "isError": true, "error": {"schema": "urn:example:mcp-error:1",
			"code": "example.mcp.upstream.unavailable", "target": {"kind": "dependency", "name": "price-feed"}, "policy": "retry_now",
			"retry": {"sameRequest": "safe"}, "sideEffects": "none_committed"}, "content": [{"type": "text", "text": "price feed unavailable"}]}`)}
	for _, mode := range []string{"registry", "explicit_action"} {
		m, err := models.New(models.Spec{Name: "fc", Backend: failclosedmodel.Backend, Model: mode})
		if err != nil {
			t.Fatal(err)
		}
		for c, want := range map[study.Condition]string{
			study.Envelope:               "",
			study.EnvelopeFalseReplay:    "unsafe_replay",
			study.EnvelopeFalseTarget:    "target_mismatch",
			study.CategoryFalseRetryable: "not_retryable",
		} {
			t.Run(mode+"/"+string(c), func(t *testing.T) {
				msgs, err := p.Initial(s, c)
				if err != nil {
					t.Fatal(err)
				}
				got, meta := answer(t, m, msgs)
				if want == "" && (got != study.RetryNow || meta["reason"] != nil) {
					t.Errorf("%s %v, want retry_now", got, meta)
				}
				if want != "" && (got != study.StopOrEscalate || meta["reason"] != want) {
					t.Errorf("%s %v, want a stop with %s", got, meta, want)
				}
			})
		}
	}
}

// TestShapeAdapters checks the two error-shape adapters through the
// backend: a retryable reliability failure is retried only when the action
// prompt shows the called tool as idempotent, and a RateLimited error is
// retried after its retryAfterMs.
func TestShapeAdapters(t *testing.T) {
	m, err := models.New(models.Spec{Name: "fc", Backend: failclosedmodel.Backend, Model: "registry"})
	if err != nil {
		t.Fatal(err)
	}
	result := `{"resultType": "complete", "isError": true, "content": [{"type": "text", "text": "busy"}],
 "_meta": {"io.modelcontextprotocol/toolFailure": {"class": "reliability", "code": "retryable_transient_error", "retryable": true, "retryNotBefore": 1767225605000, "correlationId": "X01"}}}`
	tools := func(hint bool) string {
		return conditions.ToolsLabel + "\n" + fmt.Sprintf(`[{"name": "get_order", "annotations": {"idempotentHint": %t}}]`, hint) +
			"\n" + conditions.CallLabel + "\n{\"tool\": \"get_order\", \"arguments\": {}}\n"
	}
	for name, tc := range map[string]struct {
		msg    string
		want   study.Policy
		reason any
		delay  any
	}{
		"label task":     {conditions.ShapeResultLabel + "\n" + result, study.StopOrEscalate, "idempotency_unknown", nil},
		"not idempotent": {tools(false) + conditions.ShapeResultLabel + "\n" + result, study.StopOrEscalate, "idempotency_unknown", nil},
		"idempotent":     {tools(true) + conditions.ShapeResultLabel + "\n" + result, study.RetryLater, nil, int64(5000)},
		"rate limited":   {conditions.ShapeErrorLabel + "\n" + `{"code": -32023, "message": "slow down", "data": {"retryAfterMs": 60000}}`, study.RetryLater, nil, int64(60000)},
	} {
		t.Run(name, func(t *testing.T) {
			got, meta := answer(t, m, []conditions.Message{{Role: conditions.User, Content: "The tool call returned:\n{}\n\n" + tc.msg}})
			if got != tc.want || meta["reason"] != tc.reason || meta["delay_ms"] != tc.delay {
				t.Errorf("%s %v; want %s, reason %v, delay %v", got, meta, tc.want, tc.reason, tc.delay)
			}
		})
	}
}
