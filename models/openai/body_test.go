package openai

import (
	"bytes"
	"encoding/json"
	"reflect"
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
		m, err := New(models.Spec{Name: "m", Backend: Backend, Model: "llama3.2:3b", Host: "http://127.0.0.1:1/v1", Format: format}, transport.Options{})
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
	}
}

// BenchmarkBody measures building one request body of the paper's shape.
func BenchmarkBody(b *testing.B) {
	m, err := New(models.Spec{Name: "m", Backend: Backend, Model: "llama3.2:3b", Host: "http://127.0.0.1:1/v1", Format: "schema"}, transport.Options{})
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
