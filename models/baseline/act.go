package baseline

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/study"
)

// The baselines of the action task (task: act). Like the others they read
// only the messages they are sent; they find the tool list and the
// failing call after conditions.ToolsLabel and conditions.CallLabel.
//
// Note: the baseline that sends the failed call again, ReplaySame, is
// NaiveRetry under another name: retry_now on every turn, which under task
// act repeats the last call sent.
const (
	// SchemaRepair is the schema oracle: on turn 0 it repairs the failing
	// call against the listed input schemas (the closest tool name for an
	// unknown tool; arguments coerced to the schema's types, clamped to
	// its ranges and enums, extra members dropped) and sends it
	// (select_tool or revise_arguments); when there is nothing to repair,
	// and on every later turn, it stops.
	SchemaRepair = "schema_repair"
)

// actKinds are the acting baselines New accepts besides the label ones.
var actKinds = map[string]bool{SchemaRepair: true}

// actAnswer is the answer of an acting baseline.
type actAnswer struct {
	Status    study.Status    `json:"operation_status"`
	Policy    study.Policy    `json:"recovery_policy"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// act answers req as an acting baseline of kind.
func act(kind string, req models.Request) (models.Reply, error) {
	a := actAnswer{Status: study.Failed, Policy: study.StopOrEscalate}
	switch kind {
	case SchemaRepair:
		users := 0
		var first string
		for _, m := range req.Messages {
			if m.Role == conditions.User {
				if users == 0 {
					first = m.Content
				}
				users++
			}
		}
		if users == 1 {
			if p, call, ok := repair(first); ok {
				a.Policy, a.Tool, a.Arguments = p, call.Tool, call.Arguments
			}
		}
	}
	text, err := json.Marshal(a)
	return models.Reply{Text: string(text)}, err
}

// listedTool is one tool of the prompt's list, as far as repair reads it.
type listedTool struct {
	Name        string `json:"name"`
	InputSchema struct {
		Properties map[string]propSchema `json:"properties"`
		Required   []string              `json:"required"`
	} `json:"inputSchema"`
}

// propSchema is the part of a property's schema repair uses.
type propSchema struct {
	Type    any       `json:"type"`
	Enum    []any     `json:"enum"`
	Minimum *float64  `json:"minimum"`
	Maximum *float64  `json:"maximum"`
	Default any       `json:"default"`
	Items   *struct{} `json:"items"`
}

// failedCall is the prompt's failing call.
type failedCall struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

// repairedCall is the call repair sends.
type repairedCall struct {
	Tool      string
	Arguments json.RawMessage
}

// repair reads the tool list and the failing call of prompt text and
// returns the repaired call and its policy; ok is false when either is
// missing or nothing needs repair.
func repair(text string) (study.Policy, repairedCall, bool) {
	var tools []listedTool
	var call failedCall
	if !conditions.DecodeAfter(text, conditions.ToolsLabel, &tools) || !conditions.DecodeAfter(text, conditions.CallLabel, &call) || len(tools) == 0 {
		return "", repairedCall{}, false
	}
	policy := study.ReviseArguments
	tool := find(tools, call.Tool)
	if tool == nil {
		tool = closest(tools, call.Tool, call.Arguments)
		policy = study.SelectTool
	}
	args, changed := coerce(tool, call.Arguments)
	if policy == study.ReviseArguments && !changed {
		return "", repairedCall{}, false
	}
	b, err := json.Marshal(args)
	if err != nil {
		return "", repairedCall{}, false
	}
	return policy, repairedCall{Tool: tool.Name, Arguments: b}, true
}

func find(tools []listedTool, name string) *listedTool {
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i]
		}
	}
	return nil
}

// closest returns the tool nearest the unknown tool name called with
// args: the one whose required members args cover most, then the one
// sharing most words of its name (split at '_'), then the one at the
// least Levenshtein distance; ties go to the earlier listed tool.
func closest(tools []listedTool, name string, args map[string]any) *listedTool {
	words := map[string]bool{}
	for _, w := range strings.Split(name, "_") {
		words[w] = true
	}
	best := 0
	var bestScore [3]int
	for i := range tools {
		t := &tools[i]
		var s [3]int
		for _, r := range t.InputSchema.Required {
			if _, ok := args[r]; ok {
				s[0]++
			} else {
				s[0] -= 2
			}
		}
		for _, w := range strings.Split(t.Name, "_") {
			if words[w] {
				s[1]++
			}
		}
		s[2] = -levenshtein(t.Name, name)
		if i == 0 || s[0] > bestScore[0] || s[0] == bestScore[0] && (s[1] > bestScore[1] || s[1] == bestScore[1] && s[2] > bestScore[2]) {
			best, bestScore = i, s
		}
	}
	return &tools[best]
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// numberWords are the number words coerce reads as integers.
var numberWords = map[string]float64{"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}

// coerce fits args to tool's schema: members the schema lacks are
// dropped; each value is converted to the property's type where a
// conversion exists (a numeric or number-word string to a number, a
// number or a one-string object to a string), clamped to its range and
// replaced by the first enum value when outside its enum; a missing
// required member takes the schema's default. changed reports whether
// anything changed.
func coerce(tool *listedTool, args map[string]any) (map[string]any, bool) {
	props := tool.InputSchema.Properties
	out := map[string]any{}
	changed := false
	for _, k := range slices.Sorted(maps.Keys(args)) {
		p, ok := props[k]
		if !ok {
			changed = true
			continue
		}
		v, c := fit(p, args[k])
		out[k] = v
		changed = changed || c
	}
	for _, k := range tool.InputSchema.Required {
		if _, ok := out[k]; !ok && props[k].Default != nil {
			out[k] = props[k].Default
			changed = true
		}
	}
	return out, changed
}

// fit converts v to schema p; c reports a change.
func fit(p propSchema, v any) (any, bool) {
	typ, _ := p.Type.(string)
	orig := v
	switch typ {
	case "integer", "number":
		switch x := v.(type) {
		case string:
			s := strings.TrimSpace(strings.ToLower(x))
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				v = f
			} else if f, ok := numberWords[s]; ok {
				v = f
			}
		case bool:
			v = 0.0
			if x {
				v = 1.0
			}
		}
		if f, ok := v.(float64); ok {
			if typ == "integer" {
				f = math.Round(f)
			}
			if p.Minimum != nil && f < *p.Minimum {
				f = *p.Minimum
			}
			if p.Maximum != nil && f > *p.Maximum {
				f = *p.Maximum
			}
			v = f
		}
	case "string":
		switch x := v.(type) {
		case float64:
			v = strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			v = strconv.FormatBool(x)
		case map[string]any:
			if len(x) == 1 {
				for _, inner := range x {
					if s, ok := inner.(string); ok {
						v = s
					}
				}
			}
		}
	}
	if len(p.Enum) > 0 && !slices.ContainsFunc(p.Enum, func(e any) bool { return sameJSON(e, v) }) {
		v = p.Enum[0]
	}
	return v, !sameJSON(orig, v)
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// generateAct is Generate for an acting baseline.
func (b *baseline) generateAct(ctx context.Context, req models.Request) (models.Reply, error) {
	if err := ctx.Err(); err != nil {
		return models.Reply{}, err
	}
	return act(b.kind, req)
}
