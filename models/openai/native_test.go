package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/openai"
	"github.com/mcpstress/stress/models/transport"
)

// TestReasoningAndToolCalls: reasoning_content (DeepSeek, vLLM) or
// reasoning (Ollama's /v1) is kept as the reply's thinking, tool_calls
// raw; reasoning options are passed through, think is refused with the
// options that do the job.
func TestReasoningAndToolCalls(t *testing.T) {
	bodies := map[string]string{
		"reasoning_content": `{"id":"c","model":"r1","choices":[{"index":0,"message":{"role":"assistant","content":"{\"operation_status\":\"failed\",\"recovery_policy\":\"select_tool\"}","reasoning_content":"Unknown tool, so select another."},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":9}}`,
		"reasoning":         `{"id":"c","model":"qwen3","choices":[{"index":0,"message":{"role":"assistant","content":"","reasoning":"Call the tool.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"record_answer","arguments":"{\"operation_status\":\"failed\",\"recovery_policy\":\"authenticate\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":9}}`,
	}
	var sent map[string]json.RawMessage
	var reply string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sent = nil
		json.Unmarshal(b, &sent)
		w.Write([]byte(reply))
	}))
	defer srv.Close()
	opts := map[string]any{"reasoning_effort": "none", "chat_template_kwargs": map[string]any{"enable_thinking": false}, "tool_choice": "auto"}
	m, err := openai.New(models.Spec{Name: "o", Model: "r1", Host: srv.URL + "/v1", Options: opts}, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := models.Request{Messages: []models.Message{{Role: "user", Content: "hi"}}, Options: opts,
		Tools: []models.Tool{{Name: "record_answer", Parameters: json.RawMessage(`{"type":"object"}`)}}}

	reply = bodies["reasoning_content"]
	r, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.Thinking != "Unknown tool, so select another." || !strings.Contains(r.Text, "select_tool") || r.ToolCalls != nil {
		t.Errorf("reply %+v", r)
	}
	if string(sent["reasoning_effort"]) != `"none"` || string(sent["chat_template_kwargs"]) != `{"enable_thinking":false}` ||
		string(sent["tools"]) != `[{"type":"function","function":{"name":"record_answer","parameters":{"type":"object"}}}]` || string(sent["tool_choice"]) != `"auto"` {
		t.Errorf("sent %v", sent)
	}

	reply = bodies["reasoning"]
	r, err = m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	calls, err := models.ParseToolCalls(r.ToolCalls)
	if r.Thinking != "Call the tool." || r.Text != "" || err != nil || len(calls) != 1 || calls[0].ID != "call_1" ||
		string(calls[0].Arguments) != `{"operation_status":"failed","recovery_policy":"authenticate"}` {
		t.Errorf("reply %+v, calls %+v, %v", r, calls, err)
	}
	if _, err := openai.New(models.Spec{Name: "o", Model: "x", Host: srv.URL, Options: map[string]any{"think": false}}, transport.Options{}); err == nil ||
		!strings.Contains(err.Error(), "options.think: OpenAI-compatible servers have no think field; set reasoning_effort") {
		t.Errorf("think: %v", err)
	}
}
