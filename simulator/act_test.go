package simulator_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/internal/testserver/fakeenv"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestParseAct: the action of an act answer, with each reason it can be
// refused for; the label is judged as ParseAnswer judges it, apart.
func TestParseAct(t *testing.T) {
	big := `{"operation_status":"failed","recovery_policy":"revise_arguments","tool":"write","arguments":{"s":"` + strings.Repeat("x", simulator.MaxArgumentBytes) + `"}}`
	for _, tc := range []struct {
		name, text, calls string
		valid             bool
		reason            string // ActionReason
		tool, args        string // the action, when one
		channel           string
	}{
		{"text call", `{"operation_status":"failed","recovery_policy":"revise_arguments","tool":"write","arguments":{"n":2}}`, "", true, "", "write", `{"n":2}`, simulator.ChannelText},
		{"fenced, no arguments", "```json\n" + `{"operation_status":"failed","recovery_policy":"select_tool","tool":"read"}` + "\n```", "", true, "", "read", `{}`, simulator.ChannelText},
		{"missing", `{"operation_status":"failed","recovery_policy":"revise_arguments"}`, "", true, simulator.ReasonActionMissing, "", "", ""},
		{"arguments not an object", `{"operation_status":"failed","recovery_policy":"revise_arguments","tool":"write","arguments":[1]}`, "", true, simulator.ReasonActionMalformed, "", "", ""},
		{"arguments a string", `{"operation_status":"failed","recovery_policy":"revise_arguments","tool":"write","arguments":"{\"n\":2}"}`, "", true, simulator.ReasonActionMalformed, "", "", ""},
		{"tool not a string", `{"operation_status":"failed","recovery_policy":"select_tool","tool":7,"arguments":{}}`, "", true, simulator.ReasonActionMalformed, "", "", ""},
		{"empty tool", `{"operation_status":"failed","recovery_policy":"select_tool","tool":" ","arguments":{}}`, "", true, simulator.ReasonActionMalformed, "", "", ""},
		{"arguments without tool", `{"operation_status":"failed","recovery_policy":"select_tool","arguments":{}}`, "", true, simulator.ReasonActionMalformed, "", "", ""},
		{"too large", big, "", true, simulator.ReasonActionTooLarge, "", "", ""},
		{"native call", `{"operation_status":"failed","recovery_policy":"authenticate"}`, `[{"function":{"name":"login","arguments":{"scope":"a"}}}]`, true, "", "login", `{"scope":"a"}`, simulator.ChannelNative},
		{"native, OpenAI string arguments", `{"operation_status":"failed","recovery_policy":"select_tool"}`, `[{"id":"c1","function":{"name":"read","arguments":"{}"}}]`, true, "", "read", `{}`, simulator.ChannelNative},
		{"native and text", `{"operation_status":"failed","recovery_policy":"select_tool","tool":"read"}`, `[{"function":{"name":"read","arguments":{}}}]`, true, simulator.ReasonActionTwice, "", "", ""},
		{"two native", `{"operation_status":"failed","recovery_policy":"select_tool"}`, `[{"function":{"name":"read","arguments":{}}},{"function":{"name":"write","arguments":{}}}]`, true, simulator.ReasonActionTwice, "", "", ""},
		{"native arguments not an object", `{"operation_status":"failed","recovery_policy":"select_tool"}`, `[{"function":{"name":"read","arguments":"[1]"}}]`, true, simulator.ReasonActionMalformed, "", "", ""},
		{"retry needs no call", `{"operation_status":"failed","recovery_policy":"retry_now","tool":"x","arguments":7}`, "", true, "", "", "", ""},
		{"stop needs no call", `{"operation_status":"failed","recovery_policy":"stop_or_escalate"}`, "", true, "", "", "", ""},
		{"invalid label, action not judged", `{"operation_status":"failed","recovery_policy":"fix_it","tool":"write"}`, "", false, "", "", "", ""},
		{"native call without a text answer", ``, `[{"function":{"name":"read","arguments":{}}}]`, false, "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := simulator.ParseAct(tc.text, json.RawMessage(tc.calls))
			if a.Valid != tc.valid || a.ActionReason != tc.reason || a.ActionChannel != tc.channel {
				t.Fatalf("got valid %v reason %q channel %q (%s), want %v %q %q", a.Valid, a.ActionReason, a.ActionChannel, a.Reason, tc.valid, tc.reason, tc.channel)
			}
			if (a.Action != nil) != (tc.tool != "") {
				t.Fatalf("action %+v, want tool %q", a.Action, tc.tool)
			}
			if a.Action != nil && (a.Action.Tool != tc.tool || !conditions.SameJSON(a.Action.Arguments, json.RawMessage(tc.args))) {
				t.Errorf("action %s %s, want %s %s", a.Action.Tool, a.Action.Arguments, tc.tool, tc.args)
			}
			if l := simulator.ParseAnswer(tc.text); l.Valid != a.Valid || l.Policy != a.Policy || l.Reason != a.Reason {
				t.Errorf("label %+v differs from ParseAnswer's %+v", a, l)
			}
		})
	}
}

// TestToolboxCheck: the client's check before sending.
func TestToolboxCheck(t *testing.T) {
	tb, err := simulator.NewToolbox([]json.RawMessage{
		json.RawMessage(`{"name":"write","inputSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}}`),
		json.RawMessage(`{"name":"odd","inputSchema":{"type":"object","properties":{"x":{"$ref":"http://example.com/elsewhere"}}}}`),
		json.RawMessage(`{"name":"bare"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tool, args, reason string
	}{
		{"valid arguments", "write", `{"n":2}`, ""},
		{"wrong type", "write", `{"n":"2"}`, simulator.ReasonSchemaViolation},
		{"below the minimum", "write", `{"n":0}`, simulator.ReasonSchemaViolation},
		{"required member missing", "write", `{}`, simulator.ReasonSchemaViolation},
		{"extra member", "write", `{"n":2,"m":1}`, simulator.ReasonSchemaViolation},
		{"unknown tool", "writ", `{"n":2}`, simulator.ReasonUnknownTool},
		{"unresolvable schema: name only", "odd", `{"x":1}`, ""}, // an unresolvable schema: checked by name only
		{"no schema", "bare", `{"anything":[1]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, detail := tb.Check(simulator.ToolCall{Tool: tc.tool, Arguments: json.RawMessage(tc.args)})
			if reason != tc.reason || (reason != "") != (detail != "") {
				t.Errorf("%s %s: %q (%s), want %q", tc.tool, tc.args, reason, detail, tc.reason)
			}
		})
	}
	tb.Restrict(onlyBare{})
	if r, d := tb.Check(simulator.ToolCall{Tool: "write", Arguments: json.RawMessage(`{"n":2}`)}); r != simulator.ReasonNotReadOnly || !strings.Contains(d, "not bare") {
		t.Errorf("a restricted tool: %q %q", r, d)
	}
	if r, _ := tb.Check(simulator.ToolCall{Tool: "bare", Arguments: json.RawMessage(`{}`)}); r != "" {
		t.Errorf("an allowed tool: %q", r)
	}
	for _, bad := range [][]json.RawMessage{{json.RawMessage(`{}`)}, {json.RawMessage(`[]`)}, {json.RawMessage(`{"name":"a"}`), json.RawMessage(`{"name":"a"}`)}} {
		if _, err := simulator.NewToolbox(bad); err == nil {
			t.Errorf("NewToolbox(%s) succeeded", bad)
		}
	}
}

// actScript answers turn t with its t-th reply (the last repeating), and
// records the requests it was sent.
type actScript struct {
	replies []models.Reply
	reqs    []models.Request
}

func (s *actScript) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	s.reqs = append(s.reqs, req)
	return s.replies[min(len(s.reqs)-1, len(s.replies)-1)], nil
}

func text(s ...string) []models.Reply {
	out := make([]models.Reply, len(s))
	for i := range s {
		out[i] = models.Reply{Text: s[i]}
	}
	return out
}

// actSetup loads S01 and the shipped act prompt.
func actSetup(t *testing.T) (*study.Scenario, []study.Scenario, *conditions.Prompt) {
	t.Helper()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := fs.ReadFile(manifests.Builtin, "prompts/act.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt("act", "act.tmpl", string(raw))
	if err != nil {
		t.Fatal(err)
	}
	return &m.Corpus.Scenarios[0], m.Corpus.Scenarios, p
}

// TestActTrajectories drives scripted answers of the action task through
// the fake environment: what was sent (exactly the recorded actions), what
// was refused, the outcome columns and the messages.
func TestActTrajectories(t *testing.T) {
	s, all, p := actSetup(t)
	const c = fakeenv.CallMS
	revise := func(args string) string {
		return `{"operation_status":"failed","recovery_policy":"revise_arguments","tool":"write","arguments":` + args + `}`
	}
	for _, tc := range []struct {
		name    string
		fails   int
		replies []models.Reply
		native  bool
		// want
		sent          []string // tool+arguments the server received
		channels      []string // of each turn's action ("" for none)
		invalid       string   // the refusal reason of the last action
		recovered     bool
		calls         int
		ms            int64
		invalidAction bool
	}{
		{"revised call recovers", 1, text(revise(`{"n":2}`)), false,
			[]string{`write{"n":2}`}, []string{"text"}, "", true, 2, 2 * c, false},
		{"schema violation is refused, not sent", 1, text(revise(`{"n":"two"}`)), false,
			nil, []string{"text"}, simulator.ReasonSchemaViolation, false, 1, c, true},
		{"unknown tool is refused", 1, text(`{"operation_status":"failed","recovery_policy":"select_tool","tool":"wrte","arguments":{"n":2}}`), false,
			nil, []string{"text"}, simulator.ReasonUnknownTool, false, 1, c, true},
		{"missing call is refused", 1, text(`{"operation_status":"failed","recovery_policy":"select_tool"}`), false,
			nil, []string{""}, simulator.ReasonActionMissing, false, 1, c, true},
		{"read, then retry_later repeats the last call after its delay", 2, text(
			`{"operation_status":"failed","recovery_policy":"select_tool","tool":"read","arguments":{}}`,
			`{"operation_status":"failed","recovery_policy":"retry_now"}`,
			`{"operation_status":"failed","recovery_policy":"retry_later","delay_ms":500}`), false,
			[]string{`read{}`, `read{}`, `read{}`}, []string{"text", "replay", "replay", ""}, "", false, 4, 4*c + 500, false},
		{"retry_now repeats the revised call", 3, text(revise(`{"n":3}`), `{"operation_status":"failed","recovery_policy":"retry_now"}`), false,
			[]string{`write{"n":3}`, `write{"n":3}`, `write{"n":3}`}, []string{"text", "replay", "replay"}, "", true, 4, 4 * c, false},
		{"native call", 1, []models.Reply{{Text: `{"operation_status":"failed","recovery_policy":"revise_arguments"}`, ToolCalls: json.RawMessage(`[{"function":{"name":"write","arguments":{"n":4}}}]`)}}, true,
			[]string{`write{"n":4}`}, []string{"native"}, "", true, 2, 2 * c, false},
		{"a delay of a thousand years is refused, not sent", 1, text(`{"operation_status":"failed","recovery_policy":"retry_later","delay_ms":31557600000000}`), false,
			nil, []string{"replay"}, simulator.ReasonInvalidDelay, false, 1, c, true},
		{"a negative delay is refused", 1, text(`{"operation_status":"failed","recovery_policy":"retry_later","delay_ms":-5}`), false,
			nil, []string{"replay"}, simulator.ReasonInvalidDelay, false, 1, c, true},
		{"a delay of a day is sent", 1, text(`{"operation_status":"failed","recovery_policy":"retry_later","delay_ms":86400000}`), false,
			[]string{`write{"n":1}`}, []string{"replay"}, "", true, 2, 2*c + 86400000, false},
		{"stop sends nothing", 1, text(`{"operation_status":"failed","recovery_policy":"stop_or_escalate"}`), false,
			nil, []string{""}, "", false, 1, c, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakeenv.New(all, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: tc.fails})
			m := &actScript{replies: tc.replies}
			key := simulator.Key{Model: "m", Prompt: "act", Condition: study.Normalized, Scenario: s.ID, Replicate: 1}
			d := simulator.Run(context.Background(), m, p, s, key, simulator.Config{StudySeed: 1, ReplayCap: 3, Env: f, Task: simulator.Act, NativeTools: tc.native})
			if d.Err != nil {
				t.Fatal(d.Err)
			}
			var sent []string
			for _, c := range f.Last().Sent() {
				sent = append(sent, c.Tool+string(c.Arguments))
			}
			if strings.Join(sent, " ") != strings.Join(tc.sent, " ") {
				t.Errorf("sent %v, want %v", sent, tc.sent)
			}
			// Every call sent is exactly a recorded action, in order.
			var recorded []string
			var channels []string
			for _, tu := range d.Turns {
				ch := ""
				if tu.Action != nil {
					ch = tu.Action.Channel
					if tu.Action.Sent {
						recorded = append(recorded, tu.Action.Tool+string(tu.Action.Arguments))
					}
				}
				channels = append(channels, ch)
			}
			if strings.Join(recorded, " ") != strings.Join(sent, " ") {
				t.Errorf("recorded %v, but the server received %v", recorded, sent)
			}
			if strings.Join(channels, ",") != strings.Join(tc.channels, ",") {
				t.Errorf("channels %v, want %v", channels, tc.channels)
			}
			last := d.Turns[len(d.Turns)-1].Action
			if got := ""; last != nil {
				got = last.Invalid
				if got != tc.invalid || (got != "") == last.Sent {
					t.Errorf("last action %+v, want invalid %q", last, tc.invalid)
				}
			} else if tc.invalid != "" {
				t.Errorf("no action, want one refused for %q", tc.invalid)
			}
			o := d.Outcome
			if o.Values.Of(simulator.Recovered) != tc.recovered || o.Values.Value(simulator.Calls) != int64(tc.calls) || o.Values.Value(simulator.LabMS) != tc.ms || o.Values.Of(simulator.InvalidAction) != tc.invalidAction || !o.Values.Lab() {
				t.Errorf("outcome %+v", o)
			}
			// Turn 0 shows the tools and the failing call; each later
			// turn the call the harness made.
			first := m.reqs[0].Messages[1].Content
			if !strings.Contains(first, conditions.ToolsLabel+"\n[") || !strings.Contains(first, `"name": "write"`) || !strings.Contains(first, conditions.CallLabel+"\n{\n  \"tool\": \"write\"") {
				t.Errorf("turn 0 shows:\n%s", first)
			}
			for i, r := range m.reqs {
				if (len(r.Tools) == 2) != tc.native {
					t.Errorf("turn %d offered %d native tools", i, len(r.Tools))
				}
				if i > 0 {
					prev := d.Turns[i-1].Action
					msg := r.Messages[len(r.Messages)-1].Content
					if !strings.Contains(msg, `"tool": "`+prev.Tool+`"`) {
						t.Errorf("turn %d does not show the call made:\n%s", i, msg)
					}
				}
			}
		})
	}
}

// TestActNeedsActor: task act refuses an environment that cannot send
// calls, and a prompt without the tool list.
func TestActNeedsActor(t *testing.T) {
	s, all, p := actSetup(t)
	key := simulator.Key{Model: "m", Prompt: "act", Condition: study.Normalized, Scenario: s.ID, Replicate: 1}
	m := &actScript{replies: text(retryNow)}
	d := simulator.Run(context.Background(), m, p, s, key, simulator.Config{ReplayCap: 3, Env: labelOnly{fakeenv.New(all, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 1})}, Task: simulator.Act})
	if d.Err == nil || !strings.Contains(d.Err.Error(), "task act needs an environment that sends") {
		t.Errorf("err %v", d.Err)
	}
	d = simulator.Run(context.Background(), m, p, s, key, simulator.Config{ReplayCap: 3, Task: simulator.Act})
	if d.Err == nil || !strings.Contains(d.Err.Error(), "needs live replay") {
		t.Errorf("err %v", d.Err)
	}
	mf, _ := manifests.LoadBuiltin(manifests.DefaultName)
	def, err := conditions.ParsePrompt("default", "default.tmpl", mf.Prompts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	if def.ShowsTools() {
		t.Error("default.tmpl shows tools")
	}
	d = simulator.Run(context.Background(), m, def, s, key, simulator.Config{ReplayCap: 3, Env: fakeenv.New(all, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 1}), Task: simulator.Act})
	if d.Err == nil || !strings.Contains(d.Err.Error(), "shows .Tools and .Call") {
		t.Errorf("err %v", d.Err)
	}
}

// labelOnly hides every method of an environment but the Environment
// ones.
type labelOnly struct{ f *fakeenv.Factory }

func (l labelOnly) NewEnv(ctx context.Context, scenario string, seed int64) (simulator.Environment, error) {
	e, err := l.f.NewEnv(ctx, scenario, seed)
	return struct{ simulator.Environment }{e}, err
}

// BenchmarkActHarness measures what the harness adds to one executed call
// of task act, without the server: parsing the answer with its call, the
// client's schema check, and building the action.
func BenchmarkActHarness(b *testing.B) {
	tb, err := simulator.NewToolbox([]json.RawMessage{
		json.RawMessage(`{"name":"create_entities","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"entities":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"entityType":{"type":"string"},"observations":{"type":"array","items":{"type":"string"}}},"required":["name","entityType","observations"]}}},"required":["entities"]}}`),
	})
	if err != nil {
		b.Fatal(err)
	}
	text := `{"operation_status":"failed","recovery_policy":"revise_arguments","tool":"create_entities","arguments":{"entities":[{"name":"Alice","entityType":"person","observations":["works at Acme"]}]}}`
	for b.Loop() {
		a := simulator.ParseAct(text, nil)
		if r, _ := tb.Check(*a.Action); r != "" {
			b.Fatal(r)
		}
		_ = a.Action.JSON()
	}
}

// onlyBare allows only the tool named bare.
type onlyBare struct{}

func (onlyBare) Allowed(tool json.RawMessage) (bool, string) {
	var t struct{ Name string }
	json.Unmarshal(tool, &t)
	return t.Name == "bare", "not bare"
}
