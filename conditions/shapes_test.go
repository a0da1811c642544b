package conditions_test

import (
	"encoding/json"
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

// TestShapeGolden pins the renderings of the four error-shape conditions
// on the paper corpus (21 x 4) and the lab corpus (39 x 4), each with its
// first replay message.
func TestShapeGolden(t *testing.T) {
	n := 0
	for _, corpus := range shapeCorpora {
		scs, p := loadCorpus(t, corpus)
		for i := range scs {
			s := &scs[i]
			for _, c := range study.ShapeConditions {
				checkGolden(t, filepath.Join("testdata", "shapes", corpus, s.ID+"-"+strings.ReplaceAll(string(c), "+", "_")+".golden"), render(t, p, s, c))
				n++
			}
		}
	}
	if n != 240 {
		t.Errorf("rendered %d, want 240", n)
	}
}

// TestShapeRules checks each proposal's rule on every scenario of both
// corpora: what each shape changes, and what it leaves alone.
func TestShapeRules(t *testing.T) {
	moved, classified, limited := 0, 0, 0
	for _, corpus := range shapeCorpora {
		scs, _ := loadCorpus(t, corpus)
		for i := range scs {
			s := &scs[i]
			_, answered := s.FailureMessage()
			for _, c := range study.ShapeConditions {
				raw, label, ok, err := conditions.ShapeResult(s, c)
				if err != nil {
					t.Fatalf("%s %s: %v", s.ID, c, err)
				}
				if s.Surface == study.SuccessShaped && ok {
					t.Errorf("%s %s: a success-shaped result changed", s.ID, c)
				}
				if !ok {
					continue
				}
				var v struct {
					IsError *bool                      `json:"isError"`
					Meta    map[string]json.RawMessage `json:"_meta"`
					Code    int                        `json:"code"`
					Data    struct {
						RetryAfterMs *int64 `json:"retryAfterMs"`
					} `json:"data"`
				}
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Fatal(err)
				}
				switch c {
				case study.SEP2145:
					if s.Surface != study.ProtocolError || !answered || v.IsError == nil || !*v.IsError || v.Meta != nil || label != conditions.ShapeResultLabel {
						t.Errorf("%s sep2145: %s", s.ID, raw)
					}
					moved++
				case study.ToolFailureShape:
					if s.Surface != study.ToolError || v.Meta[study.ToolFailureKey] == nil {
						t.Errorf("%s toolfailure: %s", s.ID, raw)
					}
					classified++
				case study.RateLimited:
					if s.Cause != study.RateLimit || v.Code != study.RateLimitedCode || v.Data.RetryAfterMs == nil || *v.Data.RetryAfterMs <= 0 || label != conditions.ShapeErrorLabel {
						t.Errorf("%s ratelimited: %s", s.ID, raw)
					}
					limited++
				case study.ToolFailureSEP2145:
					if v.IsError == nil || !*v.IsError {
						t.Errorf("%s toolfailure+sep2145: %s", s.ID, raw)
					}
				}
			}
		}
	}
	// Paper: 8 protocol errors, 10 isError results; lab: 12 answered
	// protocol errors (two client-side timeouts stay), 13 isError
	// results (none of silent_noop), two rate limits not success-shaped.
	if moved != 20 || classified != 23 || limited != 2 {
		t.Errorf("moved %d, classified %d, rate-limited %d; want 20, 23, 2", moved, classified, limited)
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
		if tf.CorrelationID == "" || tf.Code == "" || tf.AgentGuidance != "" {
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
