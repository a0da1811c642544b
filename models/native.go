package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ThinkOption is the option key that switches a thinking model's
// reasoning: false, true, or a level "low", "medium" or "high" (Ollama's
// think field; which values a model accepts is the server's call).
const ThinkOption = "think"

// Think returns the think value of a request's options and whether it is
// set. An unset think leaves the choice to the server: Ollama since
// v0.9 thinks by default for a model that can.
func Think(options map[string]any) (value any, set bool, err error) {
	v, ok := options[ThinkOption]
	if !ok || v == nil {
		return nil, false, nil
	}
	switch t := v.(type) {
	case bool:
		return t, true, nil
	case string:
		switch t {
		case "low", "medium", "high":
			return t, true, nil
		}
	}
	return nil, false, fmt.Errorf(`options.think: want false, true, "low", "medium" or "high", got %#v`, v)
}

// ToolCall is one native tool call, normalized from either wire shape.
type ToolCall struct {
	ID        string          `json:"id,omitempty"` // the server's call id, "" when it gave none
	Name      string          `json:"name"`         // the function called
	Arguments json.RawMessage `json:"arguments"`    // a JSON object
}

// ParseToolCalls reads the tool_calls array a server returned
// (Reply.ToolCalls): Ollama's shape, where function.arguments is a JSON
// object, and OpenAI's, where it is a string holding one. A nil or null
// array gives none.
func ParseToolCalls(raw json.RawMessage) ([]ToolCall, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var wire []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, fmt.Errorf("tool_calls: %w", err)
	}
	out := make([]ToolCall, len(wire))
	for i, w := range wire {
		if w.Function.Name == "" {
			return nil, fmt.Errorf("tool_calls[%d]: no function name", i)
		}
		args := bytes.TrimSpace(w.Function.Arguments)
		if len(args) > 0 && args[0] == '"' {
			var s string
			if err := json.Unmarshal(args, &s); err != nil {
				return nil, fmt.Errorf("tool_calls[%d].function.arguments: %w", i, err)
			}
			args = []byte(s)
		}
		if len(bytes.TrimSpace(args)) == 0 {
			args = []byte("{}")
		}
		var obj map[string]any
		if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("tool_calls[%d].function.arguments: %w", i, errors.Join(errors.New("not a JSON object"), err))
		}
		out[i] = ToolCall{ID: w.ID, Name: w.Function.Name, Arguments: json.RawMessage(args)}
	}
	return out, nil
}

// WireTools returns tools in the shape Ollama and OpenAI-compatible
// servers both take: {"type":"function","function":{name, description,
// parameters}}, with each schema sent exactly as given (an object with
// no properties when none).
func WireTools(tools []Tool) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(tools))
	for i, t := range tools {
		if t.Name == "" {
			return nil, fmt.Errorf("tools[%d]: no name", i)
		}
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if !json.Valid(params) {
			return nil, fmt.Errorf("tools[%d] (%s): parameters are not valid JSON", i, t.Name)
		}
		fn := struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		}{t.Name, t.Description, params}
		b, err := json.Marshal(struct {
			Type     string `json:"type"`
			Function any    `json:"function"`
		}{"function", fn})
		if err != nil {
			return nil, fmt.Errorf("tools[%d] (%s): %w", i, t.Name, err)
		}
		out[i] = b
	}
	return out, nil
}
