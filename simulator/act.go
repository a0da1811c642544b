package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/study"
)

// Actor is an Environment that can send the model's own call (manifest
// task: act): it lists the tools its server offers, names the failing
// call Start made, and sends any call the harness passes it. Under
// task: act the simulator needs the decision's environment to be one.
type Actor interface {
	Environment
	// Tools returns the tools the server listed, each the JSON object
	// the server sent in tools/list (name, description, inputSchema,
	// annotations, …), in its order.
	Tools(ctx context.Context) ([]json.RawMessage, error)
	// First returns the failing call Start made (valid after Start).
	First() ToolCall
	// Send waits waitMS milliseconds on the environment's clock (0: no
	// wait), then sends call c as a tools/call and returns its
	// client-normalized observation and whether the decision goes on
	// (false once the call succeeded). An error is a failure of the
	// environment, not of the call.
	Send(ctx context.Context, t int, c ToolCall, waitMS int64) (obs json.RawMessage, more bool, err error)
}

// Asker is an Actor whose scenario says what the user asked; task Act
// shows it to the model (the prompt data's Task, conditions.Data).
type Asker interface {
	// Asked returns what the user asked.
	Asked() string
}

// ToolCall is one tools/call: a tool name and its arguments (a JSON
// object).
type ToolCall struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// JSON returns c as one JSON object {"tool": …, "arguments": …}.
func (c ToolCall) JSON() json.RawMessage {
	args := c.Arguments
	if len(bytes.TrimSpace(args)) == 0 || !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	b, err := json.Marshal(ToolCall{Tool: c.Tool, Arguments: args})
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// maxArgumentBytes caps the arguments of an action: an answer whose
// arguments are larger is an invalid action (ReasonActionTooLarge), never
// sent.
const maxArgumentBytes = 64 << 10

// Reasons an action is invalid (Answer.ActionReason, Action.Invalid).
// The label of the answer is judged apart: an answer may name a valid
// policy and still give an invalid action.
const (
	// ReasonActionMissing: the policy needs a call (revise_arguments,
	// select_tool, authenticate) and the answer gives none.
	ReasonActionMissing = "missing_action"
	// ReasonActionMalformed: tool is not a non-empty string, or arguments
	// is present and not a JSON object.
	ReasonActionMalformed = "malformed_action"
	// ReasonActionTooLarge: the arguments exceed 64 KiB.
	ReasonActionTooLarge = "action_too_large"
	// ReasonActionTwice: more than one call (two native tool calls, or a
	// native call and a call in the text).
	ReasonActionTwice = "two_actions"
	// ReasonUnknownTool: the client's check found no such tool in the
	// server's list.
	ReasonUnknownTool = "unknown_tool"
	// ReasonSchemaViolation: the client's check found the arguments
	// violate the tool's input schema.
	ReasonSchemaViolation = "schema_violation"
	// ReasonInvalidDelay: a retry_later whose delay_ms is not an integer
	// from 0 to 86 400 000 (24 h).
	ReasonInvalidDelay = "invalid_delay"
	// ReasonNotReadOnly: the server is one the harness did not start, and
	// the tool is not read-only by its annotations and the capture rules
	// (Restricter).
	ReasonNotReadOnly = "not_read_only"
)

// Restricter is an Actor that allows only some of its tools: a server
// the harness did not start itself, on which only read-only tools may be
// called. The client's check refuses a call to any other tool
// (ReasonNotReadOnly), before sending it.
type Restricter interface {
	// Allowed reports whether the tool (the object the server listed) may
	// be called, and why.
	Allowed(tool json.RawMessage) (ok bool, basis string)
}

// needsCall reports whether policy p is carried out by a call the model
// writes under task: act. retry_now and retry_later repeat the last call
// sent, and stop_or_escalate sends nothing.
func needsCall(p study.Policy) bool {
	return p == study.ReviseArguments || p == study.SelectTool || p == study.Authenticate
}

// ParseAct reads an answer of task act: the label as ParseAnswer reads it
// from text, and the call from the same JSON object's "tool" and
// "arguments" members, or else from the native tool calls the server
// returned (toolCalls, as models.Reply.ToolCalls holds them). The action
// is judged only when the label is valid and its policy needs a call;
// then a missing, malformed, oversized or doubled call sets ActionReason.
// The label's validity never depends on the action.
func ParseAct(text string, toolCalls json.RawMessage) Answer {
	a, obj := parse(text)
	if !a.Valid || !needsCall(a.Policy) {
		return a
	}
	var calls []ToolCall
	if _, has := obj["tool"]; has {
		c, reason := textCall(obj)
		if reason != "" {
			a.ActionReason = reason
			return a
		}
		calls = append(calls, c)
	} else if _, has := obj["arguments"]; has {
		a.ActionReason = ReasonActionMalformed
		return a
	}
	native, err := models.ParseToolCalls(toolCalls)
	if err != nil {
		a.ActionReason = ReasonActionMalformed
		return a
	}
	for _, n := range native {
		calls = append(calls, ToolCall{Tool: n.Name, Arguments: n.Arguments})
	}
	switch {
	case len(calls) == 0:
		a.ActionReason = ReasonActionMissing
	case len(calls) > 1:
		a.ActionReason = ReasonActionTwice
	case len(calls[0].Arguments) > maxArgumentBytes:
		a.ActionReason = ReasonActionTooLarge
	default:
		a.Action = &calls[0]
		a.ActionChannel = ChannelText
		if len(native) > 0 {
			a.ActionChannel = ChannelNative
		}
	}
	return a
}

// textCall reads the call of an answer object's tool and arguments
// members; an absent or null arguments is an empty object.
func textCall(obj map[string]any) (ToolCall, string) {
	name, ok := obj["tool"].(string)
	if !ok || strings.TrimSpace(name) == "" {
		return ToolCall{}, ReasonActionMalformed
	}
	args, ok := obj["arguments"]
	if !ok || args == nil {
		return ToolCall{Tool: name, Arguments: json.RawMessage("{}")}, ""
	}
	m, ok := args.(map[string]any)
	if !ok {
		return ToolCall{}, ReasonActionMalformed
	}
	b, err := json.Marshal(m)
	if err != nil {
		return ToolCall{}, ReasonActionMalformed
	}
	if len(b) > maxArgumentBytes {
		return ToolCall{}, ReasonActionTooLarge
	}
	return ToolCall{Tool: name, Arguments: b}, ""
}

// Toolbox is the client's view of a server's tools: their input schemas,
// resolved once, to check a call before it is sent.
type Toolbox struct {
	raw     []json.RawMessage
	names   []string
	schemas map[string]*jsonschema.Resolved // nil value: the tool has no usable schema (checked by name only)
	refused map[string]string               // tools a Restricter forbids, with why
}

// Restrict makes the toolbox refuse the tools r does not allow.
func (tb *Toolbox) Restrict(r Restricter) {
	tb.refused = map[string]string{}
	for i, raw := range tb.raw {
		if ok, basis := r.Allowed(raw); !ok {
			tb.refused[tb.names[i]] = basis
		}
	}
}

// NewToolbox reads the tools a server listed (Actor.Tools). A tool
// without a name is an error; a tool whose input schema does not resolve
// is checked by name only (the server's schema is its own business, and
// the call then goes to the server to judge).
func NewToolbox(tools []json.RawMessage) (*Toolbox, error) {
	tb := &Toolbox{raw: tools, schemas: map[string]*jsonschema.Resolved{}}
	for i, raw := range tools {
		var t toolDef
		if err := json.Unmarshal(raw, &t); err != nil || t.Name == "" {
			return nil, fmt.Errorf("tools[%d]: not a tool with a name: %.200s", i, raw)
		}
		if _, dup := tb.schemas[t.Name]; dup {
			return nil, fmt.Errorf("tools[%d]: tool %q listed twice", i, t.Name)
		}
		tb.names = append(tb.names, t.Name)
		tb.schemas[t.Name] = resolveSchema(t.InputSchema)
	}
	return tb, nil
}

// toolDef is what the toolbox reads of a tool the server listed.
type toolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// resolveSchema resolves an input schema, or returns nil when it does not
// (a schema the library cannot use, or one that makes it panic).
func resolveSchema(raw json.RawMessage) (rs *jsonschema.Resolved) {
	defer func() {
		if recover() != nil {
			rs = nil
		}
	}()
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var s jsonschema.Schema
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil
	}
	return r
}

// Native returns the tools as native tool definitions (name,
// description, input schema as parameters), for tool_calls: native.
func (tb *Toolbox) Native() []models.Tool {
	out := make([]models.Tool, 0, len(tb.raw))
	for _, raw := range tb.raw {
		var t toolDef
		if json.Unmarshal(raw, &t) == nil {
			out = append(out, models.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
		}
	}
	return out
}

// Check is the client's check of call c before it is sent: the tool must
// be listed and the arguments must satisfy its input schema. It returns
// "" when the call may be sent, else ReasonUnknownTool or
// ReasonSchemaViolation and what the validator said.
func (tb *Toolbox) Check(c ToolCall) (reason, detail string) {
	rs, ok := tb.schemas[c.Tool]
	if !ok {
		return ReasonUnknownTool, fmt.Sprintf("no tool %q (listed: %s)", clip(c.Tool, 64), strings.Join(tb.names, ", "))
	}
	if basis, no := tb.refused[c.Tool]; no {
		return ReasonNotReadOnly, fmt.Sprintf("%s may not be called on a server the harness did not start: %s", c.Tool, basis)
	}
	if rs == nil {
		return "", ""
	}
	var v any
	if err := json.Unmarshal(c.Arguments, &v); err != nil {
		return ReasonSchemaViolation, "arguments: " + err.Error()
	}
	if err := validate(rs, v); err != nil {
		return ReasonSchemaViolation, clip(err.Error(), 300)
	}
	return "", ""
}

// validate runs the validator, turning a panic into an error.
func validate(rs *jsonschema.Resolved, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("the schema validator failed on these arguments")
		}
	}()
	return rs.Validate(v)
}

// clip cuts s to its first n bytes, marked with "…".
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Action is what the harness did with one answer under task: act: the
// call it made, or refused to make. In calls.jsonl it is the "action"
// member of the turn's line.
type Action struct {
	ToolCall
	// Channel is where the call came from: "text" (the answer's JSON),
	// "native" (a native tool call) or "replay" (retry_now or
	// retry_later: the harness repeated the last call sent).
	Channel string `json:"channel"`
	// WaitMS is the wait before the call on the environment's clock, in
	// milliseconds (retry_later only; DefaultWait, -1: the environment's
	// own wait, as no delay_ms was given).
	WaitMS int64 `json:"wait_ms,omitempty"`
	// Sent says the call went to the server.
	Sent bool `json:"sent"`
	// Invalid is the reason the call was refused and not sent (one of the
	// action reasons), "" when it was sent.
	Invalid string `json:"invalid,omitempty"`
	// Detail is what the client's check said, for people.
	Detail string `json:"detail,omitempty"`
}

// Action channels.
const (
	ChannelText   = "text"
	ChannelNative = "native"
	ChannelReplay = "replay"
)

// DefaultWait, as Actor.Send's waitMS, asks for the environment's own
// wait before a retry_later: the retry-after the last failure announced,
// else DefaultRetryDelayMS.
const DefaultWait = -1

// acting is the state of a task-act decision.
type acting struct {
	actor  Actor
	tools  *Toolbox
	native []models.Tool
	last   ToolCall // the last call sent (the failing one at first)
}

// act is the decision loop of task Act, always under live replay: the
// model sees the server's tools and the failing call, names a policy and
// writes the call it needs; the harness checks it (action) and sends it
// to the environment, until the model stops, writes a call the harness
// refuses, the cap is reached or the environment settles the decision.
func (pl *play) act(p *conditions.Prompt) {
	if pl.cfg.Env == nil {
		pl.d.Err = fmt.Errorf("scenario %s: task act needs live replay (an environment)", pl.s.ID)
		return
	}
	l, shown, err := startLive(pl.ctx, &pl.cfg, pl.s, pl.d.Key)
	if err != nil {
		pl.failedBeforeTurn0(err, nil)
		return
	}
	defer l.close()
	c := pl.d.Key.Condition
	ac, msgs, err := startAct(pl.ctx, l.env, p, pl.s, c, pl.cfg.NativeTools)
	if err != nil {
		if _, failed := errors.AsType[*EnvError](err); failed {
			pl.failedBeforeTurn0(err, nil)
		} else {
			pl.d.Err = err
		}
		return
	}
	pl.msgs, pl.shown, pl.tools = msgs, shown, ac.native
	invalidAction := false
	completed := pl.turns(parseAct, func(t int, turn *Turn) (models.Message, json.RawMessage, bool, error) {
		if !ContinuesLive(turn.Answer, t, l.cap) {
			return models.Message{}, nil, false, nil
		}
		act := ac.action(turn.Answer)
		turn.Action = act
		if act.Invalid != "" {
			invalidAction = true
			return models.Message{}, nil, false, nil
		}
		obs, more, err := ac.actor.Send(pl.ctx, t, act.ToolCall, act.WaitMS)
		act.Sent = err == nil
		ac.last = act.ToolCall
		if more, err = l.ran(t, turn, obs, more, err); !more || err != nil {
			return models.Message{}, nil, false, err
		}
		next, err := p.Acted(pl.s, c, t+1, turn.Answer.Policy, act.ToolCall.JSON(), obs)
		return next, obs, true, err
	})
	if completed {
		sc := pl.scoring()
		sc.InvalidAction = invalidAction
		pl.end(l.outcome(sc))
	}
}

// parseAct reads an answer of task Act (ParseAct).
func parseAct(r models.Reply) Answer { return ParseAct(r.Text, r.ToolCalls) }

// startAct lists the started environment's tools and renders turn 0 of
// task Act.
func startAct(ctx context.Context, env Environment, p promptActor, s *study.Scenario, c study.Condition, native bool) (*acting, []models.Message, error) {
	actor, ok := env.(Actor)
	if !ok {
		return nil, nil, fmt.Errorf("environment of scenario %s: task act needs an environment that sends the model's calls (%T does not)", s.ID, env)
	}
	raw, err := actor.Tools(ctx)
	var tb *Toolbox
	if err == nil {
		tb, err = NewToolbox(raw)
	}
	if err != nil {
		return nil, nil, &EnvError{Err: fmt.Errorf("environment of scenario %s: tools: %w", s.ID, err)}
	}
	if r, ok := env.(Restricter); ok {
		tb.Restrict(r)
	}
	ac := &acting{actor: actor, tools: tb, last: actor.First()}
	if native {
		ac.native = tb.Native()
	}
	asked := ""
	if a, ok := env.(Asker); ok {
		asked = a.Asked()
	}
	msgs, err := p.InitialAct(s, c, raw, ac.last.JSON(), asked)
	if err != nil {
		return nil, nil, err
	}
	return ac, msgs, nil
}

// promptActor is the part of conditions.Prompt task act renders with.
type promptActor interface {
	InitialAct(s *study.Scenario, c study.Condition, tools []json.RawMessage, call json.RawMessage, asked string) ([]models.Message, error)
}

// action is what the harness does with valid answer a (a policy other
// than stop_or_escalate): a retry repeats the last call sent (retry_later
// after a.DelayMS, else the environment's wait); any other policy sends
// the answer's call once the client's check passes, and an answer without
// a usable call is refused with its reason.
func (ac *acting) action(a Answer) *Action {
	switch a.Policy {
	case study.RetryNow:
		return &Action{ToolCall: ac.last, Channel: ChannelReplay}
	case study.RetryLater:
		if a.DelayInvalid {
			return &Action{ToolCall: ac.last, Channel: ChannelReplay, Invalid: ReasonInvalidDelay,
				Detail: fmt.Sprintf("delay_ms must be an integer from 0 to %d (24 h)", maxDelayMS)}
		}
		wait := int64(DefaultWait)
		if a.DelayMS > 0 {
			wait = a.DelayMS
		}
		return &Action{ToolCall: ac.last, Channel: ChannelReplay, WaitMS: wait}
	}
	if a.Action == nil {
		reason := a.ActionReason
		if reason == "" {
			reason = ReasonActionMissing
		}
		return &Action{Channel: a.ActionChannel, Invalid: reason}
	}
	act := &Action{ToolCall: *a.Action, Channel: a.ActionChannel}
	act.Invalid, act.Detail = ac.tools.Check(*a.Action)
	return act
}
