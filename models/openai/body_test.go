package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/transport"
)

// bodyViaLibrary is how the request body was built before it was encoded
// once: go-openai's request marshalled, read back into a map, the exact
// temperature and the options set, marshalled again.
func bodyViaLibrary(m *Model, req models.Request) []byte {
	msgs := make([]goopenai.ChatCompletionMessage, len(req.Messages))
	for i, msg := range req.Messages {
		msgs[i] = goopenai.ChatCompletionMessage{Role: msg.Role, Content: msg.Content}
	}
	seed := int(req.Seed)
	format, _ := responseFormat(m.spec.Format)
	b, _ := json.Marshal(&goopenai.ChatCompletionRequest{Model: m.spec.Model, Messages: msgs, Seed: &seed, ResponseFormat: format})
	var obj map[string]any
	json.Unmarshal(b, &obj)
	obj["temperature"] = req.Temperature
	for k, v := range req.Options {
		obj[k] = v
	}
	b, _ = json.Marshal(obj)
	return b
}

// TestBodyEncodedOnce checks that the body encoded once is the JSON
// document go-openai's request gave (the same members and values; only the
// order of keys may differ), for every answer format, with and without
// options, at temperature 0 and 0.7.
func TestBodyEncodedOnce(t *testing.T) {
	for _, format := range []any{nil, "json", "schema"} {
		t.Run(fmt.Sprint(format), func(t *testing.T) {
			m, err := New(models.Spec{Name: "m", Backend: backend, Model: "llama3.2:3b", Host: "http://127.0.0.1:1/v1", Format: format}, transport.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, req := range []models.Request{
				{Messages: []models.Message{{Role: "system", Content: "be <brief> & exact"}, {Role: "user", Content: "{\"x\": 1}"}}, Seed: 0, Temperature: 0},
				{Messages: []models.Message{{Role: "user", Content: "hi"}}, Seed: 2147483647, Temperature: 0.7, Options: map[string]any{"top_p": 1.0, "max_tokens": 64}},
			} {
				got, err := m.body(req)
				if err != nil {
					t.Fatal(err)
				}
				want := bodyViaLibrary(m, req)
				var a, b any
				if json.Unmarshal(got, &a) != nil || json.Unmarshal(want, &b) != nil || !reflect.DeepEqual(a, b) {
					t.Errorf("format %v: body\n%s\nwant\n%s", format, got, want)
				}
			}
		})
	}
}

// bodyViaMap is how the body was built before its fields became a
// struct: every member in one map, which encoding/json writes in the
// order of its keys.
func bodyViaMap(m *Model, req models.Request) []byte {
	msgs := make([]message, len(req.Messages))
	for i, msg := range req.Messages {
		msgs[i] = message{Role: msg.Role, Content: msg.Content}
	}
	obj := map[string]any{"model": m.spec.Model, "messages": msgs, "seed": int(req.Seed), "stream": false, "temperature": req.Temperature}
	if m.format != nil {
		obj["response_format"] = json.RawMessage(m.format)
	}
	for k, v := range req.Options {
		obj[k] = v
	}
	if len(req.Tools) > 0 {
		obj["tools"], _ = models.WireTools(req.Tools)
	}
	b, _ := json.Marshal(obj)
	return b
}

// TestBodyMembers checks the body against the map it was encoded from
// before (the same members and values) with tools and options of every
// JSON type, and that the options follow the fields in the order of
// their names, so the same request always gives the same bytes.
func TestBodyMembers(t *testing.T) {
	m, err := New(models.Spec{Name: "m", Backend: backend, Model: "qwen3", Host: "http://127.0.0.1:1/v1", Format: "schema"}, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := models.Request{
		Messages:    []models.Message{{Role: "system", Content: "a <b> & \"c\"\n\u2028"}, {Role: "user", Content: "é"}},
		Seed:        -3,
		Temperature: 1e-7,
		Options: map[string]any{"top_p": 0.9, "max_tokens": 64, "stop": []any{"\n", "END"}, "parallel_tool_calls": false,
			"chat_template_kwargs": map[string]any{"enable_thinking": false}, "tool_choice": "required", "reasoning_effort": nil},
		Tools: []models.Tool{{Name: "record_answer", Description: "d", Parameters: json.RawMessage(`{"type": "object"}`)}},
	}
	got, err := m.body(req)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("body %s: %v", got, err)
	}
	if json.Unmarshal(bodyViaMap(m, req), &b) != nil || !reflect.DeepEqual(a, b) {
		t.Errorf("body\n%s\nwant the members of\n%s", got, bodyViaMap(m, req))
	}
	tail := `,"chat_template_kwargs":{"enable_thinking":false},"max_tokens":64,"parallel_tool_calls":false,"reasoning_effort":null,"stop":["\n","END"],"tool_choice":"required","top_p":0.9}`
	if !bytes.HasSuffix(got, []byte(tail)) {
		t.Errorf("body ends\n%s\nwant\n%s", got[max(0, len(got)-len(tail)):], tail)
	}
	again, _ := m.body(req)
	if !bytes.Equal(got, again) {
		t.Errorf("the same request gave two bodies:\n%s\n%s", got, again)
	}
	req.Options["think"] = true
	if _, err := m.body(req); err == nil || !strings.Contains(err.Error(), "options.think") {
		t.Errorf("an option the backend does not send: err = %v, want one naming options.think", err)
	}
}

// BenchmarkBody measures building one request body of the paper's shape.
func BenchmarkBody(b *testing.B) {
	m, err := New(models.Spec{Name: "m", Backend: backend, Model: "llama3.2:3b", Host: "http://127.0.0.1:1/v1", Format: "schema"}, transport.Options{})
	if err != nil {
		b.Fatal(err)
	}
	req := models.Request{Messages: []models.Message{{Role: "system", Content: string(bytes.Repeat([]byte("policy text "), 150))}, {Role: "user", Content: string(bytes.Repeat([]byte("observation "), 60))}}, Seed: 7, Temperature: 0.7, Options: map[string]any{"top_p": 1.0}}
	b.Run("once", func(b *testing.B) {
		for range b.N {
			m.body(req)
		}
	})
	b.Run("via-library", func(b *testing.B) {
		for range b.N {
			bodyViaLibrary(m, req)
		}
	})
}

// floorAnswer is the answer scripts/floor's stub sends.
var floorAnswer = []byte(`{"id":"chatcmpl-floor","object":"chat.completion","created":0,"model":"floor","system_fingerprint":"fp_floor",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"{\"operation_status\":\"failed\",\"recovery_policy\":\"stop_or_escalate\"}"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)

// TestDecodeAsGoOpenAI: decodeAnswer (segmentio's decoder) reads an answer into
// go-openai's type as encoding/json does, and refuses what it refuses:
// content as a string, null or parts, fields of the wrong type, used or
// not, and nesting past encoding/json's bound.
func TestDecodeAsGoOpenAI(t *testing.T) {
	valid := `{"id":"x","object":"chat.completion","created":7,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"message":{"role":"assistant","content":"{\"a\":\"\u00e9\\n\"}","refusal":"no"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":1}}}`
	for _, tc := range []struct{ name, body string }{
		{"string content", valid},
		{"null content", strings.Replace(valid, `"content":"{\"a\":\"\u00e9\\n\"}"`, `"content":null`, 1)},
		{"parts", strings.Replace(valid, `"content":"{\"a\":\"\u00e9\\n\"}"`, `"content":[{"type":"text","text":"hi"}]`, 1)},
		{"number content", strings.Replace(valid, `"content":"{\"a\":\"\u00e9\\n\"}"`, `"content":12`, 1)},
		{"created as text", strings.Replace(valid, `"created":7`, `"created":"7"`, 1)},
		{"id as number", strings.Replace(valid, `"id":"x"`, `"id":5`, 1)},
		{"usage as text", strings.Replace(valid, `"usage":{`, `"usage":"x","u":{`, 1)},
		{"field names in capitals", strings.Replace(valid, `"model":"m"`, `"MODEL":"m"`, 1)},
		{"truncated", valid[:len(valid)-9]},
		{"trailing", valid + ` {}`},
		{"no choices", `{"id":"x","error":{"message":"Provider returned error"}}`},
		{"empty choices", `{"id":"x","choices":[]}`},
		{"null choices", `{"id":"x","choices":null}`},
		{"nested 10,000 deep", strings.Replace(valid, `"id":"x"`, `"z":`+strings.Repeat("[", 9999)+strings.Repeat("]", 9999)+`,"id":"x"`, 1)},
		{"nested deeper", strings.Replace(valid, `"id":"x"`, `"z":`+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+`,"id":"x"`, 1)},
		{"invalid UTF-8", strings.Replace(valid, `"fp"`, "\"f\xffp\"", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got goopenai.ChatCompletionResponse
			wantErr := json.Unmarshal([]byte(tc.body), &want)
			err := decodeAnswer([]byte(tc.body), &got)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("error %v, encoding/json's %v", err, wantErr)
			}
			if len(got.Choices) == 0 && len(want.Choices) == 0 {
				got.Choices, want.Choices = nil, nil // only their number is read
			}
			if err == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("decoded %+v, encoding/json %+v", got, want)
			}
		})
	}
}

// BenchmarkDecode measures decoding the floor's answer.
func BenchmarkDecode(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		var cr goopenai.ChatCompletionResponse
		decodeAnswer(floorAnswer, &cr)
	}
}
