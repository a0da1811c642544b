package env

import (
	"fmt"
	"strings"

	"github.com/mcpstress/stress/scenario"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// ActScenario is what a scenario of an action environment on a real MCP
// server (env/mcpenv, env/dbenv) declares beside scenario.Base: what the
// user asked, the argument at fault, and the canonical repairs.
type ActScenario struct {
	scenario.Base
	Task     string  `json:"task"`              // what the user asked, shown to the model
	Pointer  string  `json:"pointer,omitempty"` // the argument at fault, a JSON pointer
	Policies Repairs `json:"policies"`          // the canonical calls of the policies that need the model's call
}

// Repairs are a scenario's canonical calls for the policies that need
// one: the corrected call, the right tool.
type Repairs struct {
	ReviseArguments []simulator.ToolCall `json:"revise_arguments"`
	SelectTool      []simulator.ToolCall `json:"select_tool"`
}

// Check checks the fields of ActScenario beside scenario.Base's and
// reports each problem through bad.
func (sc *ActScenario) Check(bad func(field, format string, a ...any)) {
	if strings.TrimSpace(sc.Task) == "" {
		bad("task", "say what the user asked")
	}
	if sc.Pointer != "" && !strings.HasPrefix(sc.Pointer, "/") {
		bad("pointer", "want a JSON pointer, got %q", sc.Pointer)
	}
	for _, r := range []struct {
		name  string
		calls []simulator.ToolCall
	}{{"revise_arguments", sc.Policies.ReviseArguments}, {"select_tool", sc.Policies.SelectTool}} {
		if len(r.calls) == 0 {
			bad("policies."+r.name, "say what the canonical %s call is", r.name)
		}
		for j, c := range r.calls {
			if c.Tool == "" || !statediff.IsObject(c.Arguments) {
				bad(fmt.Sprintf("policies.%s[%d]", r.name, j), "want a tool and its arguments (an object)")
			}
		}
	}
}

// First returns the scenario's failing first call.
func (sc *ActScenario) First() simulator.ToolCall {
	return simulator.ToolCall{Tool: sc.Tool, Arguments: sc.Args}
}

// Repair returns the calls that carry out policy p in the scenario: its
// repair for revise_arguments and select_tool; the failing call again for
// retry_now, retry_later and authenticate (an environment whose server
// has a credential to obtain puts that call first); none for
// stop_or_escalate.
func (sc *ActScenario) Repair(p study.Policy) []simulator.ToolCall {
	switch p {
	case study.ReviseArguments:
		return sc.Policies.ReviseArguments
	case study.SelectTool:
		return sc.Policies.SelectTool
	case study.RetryNow, study.RetryLater, study.Authenticate:
		return []simulator.ToolCall{sc.First()}
	}
	return nil
}
