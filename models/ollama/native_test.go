package ollama_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/ollama"
	"github.com/mcpstress/stress/models/transport"
)

// chatThinkingToolCalls is an /api/chat body as Ollama v0.17 sends it for a
// thinking model that called a tool.
const chatThinkingToolCalls = `{"model":"qwen3.5:0.8b","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"",` +
	`"thinking":"The token expired, so {\"operation_status\": \"failed\", \"recovery_policy\": \"retry_now\"} would be wrong.",` +
	`"tool_calls":[{"id":"call_x1","function":{"index":0,"name":"record_answer","arguments":{"operation_status":"failed","recovery_policy":"authenticate"}}}]},` +
	`"done":true,"done_reason":"stop","total_duration":5,"prompt_eval_count":12,"eval_count":30}`

// TestThinkAndToolsOnTheWire: think travels as the request's think field
// (never in options), tools exactly as written; the server's thinking and
// tool calls are kept apart from the answer text, which stays the
// message's content. A fake server; TestThinkingRealServer runs a real one.
func TestThinkAndToolsOnTheWire(t *testing.T) {
	var sent []map[string]json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]json.RawMessage
		json.Unmarshal(b, &m)
		sent = append(sent, m)
		w.Write([]byte(chatThinkingToolCalls))
	}))
	defer srv.Close()
	for _, think := range []any{false, true, "high"} {
		t.Run(fmt.Sprint(think), func(t *testing.T) {
			m, err := ollama.New(models.Spec{Name: "q", Model: "qwen3.5:0.8b", Host: srv.URL, Options: map[string]any{"think": think, "num_ctx": 4096}}, transport.Options{})
			if err != nil {
				t.Fatal(err)
			}
			params := json.RawMessage(`{"type":"object","properties":{"operation_status":{"type":"string","enum":["failed","succeeded"]}},"additionalProperties":false,"x-note":"kept"}`)
			r, err := m.Generate(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "hi"}}, Seed: 0,
				Options: map[string]any{"think": think, "num_ctx": 4096}, Tools: []models.Tool{{Name: "record_answer", Description: "Record the answer.", Parameters: params}}})
			if err != nil {
				t.Fatal(err)
			}
			last := sent[len(sent)-1]
			want, _ := json.Marshal(think)
			if string(last["think"]) != string(want) || strings.Contains(string(last["options"]), "think") || !strings.Contains(string(last["options"]), `"seed":0`) {
				t.Errorf("think %v sent as think=%s options=%s", think, last["think"], last["options"])
			}
			if string(last["tools"]) != `[{"type":"function","function":{"name":"record_answer","description":"Record the answer.","parameters":`+string(params)+`}}]` {
				t.Errorf("tools sent as %s", last["tools"])
			}
			if r.Text != "" || !strings.HasPrefix(r.Thinking, "The token expired") || r.PromptTokens != 12 || r.OutputTokens != 30 {
				t.Errorf("reply text %q thinking %q", r.Text, r.Thinking)
			}
			calls, err := models.ParseToolCalls(r.ToolCalls)
			if err != nil || len(calls) != 1 || calls[0].ID != "call_x1" || calls[0].Name != "record_answer" ||
				string(calls[0].Arguments) != `{"operation_status":"failed","recovery_policy":"authenticate"}` {
				t.Errorf("tool calls %s: %+v %v", r.ToolCalls, calls, err)
			}
		})
	}
	// Unset: no think field at all (the server decides, and Verify says so).
	m, _ := ollama.New(models.Spec{Name: "q", Model: "qwen3.5:0.8b", Host: srv.URL}, transport.Options{})
	if _, err := m.Generate(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := sent[len(sent)-1]["think"]; ok {
		t.Errorf("an unset think was sent: %s", sent[len(sent)-1]["think"])
	}
	if _, ok := sent[len(sent)-1]["tools"]; ok {
		t.Errorf("no tools, but tools were sent")
	}
	for _, bad := range []any{"on", 1, "max"} {
		t.Run(fmt.Sprint(bad), func(t *testing.T) {
			if _, err := ollama.New(models.Spec{Name: "q", Model: "x", Host: srv.URL, Options: map[string]any{"think": bad}}, transport.Options{}); err == nil || !strings.Contains(err.Error(), `model "q": options.think: want false, true, "low", "medium" or "high"`) {
				t.Errorf("think %v: %v", bad, err)
			}
		})
	}
}
