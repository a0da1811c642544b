package ollama_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/ollama"
	"github.com/mcpstress/stress/models/transport"
)

// TestHostPasswordScrubbed: Ollama's only credential is a host URL's
// password, sent as Basic authorization. A server (or a proxy in front of
// it) that echoes it, in an error body, in an answer or in a metadata
// error, gets it scrubbed like an API key, and messages show the host with
// the password masked. No real server is needed.
func TestHostPasswordScrubbed(t *testing.T) {
	t.Run("url", func(t *testing.T) { testHostPassword(t, false) })
	t.Run("api_key_env", func(t *testing.T) { testHostPassword(t, true) })
}

func testHostPassword(t *testing.T, env bool) {
	const user, pw = "alice", "s3cret-pass-word"
	chats := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pw {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/api/chat":
			chats++
			if chats == 1 {
				http.Error(w, `{"error":"busy; you sent `+auth+` for `+pw+`"}`, http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte(`{"model":"tiny","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"password ` + pw + `"},"done":true,"done_reason":"stop"}`))
		case "/api/version":
			w.Write([]byte(`{"version":"0.6.5"}`))
		default:
			http.Error(w, `{"error":"no tags for `+pw+`"}`, 500)
		}
	}))
	defer srv.Close()
	host := strings.Replace(srv.URL, "http://", "http://"+user+":"+pw+"@", 1)
	m, err := ollama.New(models.Spec{Name: "m", Model: "tiny", Host: host}, transport.Options{MaxAttempts: 2, BaseDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if env {
		// The way a manifest gives it: the user name in the host, the
		// password in the environment.
		t.Setenv("OLLAMA_TEST_PASSWORD", pw)
		spec := models.Spec{Name: "m", Model: "tiny", Host: strings.Replace(srv.URL, "http://", "http://"+user+"@", 1), APIKeyEnv: "OLLAMA_TEST_PASSWORD"}
		if m, err = ollama.New(spec, transport.Options{MaxAttempts: 2, BaseDelay: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		spec.Host = host
		if _, err := ollama.New(spec, transport.Options{}); err == nil || !strings.Contains(err.Error(), "api_key_env: the host URL has a password too") {
			t.Errorf("a password given twice: %v", err)
		}
		spec.APIKeyEnv = "OLLAMA_TEST_UNSET"
		if _, err := ollama.New(spec, transport.Options{}); err == nil || !strings.Contains(err.Error(), "OLLAMA_TEST_UNSET is empty or unset") {
			t.Errorf("an unset variable: %v", err)
		}
	}
	u, _ := url.Parse(host)
	secrets := transport.URLSecrets(u)
	leaks := func(what, s string) {
		t.Helper()
		for _, x := range secrets {
			for i := 0; i+transport.MinSecret <= len(x); i++ {
				if strings.Contains(s, x[i:i+transport.MinSecret]) {
					t.Errorf("%s holds part of a credential: %s", what, s)
					return
				}
			}
		}
	}
	r, err := m.Generate(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Events) != 1 || !r.Redacted || r.OriginalBodySHA256 == "" || r.Text != "password [redacted]" {
		t.Errorf("reply %+v", r)
	}
	leaks("the event", r.Events[0].Error)
	leaks("the body", string(r.Body))
	_, err = ollama.List(context.Background(), host)
	if err == nil || !strings.Contains(err.Error(), "alice:xxxxx@") {
		t.Errorf("list error %v", err)
	}
	leaks("the list error", err.Error())
	_, err = m.Verify(context.Background())
	if err == nil || !strings.Contains(err.Error(), "alice:xxxxx@") {
		t.Errorf("verify error %v", err)
	}
	leaks("the verify error", err.Error())
}
