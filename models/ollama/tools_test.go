package ollama_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpstress/stress/internal/testserver/ollamatest"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/ollama"
	"github.com/mcpstress/stress/models/transport"
	"github.com/mcpstress/stress/simulator"
)

// TestToolCallsRealServer: the real server (v0.17.4) parses the tiny
// model's output into a native tool call of the tool the request sent;
// the backend keeps message.tool_calls raw, the answer text is empty, and
// the call's arguments are an answer the parser accepts.
func TestToolCallsRealServer(t *testing.T) {
	srv, _, _ := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := srv.CreateModel(ctx, "ollamatest-tools", ollamatest.ToolsTemplate)
	if err != nil {
		t.Fatal(err)
	}
	var format map[string]any
	json.Unmarshal([]byte(ollamatest.ToolCallSchema("record_answer")), &format)
	m, err := ollama.New(models.Spec{Name: "tools", Model: info.Name, Host: srv.Host, Format: format}, transport.Options{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	tool := models.Tool{Name: "record_answer", Description: "Record the recovery decision.", Parameters: json.RawMessage(ollamatest.AnswerSchema)}
	for seed := int64(1); seed <= 5; seed++ {
		req := ask(seed, nil)
		delete(req.Options, "think")
		req.Tools = []models.Tool{tool}
		r, err := m.Generate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		calls, err := models.ParseToolCalls(r.ToolCalls)
		if err != nil || len(calls) != 1 || calls[0].Name != "record_answer" || r.Text != "" {
			t.Fatalf("seed %d: text %q, tool_calls %s (%v)", seed, r.Text, r.ToolCalls, err)
		}
		if a := simulator.ParseAnswer(string(calls[0].Arguments)); !a.Valid {
			t.Errorf("seed %d: arguments %s are not a valid answer", seed, calls[0].Arguments)
		}
		t.Logf("seed %d: tool_calls %s", seed, r.ToolCalls)
	}
}
