package simulator_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpstress/stress/internal/testserver/fakeenv"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/ollama"
	"github.com/mcpstress/stress/models/openai"
	"github.com/mcpstress/stress/models/transport"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestActNativeOnTheWire: under tool_calls: native the environment's
// tools go out as each API's native tools (the input schema as the
// parameters, exactly), and the native tool call a local fake server
// returns, in Ollama's and in OpenAI's shape, is the call the harness
// checks and sends.
func TestActNativeOnTheWire(t *testing.T) {
	label := `{"operation_status":"failed","recovery_policy":"revise_arguments"}`
	labelJSON, _ := json.Marshal(label)
	bodies := map[string]string{
		"ollama": `{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":` + string(labelJSON) +
			`,"tool_calls":[{"function":{"index":0,"name":"write","arguments":{"n":5}}}]},"done":true,"done_reason":"stop"}`,
		"openai": `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":` + string(labelJSON) +
			`,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"write","arguments":"{\"n\":5}"}}]},"finish_reason":"tool_calls"}]}`,
	}
	s, all, p := actSetup(t)
	for _, api := range []string{"ollama", "openai"} {
		t.Run(api, func(t *testing.T) {
			var sent []map[string]json.RawMessage
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				var m map[string]json.RawMessage
				json.Unmarshal(b, &m)
				sent = append(sent, m)
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(bodies[api]))
			}))
			defer srv.Close()
			var m models.Model
			var err error
			if api == "ollama" {
				m, err = ollama.New(models.Spec{Name: "m", Model: "m", Host: srv.URL}, transport.Options{MaxAttempts: 1})
			} else {
				m, err = openai.New(models.Spec{Name: "m", Model: "m", Host: srv.URL + "/v1"}, transport.Options{MaxAttempts: 1})
			}
			if err != nil {
				t.Fatal(err)
			}
			f := fakeenv.New(all, nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 1})
			key := simulator.Key{Model: "m", Prompt: "act", Condition: study.Normalized, Scenario: s.ID, Replicate: 1}
			d := simulator.Run(context.Background(), m, p, s, key, simulator.Config{StudySeed: 1, ReplayCap: 3, Env: f, Task: simulator.Act, NativeTools: true})
			if d.Err != nil {
				t.Fatal(d.Err)
			}
			a := d.Turns[0].Action
			if a == nil || a.Channel != simulator.ChannelNative || !a.Sent || a.Tool != "write" || string(a.Arguments) != `{"n":5}` {
				t.Fatalf("action %+v", a)
			}
			if got := f.Last().Sent(); len(got) != 1 || string(got[0].Arguments) != `{"n":5}` {
				t.Errorf("the environment received %+v", got)
			}
			if !d.Outcome.Values.Of(simulator.Recovered) || d.Outcome.Values.Of(simulator.InvalidAction) || len(sent) != 1 {
				t.Errorf("outcome %+v after %d requests", d.Outcome, len(sent))
			}
			tools := string(sent[0]["tools"])
			if !strings.Contains(tools, `{"type":"function","function":{"name":"write","description":"writes the record","parameters":{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":9}},"required":["n"],"additionalProperties":false}}}`) ||
				!strings.Contains(tools, `"name":"read"`) {
				t.Errorf("tools on the wire: %s", tools)
			}
		})
	}
}
