// Package conditions renders a scenario under one of the paired conditions
// of docs/specification.md section 3, through a prompt template file, into
// the chat messages a model receives.
package conditions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"text/template"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/study"
)

// Message is one chat message as a model receives it.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// Roles of chat messages.
const (
	System    = "system"
	User      = "user"
	Assistant = "assistant"
)

// Prompt is a parsed prompt template; it defines the templates "system",
// "user" and "replay", and optionally "live" (needed by live replay only).
type Prompt struct {
	Name string
	tmpl *template.Template
	live bool // "live" is defined
	// showsTools says "user" shows .Tools and .Call (task: act).
	showsTools bool
	// rendered holds the messages InitialOnce rendered last, by scenario
	// and condition.
	mu       sync.Mutex
	rendered recent[renderKey, []Message]
	system   string // the "system" template's text, rendered once
	// observed holds the observations of the scenarios Live compared
	// last, decoded.
	observed recent[*study.Scenario, any]
}

// renderKey names an initial prompt: a scenario (by address) and a
// condition.
type renderKey struct {
	s *study.Scenario
	c study.Condition
}

// maxRendered bounds the initial prompts a Prompt keeps, and the
// observations it keeps decoded: 4,096 prompts of a few kB (about 5 MB
// at most). The decisions of one prompt follow each other in a model's
// order (its replicates), and every model goes through the scenarios in
// the same order, so the prompts in use are the few each model is at;
// a model that has fallen more than 2,048 prompts behind another
// renders its own again (a few microseconds each), the same text.
// Note: it was 16k entries, emptied when full: on a corpus of 1,000
// servers and 16,667 scenarios those prompts (and the message log's
// refs, results.MessageLog, which kept them alive) were 10 to 15 MB of
// a run's 40 MB live heap. The three baselines of that study drift
// apart by more than 2,048 prompts: 140,000 to 190,000 renders of its
// 66,668 prompts instead of 86,000, 0.3 to 0.5 s of CPU in a run of 15.
const maxRendered = 1 << 12

// recent keeps the values of the keys used last: at most maxRendered
// entries, in two generations. A key found in the older moves to the
// newer; when the newer holds half of maxRendered, it becomes the older
// and the older is dropped.
type recent[K comparable, V any] struct {
	cur, old map[K]V
}

func (r *recent[K, V]) get(k K) (V, bool) {
	if v, ok := r.cur[k]; ok {
		return v, true
	}
	v, ok := r.old[k]
	if ok {
		r.put(k, v)
	}
	return v, ok
}

func (r *recent[K, V]) put(k K, v V) {
	if r.cur == nil || len(r.cur) >= maxRendered/2 {
		r.old, r.cur = r.cur, make(map[K]V)
	}
	r.cur[k] = v
}

// Data is what the user, replay and live templates receive.
type Data struct {
	Observation string          // the client-normalized observation, indented JSON
	Annotation  string          // what the condition adds; "" for normalized
	Condition   study.Condition // the condition name
	Replay      int             // replay number (1…cap) in "replay" and "live", 0 in "user"
	// Policy is, in "live", the policy the harness executed before the
	// message (retry_now, retry_later, revise_arguments, select_tool or
	// authenticate); "" in "user" and "replay".
	Policy study.Policy
	// Tools is, under task: act, the tools the server listed, as an
	// indented JSON array of the objects it sent (name, description,
	// inputSchema, annotations, …); "" otherwise.
	Tools string
	// Call is, under task: act, a call as indented JSON {"tool": …,
	// "arguments": …}: in "user" the failing call, in "live" the call the
	// harness made after the previous answer; "" otherwise.
	Call string
	// Task is, under task: act, what the user asked, when the
	// environment's scenario says (the reference servers'); "" otherwise.
	Task string
}

// ParsePrompt parses template text; file names the source in errors.
func ParsePrompt(name, file, text string) (*Prompt, error) {
	t, err := template.New(file).Option("missingkey=error").Parse(text)
	if err != nil {
		// The parser's message quotes the template (a function's name).
		return nil, fmt.Errorf("prompt %s: %s", file, input.Snippet(err.Error()))
	}
	for _, n := range []string{"system", "user", "replay"} {
		if t.Lookup(n) == nil {
			return nil, fmt.Errorf("prompt %s: template %q is not defined", file, n)
		}
	}
	p := &Prompt{Name: name, tmpl: t, live: t.Lookup("live") != nil}
	// Execute once on sample data so a broken template fails at load time.
	if _, err := p.exec("user", Data{Observation: "{}", Annotation: "x", Condition: study.CodeOnly}); err != nil {
		return nil, err
	}
	if _, err := p.exec("replay", Data{Observation: "{}", Annotation: "x", Condition: study.CodeOnly, Replay: 1}); err != nil {
		return nil, err
	}
	if p.live {
		if _, err := p.exec("live", Data{Observation: "{}", Annotation: "x", Condition: study.CodeOnly, Replay: 1, Policy: study.RetryLater}); err != nil {
			return nil, err
		}
	}
	// "system" has no data: its text is the same every time.
	sys, err := p.exec("system", nil)
	if err != nil {
		return nil, err
	}
	p.system = sys
	probe := Data{Observation: "{}", Condition: study.Normalized, Tools: toolsProbe, Call: callProbe}
	if text, err := p.exec("user", probe); err == nil {
		p.showsTools = strings.Contains(text, toolsProbe) && strings.Contains(text, callProbe)
	}
	return p, nil
}

// Sample values ParsePrompt renders "user" with to learn whether it shows
// the tools and the failing call.
const (
	toolsProbe = "\x00tools-probe\x00"
	callProbe  = "\x00call-probe\x00"
)

// ShowsTools reports whether the "user" template shows .Tools and .Call,
// which task: act needs (the model must see the tools it may call and the
// call that failed).
func (p *Prompt) ShowsTools() bool { return p.showsTools }

// InitialAct renders turn 0 of task act: as Initial, with tools (the
// server's list, each object as it sent it), call (the failing call,
// {"tool", "arguments"}) and task (what the user asked, or "") in the
// data of "user".
func (p *Prompt) InitialAct(s *study.Scenario, c study.Condition, tools []json.RawMessage, call json.RawMessage, task string) ([]Message, error) {
	if !p.showsTools {
		return nil, fmt.Errorf("prompt %s: task act needs a \"user\" template that shows .Tools and .Call", p.tmpl.Name())
	}
	d, err := dataFor(s, c, 0)
	if err != nil {
		return nil, err
	}
	if d.Tools, err = toolList(tools); err != nil {
		return nil, fmt.Errorf("scenario %s: tools: %w", s.ID, err)
	}
	if d.Call, err = Indent(call); err != nil {
		return nil, fmt.Errorf("scenario %s: failing call: %w", s.ID, err)
	}
	d.Task = task
	return p.turn0(d)
}

// toolList formats tools as one indented JSON array, each object as
// given.
func toolList(tools []json.RawMessage) (string, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, t := range tools {
		if i > 0 {
			b.WriteByte(',')
		}
		if !json.Valid(t) {
			return "", fmt.Errorf("tools[%d] is not valid JSON", i)
		}
		b.Write(t)
	}
	b.WriteByte(']')
	return Indent(b.Bytes())
}

// Acted renders the user message of task act after the harness made call
// (replay number n, 1-based) for policy and the server returned obs: the
// "live" template, with .Call set. The annotation rule is Live's.
func (p *Prompt) Acted(s *study.Scenario, c study.Condition, n int, policy study.Policy, call, obs json.RawMessage) (Message, error) {
	text, err := Indent(call)
	if err != nil {
		return Message{}, fmt.Errorf("scenario %s: executed call: %w", s.ID, err)
	}
	return p.live1(s, c, n, policy, obs, text)
}

func (p *Prompt) exec(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := p.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("prompt %s: %s", p.tmpl.Name(), input.Snippet(err.Error()))
	}
	return b.String(), nil
}

// Initial renders turn 0: the system message and the failure as condition
// c shows it.
func (p *Prompt) Initial(s *study.Scenario, c study.Condition) ([]Message, error) {
	d, err := dataFor(s, c, 0)
	if err != nil {
		return nil, err
	}
	return p.turn0(d)
}

// turn0 renders the system message and the "user" template with d.
func (p *Prompt) turn0(d Data) ([]Message, error) {
	user, err := p.exec("user", d)
	if err != nil {
		return nil, err
	}
	return []Message{{Role: System, Content: p.system}, {Role: User, Content: user}}, nil
}

// InitialOnce is Initial rendered once per scenario and condition: every
// replicate and model of a study is shown the same prompt, so it is
// rendered the first time and then shared (the same strings). The slice
// returned has no spare capacity, so appending to it copies; s must not
// change once rendered (scenarios are keyed by address). Safe for
// concurrent use.
func (p *Prompt) InitialOnce(s *study.Scenario, c study.Condition) ([]Message, error) {
	k := renderKey{s, c}
	p.mu.Lock()
	msgs, ok := p.rendered.get(k)
	p.mu.Unlock()
	if ok {
		return msgs, nil
	}
	msgs, err := p.Initial(s, c)
	if err != nil {
		return nil, err
	}
	msgs = msgs[:len(msgs):len(msgs)]
	p.mu.Lock()
	p.rendered.put(k, msgs)
	p.mu.Unlock()
	return msgs, nil
}

// Replayed renders the user message that reports replay number n (1-based)
// of the unchanged request, which returned the same stored failure.
func (p *Prompt) Replayed(s *study.Scenario, c study.Condition, n int) (Message, error) {
	d, err := dataFor(s, c, n)
	if err != nil {
		return Message{}, err
	}
	text, err := p.exec("replay", d)
	return Message{Role: User, Content: text}, err
}

// Replays appends to msgs, the messages of a decision's first turn, n
// replays as a model that chose policy each time would see them: its
// answer, then under stored replay (obs nil; policy is retry_now) the
// unchanged failure again, else the live result obs of each execution.
// It is the trajectory stress render prints.
func (p *Prompt) Replays(msgs []Message, s *study.Scenario, c study.Condition, n int, policy study.Policy, obs json.RawMessage) ([]Message, error) {
	answer := Message{Role: Assistant, Content: `{"operation_status": "failed", "recovery_policy": "` + string(policy) + `"}`}
	for r := 1; r <= n; r++ {
		next, err := p.Replayed(s, c, r)
		if obs != nil {
			next, err = p.Live(s, c, r, policy, obs)
		}
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, answer, next)
	}
	return msgs, nil
}

// HasLive reports whether the prompt defines the "live" template, which
// live replay (manifest replay: live) renders its replay messages with.
func (p *Prompt) HasLive() bool { return p.live }

// Live renders the user message of a live replay: replay number n
// (1-based) executed policy and returned observation obs, a
// client-normalized observation of scenario s's environment, shown under
// condition c through the "live" template.
//
// Note: the condition's annotation is derived from the corpus record, so
// it describes the scenario's recorded failure only: it is added when obs
// is that failure again (the same JSON value as the record's
// observation), and left out for any other result (a success, another
// failure), which the model then sees as the environment returned it.
func (p *Prompt) Live(s *study.Scenario, c study.Condition, n int, policy study.Policy, obs json.RawMessage) (Message, error) {
	return p.live1(s, c, n, policy, obs, "")
}

// live1 renders "live" with call (indented JSON, or "") as .Call.
func (p *Prompt) live1(s *study.Scenario, c study.Condition, n int, policy study.Policy, obs json.RawMessage, call string) (Message, error) {
	if !p.live {
		return Message{}, fmt.Errorf("prompt %s: template \"live\" is not defined (live replay needs it)", p.tmpl.Name())
	}
	text, err := Indent(obs)
	if err != nil {
		return Message{}, fmt.Errorf("scenario %s: live observation: %w", s.ID, err)
	}
	d := Data{Observation: text, Condition: c, Replay: n, Policy: policy, Call: call}
	if p.sameObservation(s, obs) {
		if d.Annotation, err = annotation(s, c); err != nil {
			return Message{}, err
		}
	}
	text, err = p.exec("live", d)
	return Message{Role: User, Content: text}, err
}

// sameObservation reports whether obs is the same JSON value as the
// scenario's observation (SameJSON), decoding the scenario's once.
func (p *Prompt) sameObservation(s *study.Scenario, obs json.RawMessage) bool {
	if bytes.Equal(obs, s.Observation) {
		return json.Valid(obs)
	}
	p.mu.Lock()
	want, ok := p.observed.get(s)
	p.mu.Unlock()
	if !ok {
		if json.Unmarshal(s.Observation, &want) != nil {
			return false
		}
		p.mu.Lock()
		p.observed.put(s, want)
		p.mu.Unlock()
	}
	return decodesTo(obs, want)
}

// SameJSON reports whether a and b are the same JSON value: equal after
// decoding (object key order and white space aside); invalid JSON is not
// the same as anything.
func SameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return json.Valid(a)
	}
	var y any
	return json.Unmarshal(b, &y) == nil && decodesTo(a, y)
}

// decodesTo reports whether a is valid JSON that decodes to v.
func decodesTo(a json.RawMessage, v any) bool {
	var x any
	return json.Unmarshal(a, &x) == nil && reflect.DeepEqual(x, v)
}

// dataFor builds the template data of scenario s under condition c, as
// its entry in Table renders it. Under an error shape the observation is
// what the server sends under it (ShapeResult, after its label), in place
// of the recorded one.
func dataFor(s *study.Scenario, c study.Condition, replay int) (Data, error) {
	obs, err := Indent(s.Observation)
	if err != nil {
		return Data{}, fmt.Errorf("scenario %s: observation: %w", s.ID, err)
	}
	sp, known := specs[c]
	if !known {
		return Data{}, unknown(c)
	}
	if sp.reshape != nil {
		raw, label, ok, err := sp.reshape(s, c)
		if err != nil {
			return Data{}, err
		}
		if ok {
			res, err := Indent(raw)
			if err != nil {
				return Data{}, fmt.Errorf("scenario %s: %s: %w", s.ID, c, err)
			}
			obs = label + "\n" + res
		}
	}
	ann, err := annotation(s, c)
	return Data{Observation: obs, Annotation: ann, Condition: c, Replay: replay}, err
}

// Labels that open the annotations of the envelope and category conditions.
// Each stands alone on a line, followed by the indented JSON of a complete
// tool result; a client reading the messages (models/failclosed) finds the
// result after the last line that equals the label.
const (
	// ToolsLabel opens the server's tool list in the action prompt, and
	// CallLabel the failing call; each stands alone on a line, followed by
	// the indented JSON (act.tmpl; the acting baselines read them).
	ToolsLabel    = "The server offers these tools:"
	CallLabel     = "The agent called:"
	EnvelopeLabel = "Control envelope:"
	CategoryLabel = "Tool result with error category:"
)

// DecodeAfter decodes into v the JSON value that follows the first line
// of text equal to label (ToolsLabel, CallLabel), and reports whether
// there was such a line and a value that decodes.
func DecodeAfter(text, label string, v any) bool {
	i := strings.Index("\n"+text, "\n"+label+"\n")
	if i < 0 {
		return false
	}
	return json.NewDecoder(strings.NewReader(text[i+len(label)+1:])).Decode(v) == nil
}

// annotation is what condition c adds to the normalized observation, as
// its entry in Table renders it: nothing (normalized); the namespaced code alone (code_only); the code and
// the preferred policy label as JSON (structured); one sentence giving the
// cause and the preferred policy in words, without the code or the label
// (prose); EnvelopeLabel and the scenario's control envelope as indented
// JSON (envelope); CategoryLabel and the scenario's error-category result
// as indented JSON (category; see categoryResultOf), or nothing for a cause
// without a category. The factorial cells are built by Factorial, the
// single-channel and misplaced-trust conditions by contractResult (each
// after the label of the contract its entry carries); an error shape
// adds nothing: it replaces the observation (dataFor).
//
// Note: envelope and category show their result next to the normalized
// observation, not instead of it, so every condition keeps the same base
// observation and differs only in what it adds.
func annotation(s *study.Scenario, c study.Condition) (string, error) {
	sp, ok := specs[c]
	switch {
	case !ok:
		return "", unknown(c)
	case sp.result != nil:
		return contractAnnotation(s, c, sp)
	case sp.annotate != nil:
		return sp.annotate(s, c)
	}
	return "", nil // normalized; a shape replaces the observation (dataFor)
}

// contractAnnotation is the label of the contract sp carries, then the
// result it renders for s as indented JSON; nothing where it has none.
func contractAnnotation(s *study.Scenario, c study.Condition, sp *Spec) (string, error) {
	raw, ok, err := sp.result(s, c)
	if err != nil || !ok {
		return "", err
	}
	label, what := CategoryLabel, string(c)+" result"
	if slices.Contains(sp.Contracts, ContractEnvelope) {
		label = EnvelopeLabel
	}
	if c == study.Envelope {
		what = "control_envelope"
	}
	res, err := Indent(raw)
	if err != nil {
		return "", fmt.Errorf("scenario %s: %s: %w", s.ID, what, err)
	}
	return label + "\n" + res, nil
}

// codeOnly is code_only's annotation: the namespaced code alone.
func codeOnly(s *study.Scenario, _ study.Condition) (string, error) {
	return "Error code: " + s.Code, nil
}

// prose is prose's annotation: the cause and the preferred policy in
// words.
func prose(s *study.Scenario, _ study.Condition) (string, error) {
	info, ok := s.Cause.Info()
	if !ok {
		return "", fmt.Errorf("scenario %s: unknown cause %q", s.ID, s.Cause)
	}
	return fmt.Sprintf("The call failed because %s; the agent should %s.", info.Words, s.Preferred.Words()), nil
}

// FailureStatement is the explicit failure statement a factorial cell with
// Cell.Failed puts before its details, the same words in both formats
// (prose opens with them too).
const FailureStatement = "The call failed."

// paraphrases are the fixed paraphrases of the factorial's paraphrase
// wording: the action of each label in other words than the label and
// than the system prompt's description of it, so a model must map the
// meaning to a label (tested to contain no label string).
var paraphrases = map[study.Policy]string{
	study.ReviseArguments: "fix the rejected input and send this tool a new request with the fixed input",
	study.SelectTool:      "switch to another tool instead of this one",
	study.Authenticate:    "sign in for a valid access token first and then send the request once more",
	study.RetryLater:      "wait for a while and then send exactly the same request once more",
	study.RetryNow:        "send exactly the same request once more without waiting",
	study.StopOrEscalate:  "give up on this request and hand the problem to a human operator",
}

// Paraphrase returns the fixed paraphrase of policy p, or "" for an
// invalid label.
func Paraphrase(p study.Policy) string { return paraphrases[p] }

// Factorial renders scenario s in a cell of the format × wording ×
// failure-statement factorial. Every cell carries the same two facts, the
// namespaced code and the preferred policy, after "Error details: ":
//
//	json, label:          Error details: {"code":"C","policy":"P"}
//	json, paraphrase:     Error details: {"code":"C","policy":"<paraphrase of P>"}
//	sentence, label:      Error details: the code is C, and the policy is to P.
//	sentence, paraphrase: Error details: the code is C, and the policy is to <paraphrase of P>.
//
// and a cell with the failure statement puts FailureStatement and a space
// before it. So two cells that differ in one factor differ only in that
// factor's text: the format's frame, the policy's words, or the statement.
// The json, label cell without the statement is structured, byte for byte.
func factorial(s *study.Scenario, cell Cell) (string, error) {
	policy := string(s.Preferred)
	switch cell.Wording {
	case LabelWording:
	case ParaphraseWording:
		if policy = Paraphrase(s.Preferred); policy == "" {
			return "", fmt.Errorf("scenario %s: no paraphrase of preferred policy %q", s.ID, s.Preferred)
		}
	default:
		return "", fmt.Errorf("scenario %s: unknown wording %q", s.ID, cell.Wording)
	}
	var details string
	switch cell.Format {
	case JSONFormat:
		b, err := json.Marshal(struct {
			Code   string `json:"code"`
			Policy string `json:"policy"`
		}{s.Code, policy})
		if err != nil {
			return "", err
		}
		details = string(b)
	case SentenceFormat:
		details = fmt.Sprintf("the code is %s, and the policy is to %s.", s.Code, policy)
	default:
		return "", fmt.Errorf("scenario %s: unknown format %q", s.ID, cell.Format)
	}
	if cell.Failed {
		return FailureStatement + " Error details: " + details, nil
	}
	return "Error details: " + details, nil
}

// categoryContract is the error-category contract of seed 002 as shown in
// the category condition: errorCategory, isRetryable and explanation. The
// optional nextAction is left out so that the condition stays answer-free.
type categoryContract struct {
	ErrorCategory study.ErrorCategory `json:"errorCategory"`
	IsRetryable   bool                `json:"isRetryable"`
	Explanation   string              `json:"explanation"`
}

// categoryResult is a complete tool result carrying the contract in
// structuredContent, with its serialized copy in a text block; a
// single-channel condition leaves one of the two out.
type categoryResult struct {
	ResultType        string            `json:"resultType"`
	IsError           bool              `json:"isError"`
	Content           []textBlock       `json:"content"`
	StructuredContent *categoryContract `json:"structuredContent,omitempty"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// controlEnvelope is envelope's result: the scenario's control envelope.
func controlEnvelope(s *study.Scenario, _ study.Condition) (json.RawMessage, bool, error) {
	return s.ControlEnvelope, true, nil
}

// falseEnvelopeResult is a misplaced-trust envelope's result
// (falseEnvelope).
func falseEnvelopeResult(s *study.Scenario, c study.Condition) (json.RawMessage, bool, error) {
	raw, err := falseEnvelope(s, c)
	return raw, err == nil, err
}

// categoryResultOf returns the counterfactual tool result of scenario s
// under the error-category contract (category; the conditions derived from
// it vary it, contractResult): {"resultType": "complete", "isError": true,
// "content": [{"type": "text", "text": <the contract serialized>}],
// "structuredContent": <the contract>}. ok is false when the cause has no
// category (study.CategoryOf): then there is no such result.
//
// The contract is derived from the record alone: the category from the
// cause, isRetryable from study.Retryable (true only for transient,
// rate_limit and locked), and an explanation stating the failed condition
// and its target (explanation).
func categoryResultOf(s *study.Scenario, c study.Condition) (raw json.RawMessage, ok bool, err error) {
	cat, ok := study.CategoryOf(s.Cause)
	if !ok {
		return nil, false, nil
	}
	con := categoryContract{ErrorCategory: cat, IsRetryable: study.Retryable(s.Cause), Explanation: explanation(s)}
	if c == study.CategoryFalseRetryable {
		con.IsRetryable = !con.IsRetryable
	}
	text, err := json.Marshal(con)
	if err != nil {
		return nil, false, err
	}
	res := categoryResult{ResultType: "complete", IsError: true, Content: []textBlock{{Type: "text", Text: string(text)}}, StructuredContent: &con}
	switch c {
	case study.CategoryStructured:
		res.Content = []textBlock{}
	case study.CategoryText:
		res.StructuredContent = nil
	}
	raw, err = json.Marshal(res)
	return raw, err == nil, err
}

// Fabricated targets of envelope_false_target, tried in order: the first
// that the observation does not mention is named.
var (
	falseTools    = []string{"legacy_export", "archive_records", "records_export_v2"}
	falsePointers = []string{"/exportFormat", "/legacyMode", "/regionFilter"}
)

// falseTarget returns the target envelope_false_target names for scenario
// s and the policy that target implies: for a cause whose target is a
// tool, a parameter {"kind": "parameter", "pointer": …} and
// revise_arguments; for any other, a tool {"kind": "tool", "name": …} and
// select_tool. The name is the first of a fixed list that the observation
// does not contain; it is an error when it contains them all.
func falseTarget(s *study.Scenario) (target study.Target, policy study.Policy, err error) {
	info, ok := s.Cause.Info()
	if !ok {
		return study.Target{}, "", fmt.Errorf("scenario %s: unknown cause %q", s.ID, s.Cause)
	}
	obs := string(s.Observation)
	if info.TargetKind == "tool" {
		for _, p := range falsePointers {
			if !strings.Contains(obs, p[1:]) {
				return study.Target{Kind: "parameter", Pointer: p}, study.ReviseArguments, nil
			}
		}
	} else {
		for _, n := range falseTools {
			if !strings.Contains(obs, n) {
				return study.Target{Kind: "tool", Name: n}, study.SelectTool, nil
			}
		}
	}
	return study.Target{}, "", fmt.Errorf("scenario %s: the observation mentions every fabricated target of %s", s.ID, study.EnvelopeFalseTarget)
}

// falseEnvelope is the control envelope of s with the lie of condition c
// (EnvelopeFalseReplay or EnvelopeFalseTarget) in its error member.
func falseEnvelope(s *study.Scenario, c study.Condition) (json.RawMessage, error) {
	where := fmt.Sprintf("scenario %s: %s: control_envelope", s.ID, c)
	outer, err := members(s.ControlEnvelope)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	i := slices.IndexFunc(outer, func(m member) bool { return m.key == "error" })
	if i < 0 {
		return nil, fmt.Errorf("%s: no error member", where)
	}
	env, err := members(outer[i].val)
	if err != nil {
		return nil, fmt.Errorf("%s.error: %w", where, err)
	}
	if c == study.EnvelopeFalseReplay {
		env = setMember(env, "policy", json.RawMessage(`"retry_now"`))
		env = setMember(env, "retry", json.RawMessage(`{"sameRequest":"safe"}`))
		env = setMember(env, "sideEffects", json.RawMessage(`"committed"`))
	} else {
		target, policy, err := falseTarget(s)
		if err != nil {
			return nil, err
		}
		t, err := json.Marshal(target)
		if err != nil {
			return nil, err
		}
		env = setMember(env, "target", t)
		env = setMember(env, "policy", json.RawMessage(`"`+string(policy)+`"`))
	}
	outer[i].val = joinMembers(env)
	return joinMembers(outer), nil
}

// member is one member of a JSON object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// members splits the JSON object raw into its members, in order.
func members(raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var ms []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		ms = append(ms, member{k, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return ms, nil
}

// setMember replaces the value of key in ms, or appends the member.
func setMember(ms []member, key string, val json.RawMessage) []member {
	for i := range ms {
		if ms[i].key == key {
			ms[i].val = val
			return ms
		}
	}
	return append(ms, member{key, val})
}

// joinMembers encodes ms as one compact JSON object.
func joinMembers(ms []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// explanation is the contract's explanation of scenario s: why the
// operation failed, naming the parameter or dependency when the record's
// target names one (the cause's template, study.Explain). It contains no
// policy label and no action wording (tested like code_only), and "" for
// a cause without a category.
func explanation(s *study.Scenario) string { return study.Explain(s.Cause, s.Target) }

// Indent formats raw JSON canonically: two-space indentation, key order kept.
func Indent(raw json.RawMessage) (string, error) {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

// WriteMessages prints messages for people: each as "--- role ---" and its
// content.
func WriteMessages(w io.Writer, msgs []Message) error {
	for _, m := range msgs {
		if _, err := fmt.Fprintf(w, "--- %s ---\n%s\n", m.Role, m.Content); err != nil {
			return err
		}
	}
	return nil
}
