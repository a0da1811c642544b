package conditions_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unsafe"

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

// TestGolden pins all 378 renderings (21 scenarios x 18 conditions: the
// four paired ones, envelope, category, the seven factorial cells besides
// structured, the two single-channel category conditions and the three
// misplaced-trust ones) of the default prompt, each with its first replay
// message.
func TestGolden(t *testing.T) {
	m, p := load(t)
	n := 0
	for i := range m.Corpus.Scenarios {
		s := &m.Corpus.Scenarios[i]
		for _, c := range study.AllConditions {
			if c.Shape() {
				continue // TestShapeGolden
			}
			checkGolden(t, filepath.Join("testdata", "default", s.ID+"-"+string(c)+".golden"), render(t, p, s, c))
			n++
		}
	}
	if n != 378 {
		t.Errorf("rendered %d, want 378", n)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "default", "*.golden"))
	if len(files) != 378 {
		t.Errorf("%d golden files, want 378", len(files))
	}
}

// checkGolden compares got with the golden file (or, with -update,
// writes it).
func checkGolden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		os.MkdirAll(filepath.Dir(file), 0o755)
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./conditions -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the rendering:\n--- want\n%s\n--- got\n%s", file, want, got)
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
		t.Run(name, func(t *testing.T) {
			_, err := conditions.ParsePrompt("bad", "bad.tmpl", tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestCategoryRevealsNoPolicy checks that the category condition adds only
// errorCategory, isRetryable and explanation (no nextAction, no code, no
// policy label or words, no action wording), and nothing for a cause
// without a category.
func TestCategoryRevealsNoPolicy(t *testing.T) {
	m, _ := load(t)
	shown := 0
	for i := range m.Corpus.Scenarios {
		s := &m.Corpus.Scenarios[i]
		ann, err := conditions.Annotation(s, study.Category)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := conditions.DataFor(s, study.Category, 0)
		norm, _ := conditions.DataFor(s, study.Normalized, 0)
		if data.Observation != norm.Observation {
			t.Errorf("%s: category must keep the normalized observation", s.ID)
		}
		cat, ok := study.CategoryOf(s.Cause)
		if !ok {
			if ann != "" || s.Cause != study.UnknownTool {
				t.Errorf("%s (%s): category annotation %q, want none only for unknown_tool", s.ID, s.Cause, ann)
			}
			continue
		}
		shown++
		label, body, found := strings.Cut(ann, "\n")
		if !found || label != conditions.CategoryLabel {
			t.Fatalf("%s: category annotation %q does not start with the label line", s.ID, ann)
		}
		var res struct {
			ResultType        string `json:"resultType"`
			IsError           bool   `json:"isError"`
			Content           []struct{ Type, Text string }
			StructuredContent map[string]any `json:"structuredContent"`
		}
		if err := json.Unmarshal([]byte(body), &res); err != nil {
			t.Fatalf("%s: %v", s.ID, err)
		}
		sc := res.StructuredContent
		if res.ResultType != "complete" || !res.IsError || len(sc) != 3 || sc["errorCategory"] != string(cat) || sc["isRetryable"] != false || sc["explanation"] != conditions.Explanation(s) {
			t.Errorf("%s: category result %s, want complete, isError, and exactly errorCategory %s, isRetryable false, explanation", s.ID, body, cat)
		}
		var copy map[string]any
		if len(res.Content) != 1 || res.Content[0].Type != "text" || json.Unmarshal([]byte(res.Content[0].Text), &copy) != nil || fmt.Sprint(copy) != fmt.Sprint(sc) {
			t.Errorf("%s: the text copy %+v does not equal structuredContent", s.ID, res.Content)
		}
		if strings.Contains(ann, s.Code) || strings.Contains(ann, "nextAction") {
			t.Errorf("%s: category annotation shows the code or a nextAction: %s", s.ID, ann)
		}
		for _, p := range study.Policies {
			if strings.Contains(ann, string(p)) || strings.Contains(ann, p.Words()) {
				t.Errorf("%s category %q shows policy %s", s.ID, ann, p)
			}
		}
		if w := actionWords.FindString(ann); w != "" {
			t.Errorf("%s category %q has action wording %q", s.ID, ann, w)
		}
	}
	if shown != 11 {
		t.Errorf("category shows a contract for %d scenarios, want 11 (all but the 10 unknown tools)", shown)
	}
}

// TestExplanationWording checks the explanations of every cause, including
// the synthetic transient one the corpus lacks.
func TestExplanationWording(t *testing.T) {
	for _, s := range []study.Scenario{
		{ID: "t", Cause: study.Transient, Target: study.Target{Kind: "dependency", Name: "price-feed"}},
		{ID: "t", Cause: study.Transient, Target: study.Target{Kind: "dependency"}},
		{ID: "a", Cause: study.AuthRequired, Target: study.Target{Kind: "credential"}},
		{ID: "v", Cause: study.InvalidValue, Target: study.Target{Kind: "parameter", Pointer: "/x"}},
	} {
		e := conditions.Explanation(&s)
		if e == "" || !strings.HasSuffix(e, ".") {
			t.Errorf("%s: explanation %q", s.Cause, e)
		}
		if w := actionWords.FindString(e); w != "" {
			t.Errorf("%s: explanation %q has action wording %q", s.Cause, e, w)
		}
	}
	s := study.Scenario{ID: "t", Cause: study.Transient, Target: study.Target{Kind: "dependency", Name: "feed"}}
	raw, ok, err := conditions.CategoryResult(&s)
	if err != nil || !ok || !strings.Contains(string(raw), `"structuredContent":{"errorCategory":"transient","isRetryable":true,`) {
		t.Errorf("transient category result %s, %v, %v", raw, ok, err)
	}
	s.Cause = study.UnknownTool
	if raw, ok, err := conditions.CategoryResult(&s); ok || raw != nil || err != nil || conditions.Explanation(&s) != "" {
		t.Errorf("unknown_tool has a category result %s", raw)
	}
}

// TestEnvelopeCondition checks that envelope adds exactly the scenario's
// control envelope after its label, next to the normalized observation.
func TestEnvelopeCondition(t *testing.T) {
	m, p := load(t)
	for i := range m.Corpus.Scenarios {
		s := &m.Corpus.Scenarios[i]
		ann, err := conditions.Annotation(s, study.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		label, body, _ := strings.Cut(ann, "\n")
		want, _ := conditions.Indent(s.ControlEnvelope)
		if label != conditions.EnvelopeLabel || body != want {
			t.Errorf("%s: envelope annotation %q, want the label and the control envelope", s.ID, ann)
		}
		msgs, _ := p.Initial(s, study.Envelope)
		norm, _ := conditions.DataFor(s, study.Normalized, 0)
		if !strings.Contains(msgs[1].Content, norm.Observation) || !strings.Contains(msgs[1].Content, ann) {
			t.Errorf("%s: the envelope user message lacks the observation or the envelope", s.ID)
		}
	}
	if !spec(t, study.Envelope).RevealsPolicy || spec(t, study.Category).RevealsPolicy || spec(t, study.Envelope).Family == conditions.FamilyPaired || spec(t, study.Category).Family == conditions.FamilyPaired {
		t.Error("envelope reveals the policy, category does not, and neither is paired")
	}
	if _, err := conditions.Annotation(&m.Corpus.Scenarios[0], "nope"); err == nil {
		t.Error("Annotation accepted an unknown condition")
	}
}

// TestLive pins the live replay message of the default prompt: the real
// result, annotated under the condition only when it is the scenario's
// recorded failure again; a prompt without "live" cannot render one.
func TestLive(t *testing.T) {
	m, p := load(t)
	s := &m.Corpus.Scenarios[0]
	if !p.HasLive() {
		t.Fatal("the default prompt has no live template")
	}
	success := json.RawMessage(`{"result": {"isError": false, "content": [{"type": "text", "text": "done"}]}}`)
	got, err := p.Live(s, study.CodeOnly, 2, study.RetryLater, success)
	want := "The agent carried out retry_later (replay 2). The call it made returned:\n{\n  \"result\": {\n    \"isError\": false,\n    \"content\": [\n      {\n        \"type\": \"text\",\n        \"text\": \"done\"\n      }\n    ]\n  }\n}"
	if err != nil || got.Role != conditions.User || got.Content != want {
		t.Errorf("success: %q (%v)\nwant %q", got.Content, err, want)
	}
	// The same failure, with other white space and key order: annotated.
	var v map[string]any
	json.Unmarshal(s.Observation, &v)
	again, _ := json.Marshal(v)
	got, err = p.Live(s, study.CodeOnly, 1, study.RetryNow, again)
	obs, _ := conditions.Indent(again)
	want = "The agent carried out retry_now (replay 1). The call it made returned:\n" + obs + "\n\nError code: " + s.Code
	if err != nil || got.Content != want {
		t.Errorf("same failure: %q (%v)\nwant %q", got.Content, err, want)
	}
	if _, err := p.Live(s, study.CodeOnly, 1, study.RetryNow, json.RawMessage(`{`)); err == nil {
		t.Error("an invalid observation rendered")
	}
	text := m.Prompts[0].Text
	old, err := conditions.ParsePrompt("old", "old.tmpl", text[:strings.Index(text, `{{define "live"`)])
	if err != nil || old.HasLive() {
		t.Fatalf("prompt without live: %v", err)
	}
	if _, err := old.Live(s, study.CodeOnly, 1, study.RetryNow, success); err == nil || !strings.Contains(err.Error(), `prompt old.tmpl: template "live" is not defined`) {
		t.Errorf("prompt without live: %v", err)
	}
	if _, err := conditions.ParsePrompt("bad", "bad.tmpl", text+`{{define "live"}}{{.Nope}}{{end}}`); err == nil {
		t.Error("a broken live template parsed")
	}
	if conditions.SameJSON(json.RawMessage(`{"a":1}`), json.RawMessage(`{"a":2}`)) || !conditions.SameJSON(json.RawMessage(`{"a":1,"b":[true]}`), json.RawMessage(` {"b":[true], "a":1.0}`)) {
		t.Error("SameJSON")
	}
}

// TestInitialOnce: the cached prompt is Initial's, shared between calls,
// and appending to it does not write into the cache.
func TestInitialOnce(t *testing.T) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	s := &m.Corpus.Scenarios[0]
	want, _ := p.Initial(s, study.Prose)
	a, err := p.InitialOnce(s, study.Prose)
	if err != nil || !slices.Equal(a, want) {
		t.Fatalf("InitialOnce %v, %v", a, err)
	}
	_ = append(a, conditions.Message{Role: "assistant", Content: "x"})
	b, _ := p.InitialOnce(s, study.Prose)
	if !slices.Equal(b, want) || cap(b) != len(b) || unsafe.StringData(a[1].Content) != unsafe.StringData(b[1].Content) {
		t.Errorf("second InitialOnce %v: not the shared, clipped render", b)
	}
	c, _ := p.InitialOnce(&m.Corpus.Scenarios[1], study.Prose)
	if unsafe.StringData(c[0].Content) != unsafe.StringData(a[0].Content) {
		t.Error("the system message is not shared")
	}
}

// labelStrings are the forms of the six labels a paraphrase must not
// contain: each label as written and with spaces for underscores.
func labelStrings() []string {
	var out []string
	for _, p := range study.Policies {
		out = append(out, string(p), strings.ReplaceAll(string(p), "_", " "))
	}
	return out
}

// TestParaphrasesHaveNoLabel reviews the fixed paraphrases: one for every
// label, all different, one clause (no period), no label string of any
// policy (in any letter case, with or without underscores) and not the
// system prompt's description of the label; and no paraphrase cell of the
// factorial shows a label string anywhere in what it adds.
func TestParaphrasesHaveNoLabel(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range study.Policies {
		para := conditions.Paraphrase(p)
		if para == "" || seen[para] || strings.ContainsAny(para, ".\"\n") {
			t.Errorf("%s: paraphrase %q is empty, repeated, or has a period, quote or line break", p, para)
		}
		seen[para] = true
		for _, l := range labelStrings() {
			if strings.Contains(strings.ToLower(para), l) {
				t.Errorf("%s: paraphrase %q contains the label string %q", p, para, l)
			}
		}
		if strings.Contains(para, p.Words()) || strings.Contains(p.Words(), para) {
			t.Errorf("%s: paraphrase %q is the system prompt's description", p, para)
		}
	}
	if conditions.Paraphrase("nope") != "" {
		t.Error("an invalid label has a paraphrase")
	}
	m, _ := load(t)
	for i := range m.Corpus.Scenarios {
		s := &m.Corpus.Scenarios[i]
		for _, c := range factorialConditions() {
			cell, _ := conditions.CellOf(c)
			ann, err := conditions.Annotation(s, c)
			if err != nil {
				t.Fatal(err)
			}
			rest := strings.Replace(ann, s.Code, "", 1)
			hasLabel := false
			for _, l := range labelStrings() {
				hasLabel = hasLabel || strings.Contains(strings.ToLower(rest), l)
			}
			if want := cell.Wording == conditions.LabelWording; hasLabel != want {
				t.Errorf("%s %s: %q shows a label: %t, want %t", s.ID, c, ann, hasLabel, want)
			}
		}
	}
}

var sentenceCell = regexp.MustCompile(`^Error details: the code is (\S+), and the policy is to ([^.]+)\.$`)

// TestFactorialCells checks the design of the factorial: eight distinct
// cells, structured being the JSON, label, no-statement one; every cell
// states the scenario's code and preferred policy (its label or its
// paraphrase); and two cells that differ in one factor differ only in
// that factor's text.
func TestFactorialCells(t *testing.T) {
	cells := map[conditions.Cell]bool{}
	for _, c := range factorialConditions() {
		cell, ok := conditions.CellOf(c)
		if !ok || cells[cell] || conditions.FactorialCondition(cell) != c || !c.Valid() || !spec(t, c).RevealsPolicy || (spec(t, c).Family == conditions.FamilyPaired) != (c == study.Structured) {
			t.Errorf("%s: cell %+v (%t) is not a distinct, valid, policy-revealing cell", c, cell, ok)
		}
		cells[cell] = true
	}
	if len(cells) != 8 || conditions.FactorialCondition(conditions.Cell{Format: "xml"}) != "" {
		t.Errorf("%d cells, want 8", len(cells))
	}
	if cell, _ := conditions.CellOf(study.Structured); cell != (conditions.Cell{Format: conditions.JSONFormat, Wording: conditions.LabelWording}) {
		t.Errorf("structured is cell %+v", cell)
	}
	for _, c := range []study.Condition{study.Prose, study.Category, study.EnvelopeFalseReplay} {
		if _, ok := conditions.CellOf(c); ok {
			t.Errorf("%s is in the factorial", c)
		}
	}
	m, _ := load(t)
	for i := range m.Corpus.Scenarios {
		s := &m.Corpus.Scenarios[i]
		ann := map[conditions.Cell]string{}
		for _, c := range factorialConditions() {
			cell, _ := conditions.CellOf(c)
			ann[cell], _ = conditions.Annotation(s, c)
			want := string(s.Preferred)
			if cell.Wording == conditions.ParaphraseWording {
				want = conditions.Paraphrase(s.Preferred)
			}
			body, failed := strings.CutPrefix(ann[cell], conditions.FailureStatement+" ")
			if failed != cell.Failed || strings.Contains(body, "failed") {
				t.Errorf("%s %s: %q: failure statement %t, want %t", s.ID, c, ann[cell], failed, cell.Failed)
			}
			var code, policy string
			if cell.Format == conditions.JSONFormat {
				var v struct{ Code, Policy string }
				js, ok := strings.CutPrefix(body, "Error details: ")
				if !ok || json.Unmarshal([]byte(js), &v) != nil {
					t.Errorf("%s %s: %q is not Error details: and a JSON object", s.ID, c, body)
				}
				code, policy = v.Code, v.Policy
			} else if g := sentenceCell.FindStringSubmatch(body); g != nil {
				code, policy = g[1], g[2]
			}
			if code != s.Code || policy != want {
				t.Errorf("%s %s: %q states code %q and policy %q, want %q and %q", s.ID, c, ann[cell], code, policy, s.Code, want)
			}
		}
		if st, _ := conditions.Annotation(s, study.Structured); st != ann[conditions.Cell{Format: conditions.JSONFormat, Wording: conditions.LabelWording}] {
			t.Errorf("%s: structured is not the factorial's cell", s.ID)
		}
		for cell, a := range ann {
			if cell.Failed {
				bare := cell
				bare.Failed = false
				if a != conditions.FailureStatement+" "+ann[bare] {
					t.Errorf("%s: %q is not the failure statement and %q", s.ID, a, ann[bare])
				}
			}
			if cell.Wording == conditions.ParaphraseWording {
				lab := cell
				lab.Wording = conditions.LabelWording
				if a != strings.Replace(ann[lab], string(s.Preferred), conditions.Paraphrase(s.Preferred), 1) {
					t.Errorf("%s: %q is not %q with the paraphrase for the label", s.ID, a, ann[lab])
				}
			}
		}
	}
	s := m.Corpus.Scenarios[0]
	s.Preferred = "nope"
	if _, err := conditions.Annotation(&s, study.SentenceParaphrase); err == nil || !strings.Contains(err.Error(), "no paraphrase") {
		t.Errorf("a policy without a paraphrase: %v", err)
	}
	if _, err := conditions.Factorial(&s, conditions.Cell{Format: "xml", Wording: conditions.LabelWording}); err == nil {
		t.Error("an unknown format rendered")
	}
	if _, err := conditions.Factorial(&s, conditions.Cell{Format: conditions.JSONFormat, Wording: "shout"}); err == nil {
		t.Error("an unknown wording rendered")
	}
}

// result is a decoded tool result of an annotation.
type result struct {
	ResultType        string         `json:"resultType"`
	IsError           bool           `json:"isError"`
	Content           []any          `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	Error             map[string]any `json:"error"`
	members           map[string]any
}

// annotated decodes the result condition c adds to s after label; ok is
// false when c adds nothing.
func annotated(t *testing.T, s *study.Scenario, c study.Condition, label string) (r result, ok bool) {
	t.Helper()
	ann, err := conditions.Annotation(s, c)
	if err != nil {
		t.Fatalf("%s %s: %v", s.ID, c, err)
	}
	if ann == "" {
		return r, false
	}
	l, body, _ := strings.Cut(ann, "\n")
	if l != label {
		t.Fatalf("%s %s: annotation %q does not start with %q", s.ID, c, ann, label)
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || json.Unmarshal([]byte(body), &r.members) != nil {
		t.Fatalf("%s %s: %v", s.ID, c, err)
	}
	return r, true
}

// TestChannelConditions: category_structured is category without the
// text copy (content is empty), category_text category without
// structuredContent; both add nothing where category adds nothing.
func TestChannelConditions(t *testing.T) {
	m, _ := load(t)
	for i := range m.Corpus.Scenarios {
		s := &m.Corpus.Scenarios[i]
		both, ok := annotated(t, s, study.Category, conditions.CategoryLabel)
		st, okS := annotated(t, s, study.CategoryStructured, conditions.CategoryLabel)
		tx, okT := annotated(t, s, study.CategoryText, conditions.CategoryLabel)
		if ok != okS || ok != okT {
			t.Errorf("%s: category shows a result %t, structured only %t, text only %t", s.ID, ok, okS, okT)
		}
		if !ok {
			continue
		}
		if len(st.Content) != 0 || st.members["content"] == nil || fmt.Sprint(st.StructuredContent) != fmt.Sprint(both.StructuredContent) || len(st.members) != 4 {
			t.Errorf("%s: category_structured %+v, want category's structuredContent and an empty content array", s.ID, st.members)
		}
		if _, has := tx.members["structuredContent"]; has || fmt.Sprint(tx.Content) != fmt.Sprint(both.Content) || len(tx.members) != 3 {
			t.Errorf("%s: category_text %+v, want category's text copy and no structuredContent", s.ID, tx.members)
		}
		if st.ResultType != "complete" || tx.ResultType != "complete" || !st.IsError || !tx.IsError {
			t.Errorf("%s: a single-channel result is not a complete error result", s.ID)
		}
	}
}

// TestMisplacedTrust checks each lie against its truthful source: the
// replay lie changes exactly error.policy, error.retry and
// error.sideEffects of the control envelope; the target lie exactly
// error.target (another kind than the code's, naming something the
// observation never mentions) and error.policy; the retryable lie exactly
// isRetryable, in both channels. The policy each envelope lie declares is
// outside the scenario's non-harm set.
func TestMisplacedTrust(t *testing.T) {
	m, _ := load(t)
	for i := range m.Corpus.Scenarios {
		s := &m.Corpus.Scenarios[i]
		truth, _ := annotated(t, s, study.Envelope, conditions.EnvelopeLabel)
		info, _ := s.Cause.Info()
		for _, c := range []study.Condition{study.EnvelopeFalseReplay, study.EnvelopeFalseTarget} {
			lie, ok := annotated(t, s, c, conditions.EnvelopeLabel)
			if !ok || fmt.Sprint(lie.Content) != fmt.Sprint(truth.Content) || lie.ResultType != truth.ResultType || len(lie.members) != len(truth.members) {
				t.Errorf("%s %s: the outer result changed", s.ID, c)
			}
			changed := map[string]bool{}
			for k, v := range truth.Error {
				if fmt.Sprint(lie.Error[k]) != fmt.Sprint(v) {
					changed[k] = true
				}
			}
			p := study.Policy(fmt.Sprint(lie.Error["policy"]))
			if s.InNonHarm(p) || lie.Error["code"] != s.Code || len(lie.Error) != len(truth.Error) {
				t.Errorf("%s %s: declares %s (non-harm %v) or changed the code", s.ID, c, p, s.NonHarm)
			}
			switch c {
			case study.EnvelopeFalseReplay:
				want := map[string]any{"policy": "retry_now", "retry": map[string]any{"sameRequest": "safe"}, "sideEffects": "committed"}
				for k, v := range want {
					if fmt.Sprint(lie.Error[k]) != fmt.Sprint(v) {
						t.Errorf("%s %s: error.%s is %v, want %v", s.ID, c, k, lie.Error[k], v)
					}
				}
				if len(changed) > 3 || !changed["policy"] || !changed["sideEffects"] {
					t.Errorf("%s %s: changed %v", s.ID, c, changed)
				}
			case study.EnvelopeFalseTarget:
				tg, _ := lie.Error["target"].(map[string]any)
				name, _ := tg["name"].(string)
				if ptr, ok := tg["pointer"].(string); ok {
					name = strings.TrimPrefix(ptr, "/")
				}
				if tg["kind"] == info.TargetKind || name == "" || strings.Contains(string(s.Observation), name) || len(changed) != 2 || !changed["target"] || !changed["policy"] {
					t.Errorf("%s %s: target %v (cause kind %s), changed %v", s.ID, c, tg, info.TargetKind, changed)
				}
				target, policy, err := conditions.FalseTarget(s)
				want, _ := json.Marshal(target)
				got, _ := json.Marshal(tg)
				if err != nil || string(p) != string(policy) || string(want) != string(got) || strings.Contains(string(s.Observation), strings.TrimPrefix(target.Name+target.Pointer, "/")) {
					t.Errorf("%s %s: FalseTarget %+v %s %v, shown %s %s", s.ID, c, target, policy, err, got, p)
				}
				if wantP := map[bool]study.Policy{true: study.ReviseArguments, false: study.SelectTool}[info.TargetKind == "tool"]; policy != wantP {
					t.Errorf("%s: the false target implies %s, want %s", s.ID, policy, wantP)
				}
			}
		}
		cat, ok := annotated(t, s, study.Category, conditions.CategoryLabel)
		lie, okL := annotated(t, s, study.CategoryFalseRetryable, conditions.CategoryLabel)
		if ok != okL {
			t.Fatalf("%s: category shows %t, category_false_retryable %t", s.ID, ok, okL)
		}
		if !ok {
			continue
		}
		var copy map[string]any
		json.Unmarshal([]byte(lie.Content[0].(map[string]any)["text"].(string)), &copy)
		if lie.StructuredContent["isRetryable"] != true || copy["isRetryable"] != true || fmt.Sprint(copy) != fmt.Sprint(lie.StructuredContent) {
			t.Errorf("%s: category_false_retryable %+v does not say retryable in both channels", s.ID, lie.members)
		}
		lie.StructuredContent["isRetryable"] = false
		if fmt.Sprint(lie.StructuredContent) != fmt.Sprint(cat.StructuredContent) {
			t.Errorf("%s: category_false_retryable changes more than isRetryable", s.ID)
		}
	}
	// A transient failure is retryable; its lie says it is not.
	tr := study.Scenario{ID: "t", Cause: study.Transient, Target: study.Target{Kind: "dependency", Name: "feed"}}
	if raw, ok, err := conditions.ContractResult(&tr, study.CategoryFalseRetryable); err != nil || !ok || !strings.Contains(string(raw), `"isRetryable":false`) {
		t.Errorf("transient category_false_retryable %s %v %v", raw, ok, err)
	}
	if _, ok, _ := conditions.ContractResult(&tr, study.Structured); ok {
		t.Error("structured has a contract result")
	}
	// The fabricated targets run out, or the envelope is not an object.
	s := m.Corpus.Scenarios[1]
	s.Observation = json.RawMessage(`{"text": "legacy_export archive_records records_export_v2"}`)
	if _, err := conditions.Annotation(&s, study.EnvelopeFalseTarget); err == nil || !strings.Contains(err.Error(), "every fabricated target") {
		t.Errorf("exhausted targets: %v", err)
	}
	for _, env := range []string{`[]`, `{"content": []}`, `{"error": 3}`, `{"error": {"a" 1}}`} {
		s.ControlEnvelope = json.RawMessage(env)
		if _, err := conditions.Annotation(&s, study.EnvelopeFalseReplay); err == nil || !strings.Contains(err.Error(), "control_envelope") {
			t.Errorf("envelope %s: %v", env, err)
		}
	}
	s.ControlEnvelope = json.RawMessage(`{`)
	if _, err := conditions.Annotation(&s, study.Envelope); err == nil || !strings.Contains(err.Error(), "scenario S02: control_envelope: ") {
		t.Errorf("a broken envelope: %v", err)
	}
}

// spec returns c's entry in conditions.Table.
func spec(t *testing.T, c study.Condition) conditions.Spec {
	t.Helper()
	sp, ok := conditions.Lookup(c)
	if !ok {
		t.Fatalf("%s has no entry in conditions.Table", c)
	}
	return sp
}

// factorialConditions lists the factorial's eight cells in table order:
// structured, then the seven conditions built for it.
func factorialConditions() []study.Condition {
	var out []study.Condition
	for _, sp := range conditions.Table {
		if sp.Cell != nil {
			out = append(out, sp.Name)
		}
	}
	return out
}
