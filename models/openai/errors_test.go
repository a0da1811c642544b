package openai_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/openai"
	"github.com/mcpstress/stress/models/transport"
)

// TestServerErrors: what a server's error answer says reaches the error,
// decoded from OpenAI's error object; an answer no retry can cure (401, a
// spent quota) is sent once, by a call and by Verify's probe; a 200
// without choices keeps the provider's message.
func TestServerErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		body     string
		requests int // by Generate, with 3 attempts
		verify   int // by Verify, whose probe is tried once and then as a call
		say      string
	}{
		{"unauthorized", 401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`, 1, 1,
			"HTTP 401: Incorrect API key provided. (type invalid_request_error, code invalid_api_key)"},
		{"no /v1", 404, `{"detail":"Not Found"}`, 1, 1, `HTTP 404: {"detail":"Not Found"}`},
		{"quota", 429, `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}`, 1, 1,
			"HTTP 429: You exceeded your current quota."},
		{"overloaded", 503, "<html><head><title>503 Service Temporarily Unavailable</title></head><body>\n<center>nginx</center></body></html>", 3, 4,
			"HTTP 503: HTML page: 503 Service Temporarily Unavailable"},
		{"200 with an error", 200, `{"error":{"message":"Provider returned error","code":502}}`, 3, 4,
			"chat completion: no choices: Provider returned error"},
	} {
		n := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n++
			w.WriteHeader(tc.status)
			w.Write([]byte(tc.body))
		}))
		m, err := openai.New(spec(srv.URL+"/v1"), transport.Options{MaxAttempts: 3, BaseDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Generate(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "hi"}}})
		if n != tc.requests || err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s: Generate sent %d requests (want %d), error %v (want it to say %q)", tc.name, n, tc.requests, err, tc.say)
		}
		n = 0
		_, err = m.Verify(context.Background())
		if n != tc.verify || err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s: Verify sent %d requests (want %d), error %v", tc.name, n, tc.verify, err)
		}
		srv.Close()
	}
}
