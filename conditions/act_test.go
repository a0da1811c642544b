package conditions_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/study"
)

// TestActRendering: the act prompt shows the task, the tools exactly as
// listed (in order, indented) and the failing call; its live message
// shows the call the harness made; the default prompt cannot render the
// action task; a tool that is not JSON is an error naming the scenario.
func TestActRendering(t *testing.T) {
	m, def := load(t)
	raw, err := manifests.Builtin.ReadFile("prompts/act.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt("act", "act.tmpl", string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if !p.ShowsTools() || def.ShowsTools() {
		t.Fatalf("ShowsTools: act %v, default %v", p.ShowsTools(), def.ShowsTools())
	}
	s := &m.Corpus.Scenarios[0]
	tools := []json.RawMessage{json.RawMessage(`{"name":"b","inputSchema":{"type":"object"}}`), json.RawMessage(`{"name":"a"}`)}
	call := json.RawMessage(`{"tool":"x","arguments":{"n":1}}`)
	msgs, err := p.InitialAct(s, study.CodeOnly, tools, call, "Do the thing.")
	if err != nil {
		t.Fatal(err)
	}
	user := msgs[1].Content
	want := "The user asked: Do the thing.\n\n" + conditions.ToolsLabel + "\n[\n  {\n    \"name\": \"b\",\n    \"inputSchema\": {\n      \"type\": \"object\"\n    }\n  },\n  {\n    \"name\": \"a\"\n  }\n]\n\n" +
		conditions.CallLabel + "\n{\n  \"tool\": \"x\",\n  \"arguments\": {\n    \"n\": 1\n  }\n}\n\nThe tool call returned:\n"
	if !strings.HasPrefix(user, want) || !strings.Contains(user, "Error code: "+s.Code) {
		t.Errorf("user message:\n%s\nwant it to start\n%s", user, want)
	}
	if msgs, _ := p.InitialAct(s, study.Normalized, tools, call, ""); strings.Contains(msgs[1].Content, "The user asked") {
		t.Error("an empty task is shown")
	}
	next, err := p.Acted(s, study.Normalized, 1, study.ReviseArguments, json.RawMessage(`{"tool":"a","arguments":{}}`), json.RawMessage(`{"result":{"content":[],"isError":false}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(next.Content, "carried out revise_arguments (replay 1) and called:\n{\n  \"tool\": \"a\"") {
		t.Errorf("live message:\n%s", next.Content)
	}
	if _, err := def.InitialAct(s, study.Normalized, tools, call, ""); err == nil || !strings.Contains(err.Error(), ".Tools and .Call") {
		t.Errorf("default prompt under task act: %v", err)
	}
	if _, err := p.InitialAct(s, study.Normalized, []json.RawMessage{json.RawMessage(`{"name":`)}, call, ""); err == nil || !strings.Contains(err.Error(), "scenario "+s.ID+": tools") {
		t.Errorf("a tool that is not JSON: %v", err)
	}
}
