package openai_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/openai"
	"github.com/mcpstress/stress/models/transport"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
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
		t.Run(tc.name, func(t *testing.T) {
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
			if hint := "most servers want it to end in /v1"; strings.Contains(err.Error(), hint) {
				t.Errorf("%s: the host ends in /v1, yet Verify says %q", tc.name, hint)
			}
			srv.Close()
		})
	}
	// A host without /v1 that the server answers 404: the probe's error
	// says what the host should be.
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	m, err := openai.New(spec(srv.URL), transport.Options{MaxAttempts: 3, BaseDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Verify(context.Background()); err == nil || !strings.Contains(err.Error(), "HTTP 404: 404 page not found (the host is the API base URL, to which chat/completions is added: most servers want it to end in /v1)") {
		t.Errorf("host without /v1: %v", err)
	}
}

// TestStoppedEarlyNote: answers a server ends at the token limit, cuts
// by a filter or refuses are scored as their text reads (invalid here),
// keep why in their call lines (meta finish_reason, refusal), and the run
// ends with a note that counts them and says what to change.
func TestStoppedEarlyNote(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg, finish := `"content":"{\"operation_status\": \"failed\", \"recovery_policy\": \"select_tool\"}"`, "stop"
		switch served.Add(1) % 7 {
		case 1:
			msg, finish = `"content":"{\"operation_status\": \"fai"`, "length"
		case 2:
			msg, finish = `"content":null`, "content_filter"
		case 3:
			msg = `"content":null,"refusal":"I can't help with that."`
		}
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"tiny","choices":[{"index":0,"message":{"role":"assistant",%s},"finish_reason":%q}]}`, msg, finish)
	}))
	defer srv.Close()
	dir, sum, log := runLogged(t, manifest(t, manifests.Model{Name: "remote", Backend: openai.Backend, Model: "tiny", Host: srv.URL + "/v1", SeedCheck: "off"}))
	// Calls 1, 2 and 3 of every 7 (the preflight's probe is call 1).
	calls := int(served.Load())
	n := func(first int) int { return (calls - first + 7) / 7 }
	want := fmt.Sprintf("note: %d answers of this run ended early, scored as their text reads (an invalid label, most often): %d at the token limit (raise the model's max_tokens or num_predict), %d cut by the provider's content filter, %d refused by the model",
		n(1)-1+n(2)+n(3), n(1)-1, n(2), n(3))
	if !strings.Contains(log, want) {
		t.Errorf("log\n%s\nwant the line\n%s", log, want)
	}
	invalid := 0
	for _, c := range sum.Cells {
		invalid += c.Count(simulator.Invalid)
	}
	if invalid == 0 {
		t.Errorf("no invalid answers in %+v", sum.Cells)
	}
	b, err := os.ReadFile(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"finish_reason":"length"`, `"finish_reason":"content_filter"`, `"refusal":"I can't help with that."`} {
		t.Run(s, func(t *testing.T) {
			if !bytes.Contains(b, []byte(s)) {
				t.Errorf("%s lacks %s", results.CallsFile, s)
			}
		})
	}
}
