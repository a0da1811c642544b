package results

import (
	"testing"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/simulator"
)

// BenchmarkCallLine measures encoding one call line of a label decision as
// the floor's stub answers it (scripts/floor).
func BenchmarkCallLine(b *testing.B) {
	l := openTestLog(b)
	body := []byte(`{"id":"chatcmpl-floor","object":"chat.completion","created":0,"model":"floor","system_fingerprint":"fp_floor","choices":[{"index":0,"message":{"role":"assistant","content":"{\"operation_status\":\"failed\",\"recovery_policy\":\"stop_or_escalate\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	c := Call{Key: simulator.Key{Model: "floor", Prompt: "default", Condition: "normalized", Scenario: "S01", Replicate: 1},
		Request:  models.Request{Messages: []models.Message{{Role: "system", Content: "policy text"}, {Role: "user", Content: "observation"}}, Temperature: 0},
		Response: `{"operation_status":"failed","recovery_policy":"stop_or_escalate"}`, ResponseSHA256: "c75bab5df5ad70b1b9643e8b46d7c7793dbe442c8cfcffb9794ddc2a17f00a4f",
		Body: body, BodySHA256: "207ea4acde021548e4bacf94aca0eed10c98f90209e472c253a407e4e5547fe0", LatencyMS: 0.512, PromptTokens: 1, OutputTokens: 1,
		Meta: map[string]any{"finish_reason": "stop", "id": "chatcmpl-floor", "model": "floor", "system_fingerprint": "fp_floor",
			"usage": struct {
				P int `json:"prompt_tokens"`
				C int `json:"completion_tokens"`
				T int `json:"total_tokens"`
				D any `json:"prompt_tokens_details"`
				E any `json:"completion_tokens_details"`
			}{1, 1, 2, nil, nil}}}
	b.ReportAllocs()
	for range b.N {
		l.buf.Reset()
		if err := l.encode(&c); err != nil {
			b.Fatal(err)
		}
	}
}
