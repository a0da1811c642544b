// Package echohttp is a minimal HTTP model backend for tests and
// benchmarks: it POSTs each request as JSON to its host through
// models/transport (retries, timeouts, body cap, circuit breaker) and
// returns the "text" field of the JSON answer. Handler serves such answers,
// computed by any function of the request.
package echohttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/transport"
)

// Backend is the registry name of this backend.
const Backend = "echohttp"

func init() {
	models.Register(Backend, models.Backend{Waits: true, New: New})
}

// model sends calls to one URL.
type model struct {
	url string
	tr  *transport.Client
}

var _ models.Model = (*model)(nil)

// New builds a model that posts to spec.Host, with spec.Transport's
// settings.
func New(spec models.Spec) (models.Model, error) {
	if spec.Host == "" {
		return nil, fmt.Errorf("model %q: backend %s needs a host (a URL)", spec.Name, Backend)
	}
	return &model{url: spec.Host, tr: transport.New(transport.FromSpec(spec))}, nil
}

// answer is the body the server sends.
type answer struct {
	Text *string `json:"text"`
}

func check(body []byte) error {
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		if strings.Contains(err.Error(), "unexpected end of JSON input") {
			return fmt.Errorf("body: %w", io.ErrUnexpectedEOF)
		}
		return fmt.Errorf("body is not JSON: %w", err)
	}
	if a.Text == nil {
		return errors.New(`body has no "text" field`)
	}
	return nil
}

// Generate posts req and returns the answer's text, the exact body and the
// transport events met on the way.
func (m *model) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return models.Reply{}, err
	}
	resp, events, err := m.tr.Do(ctx, func(ctx context.Context) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(body))
		if err == nil {
			r.Header.Set("Content-Type", "application/json")
		}
		return r, err
	}, check)
	if err != nil {
		return models.Reply{}, err
	}
	var a answer
	json.Unmarshal(resp.Body, &a) // checked above
	return models.Reply{Text: *a.Text, Body: resp.Body, Events: events}, nil
}

// Handler answers each request with {"text": answer(request)}.
func Handler(answer func(models.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req models.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, _ := json.Marshal(map[string]string{"text": answer(req)})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
}
