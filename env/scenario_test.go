package env_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpstress/stress/env"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// actScenario is a well-formed act scenario.
func actScenario() *env.ActScenario {
	sc := &env.ActScenario{Task: "Read the stock.", Pointer: "/sku", Policies: env.Repairs{
		ReviseArguments: []simulator.ToolCall{{Tool: "get_stock", Arguments: json.RawMessage(`{"sku": "RED"}`)}},
		SelectTool:      []simulator.ToolCall{{Tool: "list_stock", Arguments: json.RawMessage(`{}`)}},
	}}
	sc.Tool, sc.Args = "get_stock", json.RawMessage(`{"sku": 5}`)
	return sc
}

// TestActScenarioCheck: the act fields are checked, each problem naming
// its field.
func TestActScenarioCheck(t *testing.T) {
	for _, tc := range []struct {
		name, field string
		edit        func(sc *env.ActScenario)
	}{
		{"good", "", func(*env.ActScenario) {}},
		{"no task", "task", func(sc *env.ActScenario) { sc.Task = " " }},
		{"pointer that is no pointer", "pointer", func(sc *env.ActScenario) { sc.Pointer = "sku" }},
		{"no revise_arguments call", "policies.revise_arguments", func(sc *env.ActScenario) { sc.Policies.ReviseArguments = nil }},
		{"select_tool call without a tool", "policies.select_tool[0]", func(sc *env.ActScenario) { sc.Policies.SelectTool[0].Tool = "" }},
		{"repair arguments not an object", "policies.revise_arguments[0]", func(sc *env.ActScenario) {
			sc.Policies.ReviseArguments[0].Arguments = json.RawMessage(`[]`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := actScenario()
			tc.edit(sc)
			var fields []string
			sc.Check(func(field, format string, a ...any) { fields = append(fields, field) })
			if strings.Join(fields, ",") != tc.field {
				t.Errorf("problems in %v, want %q", fields, tc.field)
			}
		})
	}
}

// TestActScenarioRepair: each policy's calls.
func TestActScenarioRepair(t *testing.T) {
	sc := actScenario()
	for _, tc := range []struct {
		p    study.Policy
		want string
	}{
		{study.ReviseArguments, `get_stock {"sku": "RED"}`},
		{study.SelectTool, `list_stock {}`},
		{study.RetryNow, `get_stock {"sku": 5}`},
		{study.RetryLater, `get_stock {"sku": 5}`},
		{study.Authenticate, `get_stock {"sku": 5}`},
		{study.StopOrEscalate, ``},
	} {
		t.Run(string(tc.p), func(t *testing.T) {
			var got []string
			for _, c := range sc.Repair(tc.p) {
				got = append(got, c.Tool+" "+string(c.Arguments))
			}
			if strings.Join(got, "; ") != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}
