package baseline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// actPrompt is a first user message of the action task, with the labels
// act.tmpl writes.
func actPrompt(call string) string {
	return "The user asked: x\n\n" + conditions.ToolsLabel + "\n" + `[
  {"name": "create_order", "inputSchema": {"type": "object", "properties": {
    "customer": {"type": "string"}, "sku": {"type": "string"},
    "quantity": {"type": "integer", "minimum": 1, "maximum": 100},
    "currency": {"type": "string", "enum": ["EUR", "USD"]},
    "note": {"type": "string"}, "gift": {"type": "boolean", "default": false}},
    "required": ["customer", "sku", "quantity", "gift"]}},
  {"name": "get_order", "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}
]` + "\n\n" + conditions.CallLabel + "\n" + call + "\n\nThe tool call returned:\n{}"
}

// TestSchemaRepair: the oracle's repairs, read back by the act parser.
func TestSchemaRepair(t *testing.T) {
	m, err := New(models.Spec{Name: "r", Model: SchemaRepair})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, call string
		policy     study.Policy
		want       string // tool + arguments, "" for none
	}{
		{"number word", `{"tool": "create_order", "arguments": {"customer": "C-1", "sku": "S", "quantity": "two", "gift": false}}`,
			study.ReviseArguments, `create_order{"customer":"C-1","gift":false,"quantity":2,"sku":"S"}`},
		{"clamped, enum, default, extra dropped, number to string", `{"tool": "create_order", "arguments": {"customer": 17, "sku": "S", "quantity": 0, "currency": "GBP", "x": 1}}`,
			study.ReviseArguments, `create_order{"currency":"EUR","customer":"17","gift":false,"quantity":1,"sku":"S"}`},
		{"one-string object", `{"tool": "create_order", "arguments": {"customer": "C-1", "sku": "S", "quantity": 3, "gift": true, "note": {"text": "hi"}}}`,
			study.ReviseArguments, `create_order{"customer":"C-1","gift":true,"note":"hi","quantity":3,"sku":"S"}`},
		{"unknown tool: the one whose required arguments are covered", `{"tool": "place_order", "arguments": {"customer": "C-1", "sku": "S", "quantity": 3, "gift": false}}`,
			study.SelectTool, `create_order{"customer":"C-1","gift":false,"quantity":3,"sku":"S"}`},
		{"unknown tool: another tool's required arguments", `{"tool": "fetch_order", "arguments": {"order_id": "O-1"}}`,
			study.SelectTool, `get_order{"order_id":"O-1"}`},
		{"nothing to repair", `{"tool": "create_order", "arguments": {"customer": "C-1", "sku": "S", "quantity": 3, "gift": false}}`,
			study.StopOrEscalate, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := m.Generate(context.Background(), models.Request{Messages: []models.Message{{Role: "system", Content: "s"}, {Role: "user", Content: actPrompt(tc.call)}}})
			if err != nil {
				t.Fatal(err)
			}
			a := simulator.ParseAct(r.Text, nil)
			got := ""
			if a.Action != nil {
				got = a.Action.Tool + string(a.Action.Arguments)
			}
			if !a.Valid || a.Policy != tc.policy || got != tc.want {
				t.Errorf("answer %s: policy %s, call %s; want %s, %s", r.Text, a.Policy, got, tc.policy, tc.want)
			}
		})
	}
	// A later turn, and a prompt without the tool list, stop.
	for _, tc := range []struct {
		name string
		msgs []models.Message
	}{
		{"later turn", []models.Message{{Role: "user", Content: actPrompt(`{"tool": "place_order", "arguments": {}}`)}, {Role: "assistant", Content: "{}"}, {Role: "user", Content: "again"}}},
		{"no tool list", []models.Message{{Role: "user", Content: "The tool call returned: {}"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := m.Generate(context.Background(), models.Request{Messages: tc.msgs})
			var a map[string]any
			json.Unmarshal([]byte(r.Text), &a)
			if a["recovery_policy"] != "stop_or_escalate" || strings.Contains(r.Text, "tool") {
				t.Errorf("answer %s", r.Text)
			}
		})
	}
}
