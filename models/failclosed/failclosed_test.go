package failclosed_test

import (
	"context"
	"encoding/json"
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

// TestCorpus renders every scenario of the default corpus under each
// condition through the default prompt, with a replay turn, and checks the
// client's answer: the preferred policy from the envelope, the category
// mapping from the category result (a stop without one), and a stop with
// reason no_result under the paired conditions.
func TestCorpus(t *testing.T) {
	man, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt("default", man.Prompts[0].Path, man.Prompts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
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
					switch c {
					case study.Envelope:
						want, reason = s.Preferred, ""
					case study.Category:
						switch cat, _ := study.CategoryOf(s.Cause); cat {
						case study.ValidationCategory:
							want, reason = study.ReviseArguments, ""
						case study.PermissionCategory:
							want, reason = study.Authenticate, ""
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

func TestFind(t *testing.T) {
	env := `{"resultType": "complete"}`
	for name, tc := range map[string]struct {
		msg      string
		contract study.Condition
		raw      string
	}{
		"none":             {"The tool call returned:\n{}", "", ""},
		"envelope":         {"x\n\n" + conditions.EnvelopeLabel + "\n" + env, study.Envelope, env},
		"category":         {"x\n" + conditions.CategoryLabel + "\n" + env + "\n\nAnswer now.", study.Category, env},
		"crlf":             {"x\r\n" + conditions.EnvelopeLabel + "\r\n" + env, study.Envelope, env},
		"last label wins":  {conditions.EnvelopeLabel + "\n{}\n" + conditions.CategoryLabel + "\n" + env, study.Category, env},
		"label in a value": {"{\"message\": \"" + conditions.EnvelopeLabel + "\\n{}\"}", "", ""},
		"label mid-line":   {"see " + conditions.EnvelopeLabel + "\n{}", "", ""},
		"label, no JSON":   {conditions.EnvelopeLabel + "\n{\"resultType\":", study.Envelope, "{\"resultType\":"},
		"label at the end": {"x\n" + conditions.CategoryLabel, study.Category, ""},
	} {
		c, raw := failclosedmodel.Find(tc.msg)
		if c != tc.contract || strings.TrimSpace(string(raw)) != tc.raw {
			t.Errorf("%s: Find = %q, %q; want %q, %q", name, c, raw, tc.contract, tc.raw)
		}
	}
}

// TestStops checks that a result after a label that fails a check stops
// with the client's reason, and that an unknown mode is refused.
func TestStops(t *testing.T) {
	m, err := failclosedmodel.New(models.Spec{Name: "fc", Backend: failclosedmodel.Backend, Model: "registry"})
	if err != nil {
		t.Fatal(err)
	}
	for msg, reason := range map[string]string{
		conditions.EnvelopeLabel + "\n{\"resultType\": ":                                                  "invalid_json",
		conditions.EnvelopeLabel + "\n[]":                                                                 "not_object",
		conditions.CategoryLabel + "\n{\"resultType\": \"complete\", \"isError\": true, \"content\": []}": "missing_content",
		"no label": failclosedmodel.NoResult,
	} {
		p, meta := answer(t, m, []conditions.Message{{Role: conditions.User, Content: msg}})
		if p != study.StopOrEscalate || meta["reason"] != reason || meta["message"] == "" {
			t.Errorf("%q: %s %v, want a stop with %s", msg, p, meta, reason)
		}
	}
	if _, err := failclosedmodel.New(models.Spec{Name: "fc", Model: "both"}); err == nil || !strings.Contains(err.Error(), `"both"`) {
		t.Errorf("New(both) = %v, want an error naming the mode", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Generate(ctx, models.Request{}); err == nil {
		t.Error("Generate ignored a cancelled context")
	}
}
