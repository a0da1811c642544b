package conditions_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/study"
)

// shapeCorpora are the corpora whose shape renderings are pinned: the
// paper's (protocol errors, isError results, success-shaped results of
// the paper's five causes) and the lab's (every cause on every surface it
// can be served on, rate limits with their waits).
var shapeCorpora = []string{"paper", "lab"}

func loadCorpus(t testing.TB, name string) ([]study.Scenario, *conditions.Prompt) {
	t.Helper()
	m, err := manifests.LoadBuiltin(name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt(m.Prompts[0].Name, m.Prompts[0].Path, m.Prompts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	return m.Corpus.Scenarios, p
}

// TestShapeGolden pins the renderings of the error-shape conditions on
// the paper corpus (21 x 7) and the lab corpus (x 7), each with its first
// replay message.
func TestShapeGolden(t *testing.T) {
	n, want := 0, 0
	for _, corpus := range shapeCorpora {
		scs, p := loadCorpus(t, corpus)
		want += len(scs) * len(study.ShapeConditions)
		for i := range scs {
			s := &scs[i]
			for _, c := range study.ShapeConditions {
				t.Run(corpus+"/"+s.ID+"/"+string(c), func(t *testing.T) {
					checkGolden(t, filepath.Join("testdata", "shapes", corpus, s.ID+"-"+strings.ReplaceAll(string(c), "+", "_")+".golden"), render(t, p, s, c))
				})
				n++
			}
		}
	}
	if n != want || len(study.ShapeConditions) != 7 {
		t.Errorf("rendered %d of %d, with %d shapes", n, want, len(study.ShapeConditions))
	}
}

// armProblems returns what the rendering raw (after label) of scenario s
// under shape c holds that its arm does not, or lacks that it must, each
// naming the member: every arm is what a server following its proposals
// alone sends, so no member of another arm, and never the category
// contract of seed 002.
func armProblems(s *study.Scenario, c study.Condition, raw json.RawMessage, label string) []string {
	var v struct {
		IsError *bool                      `json:"isError"`
		Content []json.RawMessage          `json:"content"`
		Meta    map[string]json.RawMessage `json:"_meta"`
		Code    int                        `json:"code"`
		Data    map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return []string{err.Error()}
	}
	var tf map[string]json.RawMessage
	json.Unmarshal(v.Meta[study.ToolFailureKey], &tf)
	var out []string
	check := func(has, want bool, member string) {
		if has != want {
			out = append(out, fmt.Sprintf("%s present %v, want %v", member, has, want))
		}
	}
	msg, _ := s.FailureMessage()
	_, announced := study.AnnouncedWait([]byte(msg))
	limited := c.RateLimits() && conditions.OwnRateLimit(s) && announced && s.Surface != study.SuccessShaped
	_, hasClass := study.ClassifyFailure(s.Cause, s.Code, s.ID, study.ShapeEpoch, 0)
	isErrorResult := label == conditions.ShapeResultLabel && v.IsError != nil && *v.IsError
	classified := c.Classifies() && isErrorResult && hasClass
	check(strings.Contains(string(raw), "errorCategory") || strings.Contains(string(raw), "isRetryable"), false, "the category contract (errorCategory, isRetryable)")
	check(tf != nil, classified, "_meta."+study.ToolFailureKey)
	_, g := tf["agentGuidance"]
	check(g, classified && c.Guides(), "agentGuidance")
	_, a := tf["applied"]
	check(a, classified && c.MarksApplied(), "applied")
	_, ra := v.Data["retryAfterMs"]
	check(v.Code == study.RateLimitedCode || ra, limited, "code -32023 with data.retryAfterMs")
	moved := s.Surface == study.ProtocolError && label == conditions.ShapeResultLabel
	check(moved, s.Surface == study.ProtocolError && c.MovesToResult() && !limited, "a JSON-RPC error moved to an isError result")
	if s.Surface == study.SuccessShaped && (label != conditions.ShapeResultLabel || v.IsError != nil && *v.IsError) {
		out = append(out, "a success-shaped result changed")
	}
	return out
}

// TestShapeArms checks every arm on every scenario of both corpora with
// armProblems, and counts what the proposals change.
func TestShapeArms(t *testing.T) {
	moved, classified, limited, timeouts := 0, 0, 0, 0
	for _, corpus := range shapeCorpora {
		scs, _ := loadCorpus(t, corpus)
		for i := range scs {
			s := &scs[i]
			for _, c := range study.ShapeConditions {
				t.Run(corpus+"/"+s.ID+"/"+string(c), func(t *testing.T) {
					raw, label, ok, err := conditions.ShapeResult(s, c)
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						if _, answered := s.FailureMessage(); answered {
							t.Error("an answered failure not reshaped")
						}
						if c == study.SEP2145 {
							timeouts++
						}
						return
					}
					for _, p := range armProblems(s, c, raw, label) {
						t.Errorf("%s: %s", p, raw)
					}
					switch {
					case c == study.SEP2145 && s.Surface == study.ProtocolError:
						moved++
					case c == study.ToolFailureShape && strings.Contains(string(raw), study.ToolFailureKey):
						classified++
					case c == study.RateLimited && label == conditions.ShapeErrorLabel && strings.Contains(string(raw), "retryAfterMs"):
						limited++
					}
				})
			}
		}
	}
	// Paper: 8 protocol errors, 10 isError results; lab: 13 answered
	// protocol errors (two client-side timeouts stay as recorded), 13
	// isError results (none of silent_noop), one own rate limit (X40; the
	// others are upstream limits, which stay isError results).
	if moved != 21 || classified != 23 || limited != 1 || timeouts != 2 {
		t.Errorf("moved %d, classified %d, rate-limited %d, timeouts %d; want 21, 23, 1, 2", moved, classified, limited, timeouts)
	}
}

// TestArmProblemsNamed: a rendering with another arm's member fails the
// check, naming the member.
func TestArmProblemsNamed(t *testing.T) {
	scs, _ := loadCorpus(t, "lab")
	var s *study.Scenario
	for i := range scs {
		if scs[i].ID == "X13" {
			s = &scs[i]
		}
	}
	raw, label, _, err := conditions.ShapeResult(s, study.ToolFailureApplied)
	if err != nil {
		t.Fatal(err)
	}
	p := armProblems(s, study.ToolFailureShape, raw, label)
	if len(p) != 1 || !strings.Contains(p[0], "applied present true") {
		t.Errorf("toolfailure+applied's rendering checked as toolfailure: %q", p)
	}
	withContract := json.RawMessage(strings.Replace(string(raw), `"content":[`, `"content":[{"type":"text","text":"{\"errorCategory\":\"transient\"}"},`, 1))
	if p := armProblems(s, study.ToolFailureApplied, withContract, label); len(p) != 1 || !strings.Contains(p[0], "category contract") {
		t.Errorf("a rendering with the contract: %q", p)
	}
}

// TestToolFailureFields checks the classification against PR #3313's
// rules: retryable only on reliability, retryNotBefore only with
// retryable true and an announced wait, correlationId always set.
func TestToolFailureFields(t *testing.T) {
	scs, _ := loadCorpus(t, "lab")
	for i := range scs {
		s := &scs[i]
		msg, _ := s.FailureMessage()
		wait, announced := study.AnnouncedWait([]byte(msg))
		tf, ok := study.ToolFailureOf(s, study.ShapeEpoch, wait)
		if !ok {
			if s.Cause != study.SilentNoop {
				t.Errorf("%s: cause %s has no class", s.ID, s.Cause)
			}
			continue
		}
		if tf.CorrelationID == "" || tf.Code == "" || tf.AgentGuidance != "" || tf.Applied != "" {
			t.Errorf("%s: %+v", s.ID, tf)
		}
		if (tf.Retryable != nil) != (tf.Class == study.ReliabilityClass) {
			t.Errorf("%s: retryable %v on class %s", s.ID, tf.Retryable, tf.Class)
		}
		wantRNB := tf.Retryable != nil && *tf.Retryable && announced
		if (tf.RetryNotBefore != nil) != wantRNB {
			t.Errorf("%s: retryNotBefore %v, want set %v", s.ID, tf.RetryNotBefore, wantRNB)
		}
		if wantRNB && *tf.RetryNotBefore != study.ShapeEpoch.Add(wait).UnixMilli() {
			t.Errorf("%s: retryNotBefore %d", s.ID, *tf.RetryNotBefore)
		}
	}
}

func TestShapeResultRefusesOtherConditions(t *testing.T) {
	scs, _ := loadCorpus(t, "paper")
	if _, _, _, err := conditions.ShapeResult(&scs[0], study.Category); err == nil {
		t.Error("ShapeResult accepted category")
	}
}

// BenchmarkRender renders the first user message of every lab scenario
// under a condition: the error shapes against the paper's structured and
// the category contract, whose cost a run already pays.
func BenchmarkRender(b *testing.B) {
	scs, p := loadCorpus(b, "lab")
	for _, c := range []study.Condition{study.Structured, study.Category, study.SEP2145, study.ToolFailureShape, study.RateLimited, study.ToolFailureSEP2145} {
		b.Run(strings.ReplaceAll(string(c), "+", "_"), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s := &scs[i%len(scs)]
				if _, err := p.Initial(s, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
