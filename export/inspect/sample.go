package inspect

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
	sjson "github.com/segmentio/encoding/json"
)

// This file turns one decision (its call lines and its row) into one
// Inspect sample.

// attachAbove is the length above which a message's text is stored once
// in the sample's attachments and referred to as attachment://HASH, as
// Inspect does, instead of in each of the input, the messages and every
// model event's input.
const attachAbove = 100

// message is a request message of the bundle, encoded once: its Inspect
// ChatMessage, and its text when that is an attachment.
type message struct {
	enc     []byte // {"id":…,"content":…,"role":…}
	attKey  string // "" when the text is inline
	attText []byte // the text as a JSON string, when attKey is set
	inline  []byte // enc with the text inline (a sample's input)
	thin    []byte // inline with the text cut to thinText (a summary's)
	system  bool   // a system message
}

// thinText is the length a summary's input texts are cut to (Inspect
// thins its summaries likewise: the viewer lists samples by their first
// lines).
const thinText = 500

// decision is what a sample is made from.
type decision struct {
	calls []results.Call
	refs  [][]string // each call's request message refs (leaves)
	row   *results.Row
}

// line is what a sample needs of a call line beyond its head
// (results.Head, which the reader decoded already).
type line struct {
	Request struct {
		Refs        []string       `json:"messages_ref"`
		Seed        *int64         `json:"seed"`
		Temperature float64        `json:"temperature"`
		Options     map[string]any `json:"options"`
		Tools       []models.Tool  `json:"tools"`
	} `json:"request"`
	LatencyMS    float64                 `json:"latency_ms"`
	PromptTokens int                     `json:"prompt_tokens"`
	OutputTokens int                     `json:"output_tokens"`
	Body         []byte                  `json:"body"`
	Events       []models.TransportEvent `json:"transport_events"`
	Observation  json.RawMessage         `json:"observation"`
	Result       json.RawMessage         `json:"result"`
	Env          *simulator.EnvOutcome   `json:"env"`
	Thinking     string                  `json:"thinking"`
	ToolCalls    json.RawMessage         `json:"tool_calls"`
	Action       *simulator.Action       `json:"action"`
}

// call is the call line of head h and the rest of it, l.
func (l *line) call(h *results.Head) results.Call {
	seed := h.Seed
	if l.Request.Seed != nil {
		seed = *l.Request.Seed
	}
	return results.Call{Key: h.Key, Server: h.Server, Preferred: h.Preferred, PreferredSet: h.PreferredSet, NonHarm: h.NonHarm, Turn: h.Turn, Seed: h.Seed,
		Request:  models.Request{Seed: seed, Temperature: l.Request.Temperature, Options: l.Request.Options, Tools: l.Request.Tools},
		Response: h.Response, LatencyMS: l.LatencyMS, PromptTokens: l.PromptTokens, OutputTokens: l.OutputTokens, Body: l.Body,
		Error: h.Error, EnvError: h.EnvError, Events: l.Events, Replay: h.Replay, Observation: l.Observation, Result: l.Result,
		Env: l.Env, Thinking: l.Thinking, ToolCalls: l.ToolCalls, Action: l.Action, Task: h.Task}
}

// sample decodes job j's lines and writes its sample (and, for an .eval
// log, its summary) into j; name is the file's, for errors.
func (s *sampler) sample(j *job, name string) error {
	d := &s.d
	d.calls, d.refs, d.row = d.calls[:0], d.refs[:0], &j.row
	raw := j.raw
	for len(raw) > 0 {
		n := bytes.IndexByte(raw, '\n')
		if n < 0 {
			n = len(raw)
		}
		i := len(d.calls)
		if i >= len(j.heads) {
			return fmt.Errorf("%s:%d: decision %s has more lines than its reader found", name, j.line, j.row.Key())
		}
		// segmentio's decoder (encoding/json's semantics; already in the
		// binary through the MCP SDK) decodes a line in a third of the
		// time.
		var l line
		if err := sjson.Unmarshal(raw[:n], &l); err != nil {
			return fmt.Errorf("%s:%d: %w", name, j.line+i, err)
		}
		raw = raw[min(n+1, len(raw)):]
		leaves, err := s.leavesOf(l.Request.Refs)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, j.line+i, err)
		}
		d.calls = append(d.calls, l.call(&j.heads[i]))
		d.refs = append(d.refs, leaves)
	}
	if len(d.calls) != len(j.heads) {
		return fmt.Errorf("%s:%d: decision %s: read %d lines, want %d", name, j.line, j.row.Key(), len(d.calls), len(j.heads))
	}
	s.model, s.digest = j.lf.model, j.lf.digest
	// The sample (and summary) are written into the job's own buffers.
	s.b, s.sum = j.out[:0], j.summary[:0]
	err := s.write(d)
	j.out, j.summary, j.usage = s.b, s.sum, s.usage
	return err
}

// sampler writes samples (one per worker); it keeps the encoded request
// messages of the bundle by ref, as the same few appear in every sample
// of a study.
type sampler struct {
	table   *results.Messages
	msgs    map[string]*message
	runs    map[string][]string // the leaves of a ref (leavesOf)
	d       decision
	model   string // the current log's model name, provider/model
	digest  string // the current log's model digest, "" when none
	started string // the run's start, the timestamp of every event
	// summaries says to write each sample's summary too (into sum), for
	// an .eval log.
	summaries bool
	sum       []byte
	usage     usage // the tokens of the sample written
	scen      map[string]*study.Scenario
	b         []byte            // the sample being written (the job's buffer)
	att       map[string][]byte // the sample's attachments
	attOrder  []string
	x         explainer // the sample's explanations
	ans       []byte    // the sample's answer, encoded
	answers   []byte    // each call's answer, encoded (encodeAnswers)
	answerAt  [][2]span // where each call's completion and message are in answers
}

// leavesOf returns the refs of the single messages refs name
// (results.Messages.Leaves), those of a single ref kept for the next
// call that names it (a run's expansion is read-only).
func (s *sampler) leavesOf(refs []string) ([]string, error) {
	if len(refs) != 1 {
		return s.table.Leaves(refs)
	}
	if out, ok := s.runs[refs[0]]; ok {
		return out, nil
	}
	out, err := s.table.Leaves(refs)
	if err == nil {
		if s.runs == nil {
			s.runs = map[string][]string{}
		}
		s.runs[refs[0]] = out
	}
	return out, err
}

// leaves returns the encoded messages of refs, in order.
func (s *sampler) leaves(refs []string) ([]*message, error) {
	out := make([]*message, 0, len(refs))
	for _, ref := range refs {
		m, ok := s.msgs[ref]
		if !ok {
			msg, err := s.table.Message(ref)
			if err != nil {
				return nil, err
			}
			m = encodeMessage(ref, msg.Role, msg.Content)
			s.msgs[ref] = m
		}
		out = append(out, m)
	}
	return out, nil
}

// encodeMessage encodes a request message as Inspect's ChatMessage with
// id ref.
func encodeMessage(ref, role, content string) *message {
	m := &message{system: role == conditions.System}
	b := append([]byte(`{"id":`), appendString(nil, ref)...)
	b = append(b, `,"content":`...)
	tail := []byte(nil)
	if role == conditions.User || role == conditions.System {
		tail = append(tail, `,"source":"input"`...)
	}
	tail = append(tail, `,"role":`...)
	tail = append(appendString(tail, role), '}')
	m.inline = append(appendString(append([]byte(nil), b...), content), tail...)
	m.enc, m.thin = m.inline, m.inline
	if len(content) > thinText {
		cut := content[:thinText]
		for !utf8.ValidString(cut) {
			cut = cut[:len(cut)-1]
		}
		m.thin = append(appendString(append([]byte(nil), b...), cut+"…"), tail...)
	}
	if len(content) > attachAbove {
		sum := md5.Sum([]byte(content))
		m.attKey = hex.EncodeToString(sum[:])
		m.attText = appendString(nil, content)
		m.enc = append(appendString(b, "attachment://"+m.attKey), tail...)
	}
	return m
}

// use notes that the sample refers to m's attachment.
func (s *sampler) use(m *message) {
	if m.attKey == "" {
		return
	}
	if _, ok := s.att[m.attKey]; !ok {
		s.att[m.attKey] = m.attText
		s.attOrder = append(s.attOrder, m.attKey)
	}
}

// appendMessages appends ms as a JSON array, their texts as
// attachments (noted as used).
func (s *sampler) appendMessages(b []byte, ms []*message) []byte {
	for _, m := range ms {
		s.use(m)
	}
	return appendList(b, ms, func(m *message) []byte { return m.enc })
}

// inputOf returns the messages of a sample's input: the first request's
// after its system prompt, all of them when they are all system.
func inputOf(first []*message) []*message {
	for i, m := range first {
		if !m.system {
			return first[i:]
		}
	}
	return first
}

// appendList appends ms as a JSON array of the encodings pick gives.
func appendList(b []byte, ms []*message, pick func(*message) []byte) []byte {
	b = append(b, '[')
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, pick(m)...)
	}
	return append(b, ']')
}

// toolCall is a call the harness sent (or refused) after a turn.
type toolCall struct {
	id, function string
	arguments    json.RawMessage
	result       json.RawMessage // the observation it returned, nil when none
	refused      string          // why the harness refused it, "" when sent
	failure      string          // its error (failed): why it was refused, or what its observation says failed; "" when it succeeded
}

// callAfter returns the tool call that followed turn t of d, or nil: the
// action of the action task, the replay of a retry_now under stored
// replay, the policy the environment executed under live replay.
func (d *decision) callAfter(t int, scen *study.Scenario) *toolCall {
	tc := d.toolCall(t, scen)
	if tc != nil {
		tc.failure = observationError(tc.result)
		if tc.refused != "" {
			tc.failure = "not sent: " + tc.refused
		}
	}
	return tc
}

// toolCall is callAfter without the call's failure.
func (d *decision) toolCall(t int, scen *study.Scenario) *toolCall {
	c := &d.calls[t]
	last := t == len(d.calls)-1
	var result json.RawMessage
	switch {
	case !last && c.Replay != "":
		result = d.calls[t+1].Observation
	case last && len(c.Result) > 0:
		result = c.Result
	case !last && scen != nil:
		result = scen.Observation
	}
	id := "call-" + strconv.Itoa(t+1)
	if c.Action != nil {
		tc := &toolCall{id: id, function: c.Action.Tool, arguments: c.Action.Arguments, result: result}
		if !c.Action.Sent {
			tc.refused = c.Action.Invalid
			if c.Action.Detail != "" {
				tc.refused += ": " + c.Action.Detail
			}
		}
		if calls, err := models.ParseToolCalls(c.ToolCalls); err == nil && len(calls) > 0 && calls[0].ID != "" && c.Action.Channel == simulator.ChannelNative {
			tc.id = calls[0].ID
		}
		return tc
	}
	if last && len(c.Result) == 0 || c.Error != "" {
		return nil
	}
	// The label task: the harness replayed the failing call (stored
	// replay) or the environment executed the policy (live replay).
	a := simulator.ParseAnswer(c.Response)
	return &toolCall{id: id, function: string(a.Policy), arguments: json.RawMessage("{}"), result: result}
}

// observationError returns the error text of a failed tool call's
// observation (a JSON-RPC error, or a result with isError set), "" when
// it did not fail.
func observationError(obs json.RawMessage) string {
	var o struct {
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(obs, &o) != nil {
		return ""
	}
	switch {
	case o.Error != nil:
		return fmt.Sprintf("JSON-RPC error %d: %s", o.Error.Code, o.Error.Message)
	case o.Result != nil && o.Result.IsError:
		if len(o.Result.Content) > 0 && o.Result.Content[0].Text != "" {
			return o.Result.Content[0].Text
		}
		return "the tool call failed (isError)"
	}
	return ""
}

// encodeAnswers encodes each call of d's answer once (calls are the tool
// calls after each turn): the messages, the output and each model
// event's output hold the same bytes (answer).
func (s *sampler) encodeAnswers(d *decision, calls []*toolCall) {
	s.answers, s.answerAt = s.answers[:0], s.answerAt[:0]
	for t := range d.calls {
		start := len(s.answers)
		s.answers = appendString(s.answers, d.calls[t].Response)
		mid := len(s.answers)
		s.answers = s.appendAssistant(s.answers, &d.calls[t], t, calls[t], s.answers[start:mid])
		s.answerAt = append(s.answerAt, [2]span{{start, mid}, {mid, len(s.answers)}})
	}
}

// answer returns turn's answer as encodeAnswers encoded it: the raw
// response as a JSON string (the completion), and the assistant message.
func (s *sampler) answer(turn int) (completion, message []byte) {
	at := &s.answerAt[turn]
	return s.answers[at[0].start:at[0].end], s.answers[at[1].start:at[1].end]
}

// appendAssistant appends call c's answer as Inspect's assistant
// message: the raw response (response, encoded) as its text, the
// thinking apart as a reasoning content, and the tool calls the server
// returned or the harness took from the answer.
func (s *sampler) appendAssistant(b []byte, c *results.Call, turn int, tc *toolCall, response []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, "answer-"+strconv.Itoa(turn+1))
	b = append(b, `,"content":`...)
	if c.Thinking != "" {
		b = append(b, `[{"type":"reasoning","reasoning":`...)
		b = appendString(b, c.Thinking)
		b = append(b, `,"redacted":false},{"type":"text","text":`...)
		b = append(b, response...)
		b = append(b, `}]`...)
	} else {
		b = append(b, response...)
	}
	b = append(b, `,"source":"generate","role":"assistant"`...)
	if tc != nil && c.Action != nil {
		b = append(b, `,"tool_calls":[{"id":`...)
		b = appendString(b, tc.id)
		b = append(b, `,"function":`...)
		b = appendString(b, tc.function)
		b = append(b, `,"arguments":`...)
		b = appendObject(b, tc.arguments)
		b = append(b, `,"type":"function"}]`...)
	}
	b = append(b, `,"model":`...)
	b = appendString(b, s.model)
	return append(b, '}')
}

// appendOutput appends Inspect's ModelOutput of call c (turn turn):
// its answer as the one choice (none when the call failed without one),
// the raw response as the completion, usage u and the call's latency.
func (s *sampler) appendOutput(b []byte, c *results.Call, turn int, u *usage) []byte {
	completion, message := s.answer(turn)
	b = append(b, `{"model":`...)
	b = appendString(b, s.model)
	b = append(b, `,"choices":[`...)
	if c.Error == "" || c.Response != "" {
		b = append(b, `{"message":`...)
		b = append(b, message...)
		b = append(b, `,"stop_reason":"stop"}`...)
	}
	b = append(b, `],"completion":`...)
	b = append(b, completion...)
	b = append(b, `,"usage":`...)
	b = appendUsage(b, u)
	b = append(b, `,"time":`...)
	b = appendFloat(b, c.LatencyMS/1000)
	return append(b, '}')
}

// appendObject appends raw when it is a JSON object, else {}.
func appendObject(b []byte, raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '{' {
		return append(b, "{}"...)
	}
	return append(b, raw...)
}

// appendToolMessage appends the tool message holding tc's result.
func appendToolMessage(b []byte, tc *toolCall) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, "result-"+tc.id)
	b = append(b, `,"content":`...)
	b = appendString(b, string(tc.result))
	b = append(b, `,"role":"tool","tool_call_id":`...)
	b = appendString(b, tc.id)
	b = append(b, `,"function":`...)
	b = appendString(b, tc.function)
	if tc.failure != "" {
		b = append(b, `,"error":{"type":"unknown","message":`...)
		b = appendString(b, tc.failure)
		b = append(b, '}')
	}
	return append(b, '}')
}

// write appends the sample of d to s.b, and its summary to s.sum when
// s.summaries; s.usage is then the decision's tokens.
func (s *sampler) write(d *decision) error {
	clear(s.att)
	s.attOrder = s.attOrder[:0]
	row := d.row
	first, last := &d.calls[0], &d.calls[len(d.calls)-1]
	scen := s.scen[row.Scenario]
	act := first.Task == "act"
	turns := make([][]*message, len(d.calls))
	for i := range d.calls {
		ms, err := s.leaves(d.refs[i])
		if err != nil {
			return fmt.Errorf("decision %s: turn %d: %w", row.Key(), i, err)
		}
		turns[i] = ms
	}
	calls := make([]*toolCall, len(d.calls))
	for i := range d.calls {
		calls[i] = d.callAfter(i, scen)
	}
	s.encodeAnswers(d, calls)

	b := append(s.b, `{"id":`...)
	b = appendString(b, row.Scenario)
	b = append(b, `,"epoch":`...)
	b = strconv.AppendInt(b, row.Replicate, 10)
	head := len(b)
	// The input is the first request's messages after its system prompt
	// (which messages hold): the failure the model saw, which Inspect's
	// viewer lists samples by. It is inline, as the viewer lists samples
	// without resolving attachments.
	input := inputOf(turns[0])
	b = append(b, `,"input":`...)
	b = appendList(b, input, func(m *message) []byte { return m.inline })
	inputEnd := len(b)
	b = append(b, `,"target":`...)
	b = appendString(b, string(first.Preferred))
	target := span{inputEnd, len(b)}

	// messages: the conversation as the model saw it, turn by turn, each
	// answer, and (action task) each tool call with its result.
	b = append(b, `,"messages":[`...)
	n := 0
	sep := func() {
		if n > 0 {
			b = append(b, ',')
		}
		n++
	}
	shown := 0
	for t := range d.calls {
		for _, m := range turns[t][min(shown, len(turns[t])):] {
			sep()
			s.use(m)
			b = append(b, m.enc...)
		}
		shown = len(turns[t]) + 1 // and the answer
		c := &d.calls[t]
		if c.Error != "" && c.Response == "" {
			continue
		}
		sep()
		_, message := s.answer(t)
		b = append(b, message...)
		if tc := calls[t]; act && tc != nil && (tc.result != nil || tc.refused != "") {
			sep()
			b = appendToolMessage(b, tc)
		}
	}
	b = append(b, ']')

	// output: the last answer, with the decision's tokens.
	u := &s.usage
	*u = usage{}
	var total float64
	for i := range d.calls {
		u.add(d.calls[i].PromptTokens, d.calls[i].OutputTokens)
		total += d.calls[i].LatencyMS / 1000
	}
	b = append(b, `,"output":`...)
	b = s.appendOutput(b, last, len(d.calls)-1, u)

	scoresMeta := span{len(b), 0}
	if row.Status == results.StatusOK {
		b = s.appendScores(b, d, calls)
	} else {
		// Note: Inspect's viewer reads a sample's (and a summary's) scores
		// as null or an object; a missing member stops it opening the log.
		b = append(b, `,"scores":null`...)
	}
	b = s.appendMetadata(b, d, scen)
	scoresMeta.end = len(b)
	b = append(b, `,"store":{`...)
	if last.Env != nil && len(last.Env.State) > 0 {
		b = append(b, `"final_state":`...)
		b = append(b, last.Env.State...)
	}
	b = append(b, '}')
	b = s.appendEvents(b, d, turns, calls)
	usageTimes := span{len(b), 0}
	b = append(b, `,"model_usage":{`...)
	b = appendString(b, s.model)
	b = append(b, ':')
	b = appendUsage(b, u)
	// role_usage (per model role, {} here) is left to its default, {},
	// as each score's history ([]) is (appendScores).
	b = append(b, `},"total_time":`...)
	b = appendFloat(b, total)
	b = append(b, `,"working_time":`...)
	b = appendFloat(b, total)
	usageTimes.end = len(b)
	msg := ""
	if row.Status != results.StatusOK {
		if msg = row.Error; msg == "" {
			msg = last.Error
		}
		b = append(b, `,"error":`...)
		b = appendJSON(b, evalError{Message: msg})
	}
	b = append(b, `,"attachments":{`...)
	for i, k := range s.attOrder {
		b = appendKey(b, k, i == 0)
		b = append(b, s.att[k]...)
	}
	b = append(b, "}}"...)
	s.b = b
	if s.summaries {
		// The sample's summary (Inspect's EvalSampleSummary), from the
		// same bytes.
		sum := append(s.sum, '{')
		sum = append(sum, b[1:head]...)
		sum = append(sum, `,"input":`...)
		sum = appendList(sum, input, func(m *message) []byte { return m.thin })
		sum = append(sum, b[target.start:target.end]...)
		sum = append(sum, b[scoresMeta.start:scoresMeta.end]...)
		sum = append(sum, b[usageTimes.start:usageTimes.end]...)
		if msg != "" {
			sum = append(sum, `,"error":`...)
			sum = appendString(sum, msg)
		}
		sum = append(sum, `,"completed":true,"message_count":`...)
		sum = strconv.AppendInt(sum, int64(n), 10)
		s.sum = append(sum, '}')
	}
	return nil
}

// span is a range of bytes of a sample.
type span struct{ start, end int }

// appendScores appends the decision's scores: every outcome column it
// has a value of (simulator.Columns), and extra, the calls the harness
// made beyond the first; each with the parsed final answer and its
// explanation (the rule and the values it read). calls are the tool
// calls after each turn.
func (s *sampler) appendScores(b []byte, d *decision, calls []*toolCall) []byte {
	row := d.row
	var last simulator.Answer
	ans := s.ans[:0]
	if row.FinalLabel == "" {
		last = simulator.ParseAnswer(d.calls[len(d.calls)-1].Response)
		ans = appendString(ans, "invalid: "+last.Reason)
	} else {
		ans = appendString(ans, row.FinalLabel)
	}
	s.ans = ans
	x := &s.x
	x.reset(d, calls, &last)
	b = append(b, `,"scores":{`...)
	score := func(c scoreColumn, v int64, first bool) {
		if !first {
			b = append(b, ',')
		}
		b = append(b, c.key...)
		b = append(b, `{"value":`...)
		b = strconv.AppendInt(b, v, 10)
		b = append(b, `,"answer":`...)
		b = append(b, ans...)
		b = append(b, `,"explanation":`...)
		b = x.appendExplanation(b, c)
		// history, the score's edits, is left to its default ([]): 13
		// bytes a score, 104 a sample and its summary each, which neither
		// Inspect (Score.history has a default) nor its viewer (which
		// never reads it) needs written.
		b = append(b, '}')
	}
	first := true
	for _, c := range scoreColumns {
		if c.col < 0 {
			score(c, row.Replays, first)
		} else if v, ok := row.Outcome.Get(c.col); ok {
			score(c, v, first)
		} else {
			continue
		}
		first = false
	}
	return append(b, '}')
}

// A scoreColumn is one score of a sample: an outcome column, or extra.
type scoreColumn struct {
	name string
	col  simulator.Col // -1 for extra
	key  []byte        // "name":
}

// ExtraScore is the name of the score of the calls the harness made
// beyond the first (replays under stored replay, executed policies under
// live replay): the counts' Extra, per decision.
const ExtraScore = "extra"

// scoreColumns are the scores a sample has, in order: the Flag columns,
// extra, then the lab columns (only for decisions with lab outcomes).
var scoreColumns = newScoreColumns()

// newScoreColumns returns scoreColumns.
func newScoreColumns() []scoreColumn {
	var out []scoreColumn
	for i := range simulator.Columns {
		if !simulator.Columns[i].Kind.Lab() {
			out = append(out, scoreColumn{name: simulator.Columns[i].Name, col: simulator.Col(i)})
		}
	}
	out = append(out, scoreColumn{name: ExtraScore, col: -1})
	for i := range simulator.Columns {
		if simulator.Columns[i].Kind.Lab() {
			out = append(out, scoreColumn{name: simulator.Columns[i].Name, col: simulator.Col(i)})
		}
	}
	for i := range out {
		out[i].key = appendKey(nil, out[i].name, true)
	}
	return out
}

// appendMetadata appends the sample's metadata: the scenario's fields,
// the decision's seed and trajectory, and the environment's outcome.
func (s *sampler) appendMetadata(b []byte, d *decision, scen *study.Scenario) []byte {
	row, first, last := d.row, &d.calls[0], &d.calls[len(d.calls)-1]
	b = append(b, `,"metadata":{"server":`...)
	b = appendString(b, row.Server)
	b = append(b, `,"scenario":`...)
	b = appendString(b, row.Scenario)
	b = append(b, `,"replicate":`...)
	b = strconv.AppendInt(b, row.Replicate, 10)
	if scen != nil {
		b = append(b, `,"cause":`...)
		b = appendString(b, string(scen.Cause))
		b = append(b, `,"surface":`...)
		b = appendString(b, string(scen.Surface))
	}
	b = append(b, `,"preferred":`...)
	b = appendString(b, string(first.Preferred))
	if len(first.PreferredSet) > 0 {
		b = append(b, `,"preferred_policies":`...)
		b = appendPolicyList(b, first.PreferredSet)
	}
	b = append(b, `,"non_harm":`...)
	b = appendPolicyList(b, first.NonHarm)
	b = append(b, `,"seed":`...)
	b = strconv.AppendInt(b, row.Seed, 10)
	if s.digest != "" {
		b = append(b, `,"model_digest":`...)
		b = appendString(b, s.digest)
	}
	task, replay := "label", "stored"
	if first.Task != "" {
		task = first.Task
	}
	if first.Replay != "" {
		replay = first.Replay
	}
	b = append(b, `,"task":`...)
	b = appendString(b, task)
	b = append(b, `,"replay":`...)
	b = appendString(b, replay)
	b = append(b, `,"status":`...)
	b = appendString(b, row.Status)
	b = append(b, `,"final_label":`...)
	b = appendString(b, row.FinalLabel)
	b = append(b, `,"final_status":`...)
	b = appendString(b, row.FinalStatus)
	b = append(b, `,"turns":`...)
	b = strconv.AppendInt(b, row.Turns, 10)
	b = append(b, `,"replays":`...)
	b = strconv.AppendInt(b, row.Replays, 10)
	if e := last.Env; e != nil {
		b = append(b, `,"env":`...)
		b = appendJSON(b, struct {
			Recovered bool     `json:"recovered"`
			Harm      bool     `json:"harm"`
			Harms     any      `json:"harms,omitempty"`
			Missing   []string `json:"missing,omitempty"`
			Calls     int      `json:"calls"`
			ClockMS   int64    `json:"clock_ms"`
			Protocol  string   `json:"protocol,omitempty"`
		}{e.Recovered, e.Harm, e.Harms, e.Missing, e.Calls, e.ClockMS, e.Protocol})
	}
	return append(b, '}')
}

// appendPolicyList appends ps as encoding/json encodes it: directly
// when every policy is a plain label (lower-case letters, digits and
// _, as every valid one is), else through encoding/json.
func appendPolicyList(b []byte, ps []study.Policy) []byte {
	if ps == nil {
		return append(b, "null"...)
	}
	for _, p := range ps {
		for i := 0; i < len(p); i++ {
			if c := p[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
				return appendJSON(b, ps)
			}
		}
	}
	b = append(b, '[')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, p...)
		b = append(b, '"')
	}
	return append(b, ']')
}

// appendEvents appends the sample's events: per turn, the transport
// faults met (info events, apart from the model call), the model call,
// and the tool call that followed it; an error event for a decision that
// failed.
func (s *sampler) appendEvents(b []byte, d *decision, turns [][]*message, calls []*toolCall) []byte {
	b = append(b, `,"events":[`...)
	var working float64
	n := 0
	open := func(kind string) {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"timestamp":`...)
		b = appendString(b, s.started)
		b = append(b, `,"working_start":`...)
		b = appendFloat(b, working)
		b = append(b, `,"event":`...)
		b = appendString(b, kind)
	}
	for t := range d.calls {
		c := &d.calls[t]
		for _, ev := range c.Events {
			open("info")
			b = append(b, `,"source":"transport","data":`...)
			b = appendJSON(b, ev)
			b = append(b, '}')
		}
		if c.EnvError {
			open("error")
			b = append(b, `,"error":`...)
			b = appendJSON(b, evalError{Message: "environment: " + c.Error})
			b = append(b, '}')
			continue
		}
		open("model")
		b = append(b, `,"model":`...)
		b = appendString(b, s.model)
		b = append(b, `,"input":`...)
		b = s.appendMessages(b, turns[t])
		b = append(b, `,"tools":[`...)
		for i, tool := range c.Request.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, tool.Name)
			b = append(b, `,"description":`...)
			b = appendString(b, tool.Description)
			b = append(b, `,"parameters":`...)
			b = appendObject(b, tool.Parameters)
			b = append(b, '}')
		}
		b = append(b, `],"tool_choice":`...)
		if len(c.Request.Tools) > 0 {
			b = append(b, `"auto"`...)
		} else {
			b = append(b, `"none"`...)
		}
		b = append(b, `,"config":{"temperature":`...)
		b = appendFloat(b, c.Request.Temperature)
		b = append(b, `,"seed":`...)
		b = strconv.AppendInt(b, c.Request.Seed, 10)
		b = append(b, `},"output":`...)
		var u usage
		u.add(c.PromptTokens, c.OutputTokens)
		b = s.appendOutput(b, c, t, &u)
		if len(c.Events) > 0 {
			b = append(b, `,"retries":`...)
			b = strconv.AppendInt(b, int64(len(c.Events)), 10)
		}
		if c.Error != "" {
			b = append(b, `,"error":`...)
			b = appendString(b, c.Error)
		}
		if len(c.Body) > 0 {
			b = append(b, `,"call":{"request":`...)
			b = appendJSON(b, map[string]any{"messages_ref": d.refs[t], "temperature": c.Request.Temperature, "seed": c.Request.Seed, "options": c.Request.Options})
			b = append(b, `,"response":`...)
			if json.Valid(c.Body) && bytes.HasPrefix(bytes.TrimSpace(c.Body), []byte("{")) {
				b = append(b, bytes.TrimSpace(c.Body)...)
			} else {
				b = append(b, `{"body":`...)
				b = appendString(b, string(c.Body))
				b = append(b, '}')
			}
			b = append(b, `,"time":`...)
			b = appendFloat(b, c.LatencyMS/1000)
			b = append(b, '}')
		}
		b = append(b, `,"completed":`...)
		b = appendString(b, s.started)
		b = append(b, `,"working_time":`...)
		b = appendFloat(b, c.LatencyMS/1000)
		b = append(b, '}')
		working += c.LatencyMS / 1000
		if tc := calls[t]; tc != nil {
			open("tool")
			b = append(b, `,"type":"function","id":`...)
			b = appendString(b, tc.id)
			b = append(b, `,"function":`...)
			b = appendString(b, tc.function)
			b = append(b, `,"arguments":`...)
			b = appendObject(b, tc.arguments)
			b = append(b, `,"result":`...)
			b = appendString(b, string(tc.result))
			if tc.failure != "" {
				b = append(b, `,"error":{"type":"unknown","message":`...)
				b = appendString(b, tc.failure)
				b = append(b, `},"failed":true`...)
			}
			// events: deprecated in Inspect (a tool call's events are in
			// the sample's), still required by its viewer's types.
			b = append(b, `,"events":[]}`...)
		}
	}
	return append(b, ']')
}

// appendUsage appends u as Inspect's ModelUsage.
func appendUsage(b []byte, u *usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, u.InputTokens, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, u.OutputTokens, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, u.TotalTokens, 10)
	return append(b, '}')
}

// ScoreNames returns the names of a sample's scores, in order.
func ScoreNames() []string {
	out := make([]string, len(scoreColumns))
	for i, c := range scoreColumns {
		out[i] = c.name
	}
	return out
}
