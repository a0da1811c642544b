package conditions_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/study"
)

var update = flag.Bool("update", false, "rewrite golden files")

func load(t *testing.T) (*manifests.Resolved, *conditions.Prompt) {
	t.Helper()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt(m.Prompts[0].Name, m.Prompts[0].Path, m.Prompts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	return m, p
}

func render(t *testing.T, p *conditions.Prompt, s *study.Scenario, c study.Condition) string {
	t.Helper()
	msgs, err := p.Initial(s, c)
	if err != nil {
		t.Fatal(err)
	}
	next, err := p.Replayed(s, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, conditions.Message{Role: conditions.Assistant, Content: `{"operation_status": "failed", "recovery_policy": "retry_now"}`}, next)
	var b strings.Builder
	if err := conditions.WriteMessages(&b, msgs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestGolden pins all 84 renderings (21 scenarios x 4 conditions) of the
// default prompt, each with its first replay message.
func TestGolden(t *testing.T) {
	m, p := load(t)
	n := 0
	for i := range m.Corpus.Scenarios {
		s := &m.Corpus.Scenarios[i]
		for _, c := range study.Conditions {
			got := render(t, p, s, c)
			file := filepath.Join("testdata", "default", s.ID+"-"+string(c)+".golden")
			n++
			if *update {
				os.MkdirAll(filepath.Dir(file), 0o755)
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test ./conditions -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the rendering:\n--- want\n%s\n--- got\n%s", file, want, got)
			}
		}
	}
	if n != 84 {
		t.Errorf("rendered %d, want 84", n)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "default", "*.golden"))
	if len(files) != 84 {
		t.Errorf("%d golden files, want 84", len(files))
	}
}

// actionWords are words of recommended-action wording that must not appear
// in what code_only adds.
var actionWords = regexp.MustCompile(`(?i)\b(should|must|try|retry|again|call|select|choose|revise|correct|fix|authenticate|credential|stop|escalate|wait|later|policy|recommend\w*|action|next)\b`)

func TestCodeOnlyRevealsNoPolicy(t *testing.T) {
	m, _ := load(t)
	for i := range m.Corpus.Scenarios {
		s := &m.Corpus.Scenarios[i]
		ann, err := conditions.Annotation(s, study.CodeOnly)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(ann, s.Code) {
			t.Errorf("%s code_only %q lacks the code %s", s.ID, ann, s.Code)
		}
		rest := strings.Replace(ann, s.Code, "", 1)
		for _, p := range study.Policies {
			if strings.Contains(ann, string(p)) || strings.Contains(ann, p.Words()) {
				t.Errorf("%s code_only %q shows policy %s", s.ID, ann, p)
			}
		}
		if w := actionWords.FindString(rest); w != "" {
			t.Errorf("%s code_only %q has action wording %q", s.ID, ann, w)
		}
		norm, _ := conditions.DataFor(s, study.Normalized, 0)
		code, _ := conditions.DataFor(s, study.CodeOnly, 0)
		if norm.Observation != code.Observation || norm.Annotation != "" {
			t.Errorf("%s: code_only must show the normalized observation plus the code only", s.ID)
		}
	}
}

func TestAnswerBearingConditions(t *testing.T) {
	m, p := load(t)
	for i := range m.Corpus.Scenarios {
		s := &m.Corpus.Scenarios[i]
		st, _ := conditions.Annotation(s, study.Structured)
		if !strings.Contains(st, `"policy":"`+string(s.Preferred)+`"`) || !strings.Contains(st, `"code":"`+s.Code+`"`) {
			t.Errorf("%s structured %q must carry the code and the preferred policy label as JSON", s.ID, st)
		}
		pr, _ := conditions.Annotation(s, study.Prose)
		info, _ := s.Cause.Info()
		if !strings.Contains(pr, s.Preferred.Words()) || !strings.Contains(pr, info.Words) {
			t.Errorf("%s prose %q must give the cause and the preferred policy in words", s.ID, pr)
		}
		if strings.Contains(pr, s.Code) || strings.Contains(pr, string(s.Preferred)) || strings.Count(pr, ".") != 1 {
			t.Errorf("%s prose %q must be one sentence without the code or the label", s.ID, pr)
		}
		msgs, _ := p.Initial(s, study.Structured)
		if !strings.Contains(msgs[1].Content, st) {
			t.Errorf("%s: the structured user message does not carry its annotation", s.ID)
		}
	}
}

func TestParsePromptErrors(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"syntax":      {`{{define "system"}}x{{end}}{{define "user"}}{{.Observation}{{end}}`, "bad.tmpl"},
		"no replay":   {`{{define "system"}}x{{end}}{{define "user"}}{{.Observation}}{{end}}`, `bad.tmpl: template "replay" is not defined`},
		"bad field":   {`{{define "system"}}x{{end}}{{define "user"}}{{.Nope}}{{end}}{{define "replay"}}x{{end}}`, "bad.tmpl"},
		"bad in exec": {`{{define "system"}}{{.Observation}}{{end}}{{define "user"}}x{{end}}{{define "replay"}}x{{end}}`, "bad.tmpl"},
	} {
		_, err := conditions.ParsePrompt("bad", "bad.tmpl", tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to mention %q", name, err, tc.want)
		}
	}
}
