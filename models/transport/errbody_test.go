package transport

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestErrorBody: an error answer's text is the server's message, with the
// type and code of OpenAI's error object, whichever JSON shape the server
// uses; a page or plain text is read with its whitespace collapsed.
func TestErrorBody(t *testing.T) {
	long := strings.Repeat("x", 400)
	for _, tc := range []struct{ name, body, text, code string }{
		{"openai", "{\n    \"error\": {\n        \"message\": \"Invalid schema for response_format 'answer'.\",\n        \"type\": \"invalid_request_error\",\n        \"param\": \"response_format\",\n        \"code\": \"invalid_schema\"\n    }\n}",
			"Invalid schema for response_format 'answer'. (type invalid_request_error, code invalid_schema)", "invalid_schema"},
		{"openai quota", `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			"You exceeded your current quota. (type insufficient_quota, code insufficient_quota)", "insufficient_quota"},
		{"quota by type", `{"error":{"message":"Quota spent.","type":"insufficient_quota","code":"quota_exceeded"}}`,
			"Quota spent. (type insufficient_quota, code quota_exceeded)", "insufficient_quota"},
		{"numeric code", `{"error":{"message":"Provider returned error","code":502}}`, "Provider returned error (code 502)", "502"},
		{"type only", `{"error":{"message":"bad","type":"server_error","code":null}}`, "bad (type server_error)", "server_error"},
		{"message list", `{"error":{"message":["a","b"]}}`, "a; b", ""},
		{"ollama", `{"error":"model \"llama9\" not found, try pulling it first"}`, `model "llama9" not found, try pulling it first`, ""},
		{"vllm", `{"object":"error","message":"The model x does not exist.","type":"NotFoundError","param":null,"code":404}`, "The model x does not exist.", ""},
		{"html", "<!DOCTYPE html>\n<!--[if lt IE 7]> <html class=\"no-js ie6\"> <![endif]-->\n<head><title>example.com | 524: A timeout\n occurred</title></head>",
			"HTML page: example.com | 524: A timeout occurred", ""},
		{"text", "upstream\n\n   connect error  ", "upstream connect error", ""},
		{"json without message", `{"detail":"Not Found"}`, `{"detail":"Not Found"}`, ""},
		{"long", `{"error":"` + long + `"}`, strings.Repeat("x", 300) + "…", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, code := errorBody([]byte(tc.body))
			if text != tc.text || code != tc.code {
				t.Errorf("%s: errorBody = %q, %q; want %q, %q", tc.name, text, code, tc.text, tc.code)
			}
		})
	}
}

// TestQuotaNotRetried: a 429 that says the quota is spent is given up at
// once (waiting does not refill it); a 429 for a rate limit is retried.
func TestQuotaNotRetried(t *testing.T) {
	for _, tc := range []struct {
		code     string
		attempts int
	}{{"insufficient_quota", 1}, {"rate_limit_exceeded", 4}} {
		t.Run(tc.code, func(t *testing.T) {
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n++
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				w.Write([]byte(`{"error":{"message":"no","type":"requests","code":"` + tc.code + `"}}`))
			}))
			_, ev, err := client(t, &fakeClock{}, nil).Do(context.Background(), get(srv.URL), checkJSON)
			srv.Close()
			if n != tc.attempts || len(ev) != tc.attempts || err == nil || !strings.Contains(err.Error(), "HTTP 429: no (type requests, code "+tc.code+")") {
				t.Errorf("%s: %d requests, %d events, err %v; want %d", tc.code, n, len(ev), err, tc.attempts)
			}
		})
	}
}

// TestRetryAfterHuge: a Retry-After of more seconds than a Duration holds
// is a long wait (then capped at MaxDelay), not an overflow to a negative
// one.
func TestRetryAfterHuge(t *testing.T) {
	for _, h := range []string{"9999999999", "99999999999999999"} {
		t.Run(h, func(t *testing.T) {
			if d := retryAfter(h, time.Now()); d != time.Duration(math.MaxInt32)*time.Second {
				t.Errorf("retryAfter(%q) = %v", h, d)
			}
		})
	}
}
