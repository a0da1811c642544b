// Package models defines the small interface every model backend adapts to
// (a turn in, raw text out, plus metadata) and a registry of backends keyed
// by the manifest's backend name.
package models

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/study"
)

// Message is one chat message as a model receives it.
type Message = conditions.Message

// Request is one model call: the whole conversation so far and the sampling
// settings of this turn.
type Request struct {
	Messages    []Message      `json:"messages"`
	Seed        int64          `json:"seed"`        // per-turn seed, 0 ≤ Seed < 2^31
	Temperature float64        `json:"temperature"` // sampling temperature, ≥ 0
	Options     map[string]any `json:"options,omitempty"`
	// Tools are the functions the model may call natively (Ollama's and
	// OpenAI's tools); none when empty. A backend without native tool
	// calls refuses a request that has them.
	Tools []Tool `json:"tools,omitempty"`
}

// Tool is one function a model may call natively.
type Tool struct {
	Name        string          `json:"name"`                  // function name
	Description string          `json:"description,omitempty"` // what it does, shown to the model
	Parameters  json.RawMessage `json:"parameters,omitempty"`  // JSON schema of its arguments, sent exactly
}

// Reply is what a backend returns for one call.
type Reply struct {
	// Text is the model's answer text, exactly as produced; it is what the
	// answer parser reads.
	Text string
	// Thinking is the reasoning text the server returned apart from the
	// answer (Ollama's message.thinking, an OpenAI-compatible server's
	// reasoning_content or reasoning, an exec program's thinking), or "".
	// It is stored, never parsed as the answer.
	Thinking string
	// ToolCalls are the native tool calls the server returned, exactly as
	// it sent them (the message's tool_calls array), or nil; ParseToolCalls
	// reads them.
	ToolCalls json.RawMessage
	// Body is the exact response body the server sent, when there is one
	// (nil for in-process backends), unless it held a credential the
	// backend sends: then it is scrubbed (see Redacted).
	Body []byte
	// PromptTokens and OutputTokens are token counts when the backend gives
	// them, else 0.
	PromptTokens, OutputTokens int
	// Meta holds backend-specific facts worth recording (done_reason,
	// durations, system_fingerprint, ...).
	Meta map[string]any
	// Events are the transport faults met (and retried) during the call.
	Events []TransportEvent
	// Redacted says that Text, Body or Meta are not exactly what the
	// server sent: a credential the backend sends (an API key) was found
	// in them and replaced by "[redacted]" (see models/transport.Scrubber).
	Redacted bool
	// OriginalBodySHA256 is the lower-case hex sha256 of the body the
	// server sent, when Body was scrubbed; else "".
	OriginalBodySHA256 string
}

// StoppedEarly says why a reply's answer ended before the model finished
// it, from what its backend recorded in Meta: "length" at the token limit
// (an OpenAI-compatible finish_reason or Ollama's done_reason),
// "content_filter" when a provider's filter cut it, "refusal" when the
// model refused (OpenAI's message.refusal); "" when it ended normally or
// the backend does not say.
func StoppedEarly(meta map[string]any) string {
	if r, _ := meta["refusal"].(string); r != "" {
		return StoppedRefusal
	}
	for _, k := range []string{"finish_reason", "done_reason"} {
		if r, _ := meta[k].(string); r == StoppedLength || r == StoppedFilter {
			return r
		}
	}
	return ""
}

// Why an answer ended early (StoppedEarly).
const (
	StoppedLength  = "length"         // at the token limit
	StoppedFilter  = "content_filter" // cut by a provider's filter
	StoppedRefusal = "refusal"        // refused by the model
)

// TransportEvent is one transport fault a backend met during a call:
// connection refused, timeout, HTTP 429 or 5xx, a truncated or malformed
// body. It is never a model answer.
type TransportEvent struct {
	Attempt int       `json:"attempt"`          // 1-based attempt that failed
	Kind    string    `json:"kind"`             // e.g. "connect", "timeout", "http_status", "truncated", "malformed", "too_large"
	Status  int       `json:"status,omitempty"` // HTTP status, when there was one
	Error   string    `json:"error"`            // what went wrong (credentials scrubbed, a body clipped to 300 bytes)
	WaitMS  float64   `json:"wait_ms"`          // backoff before the next attempt, 0 when none followed
	At      time.Time `json:"at"`               // when the fault was seen
}

// CallError is the error a backend returns when a call failed for good
// after its retries; it carries the transport events seen on the way.
type CallError struct {
	Err    error
	Events []TransportEvent
}

// Error returns the text of the final failure.
func (e *CallError) Error() string { return e.Err.Error() }

// Unwrap returns the final failure.
func (e *CallError) Unwrap() error { return e.Err }

// Model is a backend able to answer one turn.
type Model interface {
	Generate(ctx context.Context, req Request) (Reply, error)
}

// Facts are what a server reports about a model (version, digest, family,
// parameter size, quantization, fingerprint, ...), recorded in the bundle.
type Facts map[string]any

// Verifier is implemented by models whose server can be checked before a
// run: Verify resolves the model on its server, checks the pinned
// identity (digest, model id, fingerprint) and returns what the server
// reported. An error means the run must not start.
type Verifier interface {
	Verify(ctx context.Context) (Facts, error)
}

// SeedChecker is implemented by models that can test whether their server
// honours seeds: one probe request sent twice with the same seed.
type SeedChecker interface {
	SeedCheck(ctx context.Context) (honoured bool, detail string, err error)
}

// Spec is what the manifest says about one model.
type Spec struct {
	Name    string         // label in results, unique in a manifest
	Backend string         // registry key, e.g. "baseline"
	Model   string         // the backend's own model identifier
	Digest  string         // pinned digest, "" when unpinned
	Host    string         // server address, "" for the backend's default
	Format  any            // output constraint: nil, "json", "schema" (the answer schema) or a JSON schema
	Options map[string]any // backend options passed through
	// Transport tunes the HTTP layer (timeouts, retries, breaker).
	Transport manifests.TransportSpec
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string
	// Pin is what a server without digests must report.
	Pin manifests.Pin
	// Parallel is the most calls in flight to Host at once (the manifest's
	// parallel; 0 means 1): an HTTP backend keeps that many connections
	// alive.
	Parallel int
}

// Factory builds a Model from its manifest spec.
type Factory func(spec Spec) (Model, error)

// Backend is a registered backend.
type Backend struct {
	// New builds a model from its spec.
	New Factory
	// Pinned says that the backend's models must carry a digest in the
	// manifest (a run refuses an unset one unless told to allow it).
	Pinned bool
	// Waits says that the backend's calls wait on a server or another
	// process (HTTP, a subprocess): a worker spends a decision waiting,
	// not computing (runner.Options.FitProcs).
	Waits bool
}

var (
	mu       sync.RWMutex
	registry = map[string]Backend{}
)

// Register makes a backend available under name. It panics if name is
// registered twice (a programming error).
func Register(name string, f Backend) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic("models: backend registered twice: " + name)
	}
	registry[name] = f
}

// Backends lists the registered backend names, sorted.
func Backends() []string {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Sorted(maps.Keys(registry))
}

// Lookup returns the backend registered under name.
func Lookup(name string) (Backend, error) {
	mu.RLock()
	b, ok := registry[name]
	mu.RUnlock()
	if !ok {
		return Backend{}, fmt.Errorf("unknown backend %q (registered: %v)", name, Backends())
	}
	return b, nil
}

// SpecOf returns the spec of the manifest's model md at host (one of
// md.Hosts()).
func SpecOf(md manifests.Model, host string) Spec {
	return Spec{Name: md.Name, Backend: md.Backend, Model: md.Model, Digest: md.Digest, Host: host, Format: md.Format,
		Options: md.Options, Transport: md.Transport, APIKeyEnv: md.APIKeyEnv, Pin: md.Pin, Parallel: md.Parallel}
}

// LookupModel returns the backend of models[i] of the manifest read from
// source and checks its pin: a backend whose models must be pinned needs
// a digest, unless allowUnpinned, and then unpinned is true. Errors name
// the manifest and the field.
func LookupModel(source string, i int, md manifests.Model, allowUnpinned bool) (b Backend, unpinned bool, err error) {
	b, err = Lookup(md.Backend)
	if err != nil {
		return b, false, fmt.Errorf("manifest %s: field models[%d].backend: %w", source, i, err)
	}
	if b.Pinned && md.Digest == "" {
		if !allowUnpinned {
			list := "stress models"
			if h := md.Hosts()[0]; h != "" {
				list += " -host " + redactedHost(h)
			}
			return b, false, fmt.Errorf("manifest %s: field models[%d].digest: model %q (%s) has no digest: run %q, copy the digest it lists for %s into models[%d].digest and check it with \"stress verify %s\"; or pass -allow-unpinned to run it unpinned (recorded in the bundle)",
				source, i, md.Name, md.Model, list, md.Model, i, source)
		}
		return b, true, nil
	}
	return b, false, nil
}

// redactedHost is host with any password masked.
func redactedHost(host string) string {
	u, err := url.Parse(host)
	if err != nil || u.User == nil {
		return host
	}
	return u.Redacted()
}

// New builds the model spec describes, through its registered backend.
func New(spec Spec) (Model, error) {
	b, err := Lookup(spec.Backend)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", spec.Name, err)
	}
	return b.New(spec)
}

// SeedProbe is the request the seed probe sends (twice, with the same
// seed): a backend's Verify may send it as its own probe and hand the
// reply to ProbeSeed, so that a preflight costs one request less.
func SeedProbe(options map[string]any) Request {
	return Request{
		Messages: []Message{
			{Role: "system", Content: "Answer with one JSON object."},
			{Role: "user", Content: "A tool call failed with: unknown tool. Choose a recovery policy."},
		},
		Seed:        20260819,
		Temperature: 1,
		Options:     options,
	}
}

// ProbeSeed tells whether m's server honours seeds: it sends SeedProbe
// twice with the same seed and compares the answer texts; first, when not
// nil, is the first answer, already received. Backends implement
// SeedChecker with it.
func ProbeSeed(ctx context.Context, m Model, options map[string]any, first *Reply) (honoured bool, detail string, err error) {
	req := SeedProbe(options)
	var a Reply
	if first != nil {
		a = *first
	} else if a, err = m.Generate(ctx, req); err != nil {
		return false, "", fmt.Errorf("seed probe: %w", err)
	}
	b, err := m.Generate(ctx, req)
	if err != nil {
		return false, "", fmt.Errorf("seed probe: %w", err)
	}
	if a.Text != b.Text {
		return false, fmt.Sprintf("same seed, different answers: %q vs %q", clip(a.Text), clip(b.Text)), nil
	}
	return true, fmt.Sprintf("same seed, same answer (%d bytes)", len(a.Text)), nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// WireFormat turns a manifest's format into the JSON a server's format
// field takes (Ollama's, and the exec protocol's): nil for none ("" or
// unset), "json", the answer's JSON schema for "schema", or a JSON schema
// object as given.
func WireFormat(f any) (json.RawMessage, error) {
	switch v := f.(type) {
	case nil:
		return nil, nil
	case string:
		switch v {
		case "":
			return nil, nil
		case "json":
			return json.RawMessage(`"json"`), nil
		case "schema":
			return json.Marshal(study.AnswerSchema())
		}
		return nil, fmt.Errorf(`want "", "json", "schema" or a JSON schema object, got %q`, v)
	case map[string]any:
		return json.Marshal(v)
	}
	return nil, fmt.Errorf("want a string or a JSON schema object, got %T", f)
}
