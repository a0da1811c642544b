// Package openai is the backend for any OpenAI-compatible chat-completions
// server (vLLM, llama.cpp's server, LM Studio, Ollama's /v1, hosted APIs).
// It uses the request and response types of
// github.com/sashabaranov/go-openai and sends them through
// models/transport, keeping the exact response bytes. The API key comes
// from an environment variable the manifest names and never reaches
// results, logs or error messages: the transport's Scrubber removes it
// (and a host URL's password) from everything the server sends back, and
// a reply it was removed from is marked Redacted. A reasoning model's
// reasoning_content (or reasoning) and native tool calls are kept apart
// from the answer.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"
	sjson "github.com/segmentio/encoding/json"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/transport"
	"github.com/mcpstress/stress/study"
)

// backend is the registry name of this backend.
const backend = "openai"

func init() {
	models.Register(backend, models.Backend{Waits: true, New: func(s models.Spec) (models.Model, error) { return New(s, transport.FromSpec(s)) }})
}

// Model is one model on one OpenAI-compatible server.
type Model struct {
	spec    models.Spec
	base    *url.URL // ends in /v1 (or the server's API root)
	chat    string   // base's chat/completions URL
	where   string   // base with any password masked, for messages and facts
	key     string
	secrets []string // key and the base URL's credentials
	format  []byte   // the response_format member, encoded (nil: none)
	tr      *transport.Client
	// once is tr with a single attempt: Verify's first try, so that a
	// server that is down is reported at once, not after the retries.
	once *transport.Client
	// probed is Verify's probe reply, the seed probe's first answer.
	probed *models.Reply
}

var (
	_ models.Model       = (*Model)(nil)
	_ models.Verifier    = (*Model)(nil)
	_ models.SeedChecker = (*Model)(nil)
)

// New builds a model from its manifest spec. spec.Host is the API base URL
// (e.g. http://127.0.0.1:8000/v1); the API key is read from the variable
// spec.APIKeyEnv names, if any.
func New(spec models.Spec, opt transport.Options) (*Model, error) {
	if spec.Host == "" {
		return nil, fmt.Errorf("model %q: host: an OpenAI-compatible backend needs the API base URL, e.g. http://127.0.0.1:8000/v1", spec.Name)
	}
	host := spec.Host
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	base, err := url.Parse(host)
	if err != nil || base.Host == "" || (base.Scheme != "http" && base.Scheme != "https") {
		return nil, fmt.Errorf("model %q: host: want http(s)://host:port/v1, got %q", spec.Name, spec.Host)
	}
	m := &Model{spec: spec, base: base, chat: base.JoinPath("chat/completions").String(), where: base.Redacted()}
	if spec.APIKeyEnv != "" {
		m.key = os.Getenv(spec.APIKeyEnv)
		if m.key == "" {
			return nil, fmt.Errorf("model %q: api_key_env: environment variable %s is empty or unset", spec.Name, spec.APIKeyEnv)
		}
	}
	m.secrets = slices.Concat(opt.Secrets, []string{m.key}, transport.URLSecrets(base))
	opt.Secrets = m.secrets
	m.tr = transport.New(opt)
	opt.MaxAttempts = 1
	m.once = transport.New(opt)
	for k := range spec.Options {
		if err := checkOption(spec.Name, k); err != nil {
			return nil, err
		}
	}
	format, err := responseFormat(spec.Format)
	if err != nil {
		return nil, fmt.Errorf("model %q: format: %w", spec.Name, err)
	}
	if format != nil {
		if m.format, err = json.Marshal(format); err != nil {
			return nil, fmt.Errorf("model %q: format: %w", spec.Name, err)
		}
	}
	return m, nil
}

// rawSchema lets a schema map be used where go-openai wants a json.Marshaler.
type rawSchema map[string]any

func (r rawSchema) MarshalJSON() ([]byte, error) { return json.Marshal(map[string]any(r)) }

// responseFormat maps a manifest format: "" none; "json" json_object;
// "schema" or a schema object json_schema.
func responseFormat(f any) (*goopenai.ChatCompletionResponseFormat, error) {
	var schema map[string]any
	switch v := f.(type) {
	case nil:
		return nil, nil
	case string:
		switch v {
		case "":
			return nil, nil
		case "json":
			return &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}, nil
		case "schema":
			schema = study.AnswerSchema()
		default:
			return nil, fmt.Errorf(`want "", "json", "schema" or a JSON schema object, got %q`, v)
		}
	case map[string]any:
		schema = v
	default:
		return nil, fmt.Errorf("want a string or a JSON schema object, got %T", f)
	}
	return &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{Name: "recovery_answer", Schema: rawSchema(schema), Strict: true}}, nil
}

// body builds the request JSON.
//
// Note: go-openai's Temperature is a float32 with omitempty, so a
// temperature of 0 would vanish and 0.7 would be sent as 0.699999988; the
// exact value is set in the JSON instead. max_tokens and top_p come from the
// manifest's options.
func (m *Model) body(req models.Request) ([]byte, error) {
	b := chatBody{Model: m.spec.Model, Messages: make([]message, len(req.Messages)), Seed: int(req.Seed), ResponseFormat: m.format, Temperature: req.Temperature}
	for i, msg := range req.Messages {
		b.Messages[i] = message{Role: msg.Role, Content: msg.Content}
	}
	if len(req.Tools) > 0 {
		tools, err := models.WireTools(req.Tools)
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", m.spec.Name, err)
		}
		b.Tools = tools
	}
	body, err := json.Marshal(&b)
	if err != nil || len(req.Options) == 0 {
		return body, err
	}
	// The options follow the fields, in the order of their names.
	keys := make([]string, 0, len(req.Options))
	for k := range req.Options {
		if err := checkOption(m.spec.Name, k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	body = body[:len(body)-1]
	for _, k := range keys {
		v, err := json.Marshal(req.Options[k])
		if err != nil {
			return nil, fmt.Errorf("model %q: options.%s: %w", m.spec.Name, k, err)
		}
		body = append(strconv.AppendQuote(append(body, ','), k), ':')
		body = append(body, v...)
	}
	return append(body, '}'), nil
}

// chatBody is the request's fields go-openai would write for this request
// (model, messages, seed, stream, response_format), the exact temperature
// and the native tools; the options are appended after them.
// Note: encoding a struct instead of the same fields as a map (whose keys
// encoding/json sorts) took BenchmarkBody from 7.3 to 5.4 µs and from 23
// allocations to 4; most of what is left is escaping the prompt's text.
type chatBody struct {
	Model          string            `json:"model"`
	Messages       []message         `json:"messages"`
	Seed           int               `json:"seed"`
	Stream         bool              `json:"stream"`
	ResponseFormat json.RawMessage   `json:"response_format,omitempty"`
	Temperature    float64           `json:"temperature"`
	Tools          []json.RawMessage `json:"tools,omitempty"`
}

// message is a chat message as go-openai's ChatCompletionMessage writes
// one of text: its encoder (MarshalJSON, whose output encoding/json then
// compacts again) took most of the time of building a body.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// options are the request fields this backend passes through from the
// manifest's options: sampling, reasoning and tool-call controls.
const options = "max_tokens, max_completion_tokens, top_p, stop, presence_penalty, frequency_penalty, reasoning_effort, chat_template_kwargs, tool_choice, parallel_tool_calls"

// checkOption accepts the options this backend passes through.
func checkOption(model, k string) error {
	switch k {
	case "max_tokens", "top_p", "max_completion_tokens", "stop", "presence_penalty", "frequency_penalty",
		"reasoning_effort", "chat_template_kwargs", "tool_choice", "parallel_tool_calls":
		return nil
	case models.ThinkOption:
		// Note: OpenAI-compatible servers have no one think field; each
		// takes its own, and they are sent as written.
		return fmt.Errorf("model %q: options.think: OpenAI-compatible servers have no think field; set reasoning_effort (OpenAI; Ollama's /v1: none, low, medium, high) or chat_template_kwargs: {enable_thinking: false} (vLLM, SGLang)", model)
	}
	return fmt.Errorf("model %q: options.%s: not an option this backend sends (%s)", model, k, options)
}

// extras are the parts of a choice's message that go-openai's types do
// not keep as sent: the reasoning text (reasoning_content, as DeepSeek
// and vLLM name it, or reasoning, as Ollama's /v1 and newer vLLM do) and
// the tool calls, raw.
type extras struct {
	Choices []struct {
		Message struct {
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        json.RawMessage `json:"reasoning"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
}

// extrasOf returns the first choice's reasoning text and raw tool calls.
func extrasOf(body []byte) (thinking string, toolCalls json.RawMessage) {
	if !bytes.Contains(body, []byte(`"reasoning`)) && !bytes.Contains(body, []byte(`"tool_calls"`)) {
		return "", nil
	}
	var x extras
	if json.Unmarshal(body, &x) != nil || len(x.Choices) == 0 {
		return "", nil
	}
	msg := x.Choices[0].Message
	thinking = msg.ReasoningContent
	if thinking == "" {
		// reasoning is a string on most servers; keep an object as JSON.
		if err := json.Unmarshal(msg.Reasoning, &thinking); err != nil && len(msg.Reasoning) > 0 && string(msg.Reasoning) != "null" {
			thinking = string(msg.Reasoning)
		}
	}
	if string(msg.ToolCalls) != "null" {
		toolCalls = msg.ToolCalls
	}
	return thinking, toolCalls
}

// jsonDepth is encoding/json's bound on nesting, which segmentio's
// decoder does not have.
const jsonDepth = 10000

// decodeAnswer decodes a chat completion into cr, as encoding/json
// would. Note: segmentio's decoder has encoding/json's semantics but for
// its bound on nesting (checked first). For the floor's answer
// (scripts/floor) encoding/json took 5.0 µs (BenchmarkDecode),
// segmentio's decoder 3.1, and 2.8 with room for one choice made first
// (otherwise it makes room for several, 3 KB) and the nesting checked;
// go-openai's own decoder still reads the message.
func decodeAnswer(b []byte, cr *goopenai.ChatCompletionResponse) error {
	if err := input.CheckJSONDepth(b, jsonDepth); err != nil {
		return err
	}
	*cr = goopenai.ChatCompletionResponse{Choices: make([]goopenai.ChatCompletionChoice, 0, 1)}
	return sjson.Unmarshal(b, cr)
}

// Generate sends one chat completion.
func (m *Model) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	return m.generate(ctx, m.tr, req)
}

func (m *Model) generate(ctx context.Context, tr *transport.Client, req models.Request) (models.Reply, error) {
	body, err := m.body(req)
	if err != nil {
		return models.Reply{}, err
	}
	var cr goopenai.ChatCompletionResponse
	resp, events, err := tr.Do(ctx, m.post(body), func(b []byte) error {
		if err := decodeAnswer(b, &cr); err != nil {
			return fmt.Errorf("chat completion: %w", err)
		}
		if len(cr.Choices) == 0 {
			// Note: some proxies answer a provider's failure with 200 and
			// an error object; its message says more than "no choices".
			var e goopenai.ErrorResponse
			if json.Unmarshal(b, &e) == nil && e.Error != nil && e.Error.Message != "" {
				return fmt.Errorf("chat completion: no choices: %s", e.Error.Message)
			}
			return errors.New("chat completion: no choices")
		}
		return nil
	})
	if err != nil {
		return models.Reply{Events: events}, err
	}
	ch := cr.Choices[0]
	meta := map[string]any{
		"model":              cr.Model,
		"system_fingerprint": cr.SystemFingerprint,
		"finish_reason":      string(ch.FinishReason),
		"usage":              cr.Usage,
		"id":                 cr.ID,
	}
	if ch.Message.Refusal != "" {
		meta["refusal"] = ch.Message.Refusal
	}
	r := m.tr.Reply(resp, events, ch.Message.Content, meta)
	thinking, toolCalls := extrasOf(resp.Body)
	m.tr.Extras(&r, thinking, toolCalls)
	r.PromptTokens, r.OutputTokens = cr.Usage.PromptTokens, cr.Usage.CompletionTokens
	return r, nil
}

// post builds the chat completion request of body.
func (m *Model) post(body []byte) func(context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.chat, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if m.key != "" {
			req.Header.Set("Authorization", "Bearer "+m.key)
		}
		return req, nil
	}
}

// unreachableHint is what an error about a server that cannot be reached
// tells the user to do.
const unreachableHint = "is the server running? start it, or check the model's host in the manifest (the API base URL, e.g. http://127.0.0.1:8000/v1)"

// Verify checks what the server reports against the manifest's pin: the
// model id and system_fingerprint of a probe completion. The probe is the
// seed probe's request, and SeedCheck takes its reply as the first of its
// two answers, so a preflight sends two requests (one with seed_check:
// off). It does not ask GET /models: the probe says which model served it,
// and many OpenAI-compatible servers answer that path 404. Without a pin
// it only records what the server reported.
func (m *Model) Verify(ctx context.Context) (models.Facts, error) {
	facts := models.Facts{"backend": backend, "model": m.spec.Model, "host": m.where}
	down := func(err error) error {
		if why := transport.Unreachable(err); why != "" {
			return &models.UnreachableError{Server: "the OpenAI-compatible server", Host: m.where, Models: []string{m.spec.Name}, Reason: why, Hint: unreachableHint, Err: err}
		}
		return nil
	}
	probe := models.SeedProbe(m.spec.Options)
	reply, err := m.generate(ctx, m.once, probe)
	if ue := down(err); ue != nil {
		return facts, ue
	}
	if transport.Retryable(err) { // a fault the transport retries: retried as any call
		reply, err = m.Generate(ctx, probe)
	}
	if ue := down(err); ue != nil {
		return facts, ue
	}
	if err != nil {
		hint := ""
		var ce *models.CallError
		if errors.As(err, &ce) && len(ce.Events) > 0 && ce.Events[len(ce.Events)-1].Status == http.StatusNotFound && !strings.HasSuffix(strings.TrimSuffix(m.base.Path, "/"), "/v1") {
			hint = " (the host is the API base URL, to which chat/completions is added: most servers want it to end in /v1)"
		}
		return facts, fmt.Errorf("model %q at %s: probe completion: %w%s", m.spec.Name, m.where, err, hint)
	}
	m.probed = &reply
	got, _ := reply.Meta["model"].(string)
	fp, _ := reply.Meta["system_fingerprint"].(string)
	facts["served_model"], facts["system_fingerprint"] = got, fp
	var errs []error
	if p := m.spec.Pin.Model; p != "" && p != got {
		errs = append(errs, fmt.Errorf("model %q: pin.model: manifest expects %q, server at %s reports %q", m.spec.Name, p, m.where, got))
	}
	if p := m.spec.Pin.SystemFingerprint; p != "" && p != fp {
		errs = append(errs, fmt.Errorf("model %q: pin.system_fingerprint: manifest expects %q, server at %s reports %q", m.spec.Name, p, m.where, fp))
	}
	facts["pinned"] = m.spec.Pin != (manifests.Pin{}) && len(errs) == 0
	return facts, errors.Join(errs...)
}

// SeedCheck sends the seed probe twice with the same seed and compares
// the answers; after Verify, once more (Verify's probe was the first).
func (m *Model) SeedCheck(ctx context.Context) (bool, string, error) {
	first := m.probed
	m.probed = nil
	return models.ProbeSeed(ctx, m, m.spec.Options, first)
}
