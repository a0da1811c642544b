// Package ollama is the Ollama backend: chat calls through /api/chat
// (non-streaming) with the manifest's options and output format, the exact
// response bytes kept, digest pinning against /api/tags and /api/show, and
// a seed-honouring probe. The option think (false, true, "low", "medium",
// "high") is sent as the request's think field on every call; the
// server's thinking text and native tool calls are kept apart from the
// answer. It uses the request and response types of
// github.com/ollama/ollama/api and sends them through models/transport, so
// faults are retried and recorded as transport events. Ollama has no API
// key; a password for a server behind an authenticating proxy, sent as
// Basic authorization with the host URL's user name, comes from the
// variable api_key_env names (or the host URL's user info, outside
// manifests), masked in messages and facts and scrubbed by the
// transport's Scrubber from everything the server sends back.
package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/envconfig"
	"github.com/ollama/ollama/types/model"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/transport"
)

// Backend is the registry name of this backend.
const Backend = "ollama"

// DefaultHost is used when neither the manifest nor OLLAMA_HOST names one.
const DefaultHost = "http://127.0.0.1:11434"

func init() {
	models.Register(Backend, models.Backend{Pinned: true, Waits: true, New: func(s models.Spec) (models.Model, error) { return New(s, transport.FromSpec(s)) }})
}

// Model is one Ollama model on one server.
type Model struct {
	spec   models.Spec
	host   *url.URL
	chat   string // host's /api/chat URL
	format json.RawMessage
	tr     *transport.Client
	api    *api.Client
	scrub  *transport.Scrubber // the host's credentials, for what the api client reads
	from   string              // where the host came from (hostNote)
}

var (
	_ models.Model       = (*Model)(nil)
	_ models.Verifier    = (*Model)(nil)
	_ models.SeedChecker = (*Model)(nil)
)

// New builds a model from its manifest spec; opt tunes the transport
// (timeouts, retries, breaker).
func New(spec models.Spec, opt transport.Options) (*Model, error) {
	host, err := ResolveHost(spec.Host)
	if err != nil {
		return nil, fmt.Errorf("model %q: host: %w", spec.Name, err)
	}
	if spec.APIKeyEnv != "" {
		// The password comes from the environment, so that no manifest
		// (stored whole in every bundle) holds it.
		pw := os.Getenv(spec.APIKeyEnv)
		if pw == "" {
			return nil, fmt.Errorf("model %q: api_key_env: environment variable %s is empty or unset", spec.Name, spec.APIKeyEnv)
		}
		name := ""
		if host.User != nil {
			if _, set := host.User.Password(); set {
				return nil, fmt.Errorf("model %q: api_key_env: the host URL has a password too; give it one way", spec.Name)
			}
			name = host.User.Username()
		}
		host.User = url.UserPassword(name, pw)
	}
	format, err := formatOf(spec.Format)
	if err != nil {
		return nil, fmt.Errorf("model %q: format: %w", spec.Name, err)
	}
	if _, _, err := models.Think(spec.Options); err != nil {
		return nil, fmt.Errorf("model %q: %w", spec.Name, err)
	}
	if err := checkOptions(spec.Options); err != nil {
		return nil, fmt.Errorf("model %q: options: %w", spec.Name, err)
	}
	if opt.Timeout == 0 {
		opt.Timeout = 5 * time.Minute // a cold model load on a CPU can be slow
	}
	// Note: the api package's own client has no default timeout; give it
	// one, and use it only for the metadata endpoints.
	hc := &http.Client{Timeout: time.Minute}
	opt.Secrets = slices.Concat(opt.Secrets, transport.URLSecrets(host))
	tr := transport.New(opt)
	return &Model{spec: spec, host: host, chat: host.JoinPath("/api/chat").String(), format: format, tr: tr, api: api.NewClient(host, hc), scrub: tr.Scrubber(), from: hostNote(spec.Host)}, nil
}

// hostNote says where ResolveHost(host) takes the server from when host
// does not name it: "" when it does.
func hostNote(host string) string {
	switch {
	case host != "":
		return ""
	case os.Getenv("OLLAMA_HOST") != "":
		return "from OLLAMA_HOST"
	}
	return "the default host"
}

// UnreachableHint is what an error about an Ollama server that cannot be
// reached tells the user to do.
const UnreachableHint = `is Ollama running? start it with "ollama serve", or set OLLAMA_HOST, the manifest's host or stress models -host to the server's URL`

// unreachable returns err as a *models.UnreachableError when it says the
// server at u could not be reached, else nil.
func unreachable(u *url.URL, from string, err error) error {
	why := transport.Unreachable(err)
	if why == "" {
		return nil
	}
	return &models.UnreachableError{Server: "Ollama", Host: u.Redacted(), Note: from, Reason: why, Hint: UnreachableHint, Err: err}
}

// ResolveHost returns the server's base URL: host if set, else
// $OLLAMA_HOST (read as the ollama client reads it, envconfig.Var), else
// DefaultHost. As in the ollama client (envconfig.Host), a host without a
// scheme is http:// on port 11434 unless it names a port ("0.0.0.0" is
// http://0.0.0.0:11434), and a bare ollama.com is https://ollama.com:443;
// unlike it, a port that is not a number is an error, not a warning.
func ResolveHost(host string) (*url.URL, error) {
	if host == "" {
		host = envconfig.Var("OLLAMA_HOST")
	}
	switch {
	case host == "":
		host = DefaultHost
	case host == "ollama.com":
		host = "https://ollama.com:443"
	case !strings.Contains(host, "://"):
		hostport, path, slash := strings.Cut(host, "/")
		if _, _, err := net.SplitHostPort(hostport); err != nil && hostport != "" {
			hostport = net.JoinHostPort(strings.Trim(hostport, "[]"), defaultPort)
		}
		host = "http://" + hostport
		if slash {
			host += "/" + path
		}
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("want http://host:port, got %q", host)
	}
	return u, nil
}

// defaultPort is the ollama client's port for a host without a scheme.
const defaultPort = "11434"

// checkOptions checks the options as the server reads them (the api
// package's Options.FromMap, on the JSON a request carries), so that a
// value of the wrong type ("num_predict": "many") is refused before a
// run, not answered with an HTTP 500 on every call. A name the api
// package does not know is left to the server, which may be newer.
func checkOptions(options map[string]any) error {
	known := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[api.Options]()) {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" {
			known[name] = true
		}
	}
	read := map[string]any{}
	for k, v := range options {
		if known[k] {
			read[k] = v
		}
	}
	b, err := json.Marshal(read)
	if err == nil {
		err = json.Unmarshal(b, &read)
	}
	if err != nil {
		return err
	}
	o := api.DefaultOptions()
	return o.FromMap(read)
}

// formatOf turns a manifest format into Ollama's (models.WireFormat).
func formatOf(f any) (json.RawMessage, error) { return models.WireFormat(f) }

// chatOptions merges the manifest's options with the turn's temperature
// and seed; think is not a sampling option (it travels as the request's
// think field). Note: seed and temperature go in the options map, because
// the api package's typed Seed field drops a seed of 0.
func chatOptions(req models.Request) map[string]any {
	o := make(map[string]any, len(req.Options)+2)
	for k, v := range req.Options {
		if k != models.ThinkOption {
			o[k] = v
		}
	}
	o["temperature"] = req.Temperature
	o["seed"] = req.Seed
	return o
}

// chatRequest is api.ChatRequest with the tools sent exactly as the study
// wrote their schemas (the api package's typed schema would drop what it
// does not model); the outer field shadows the embedded one.
type chatRequest struct {
	*api.ChatRequest
	Tools []json.RawMessage `json:"tools,omitempty"`
}

// body encodes one chat request: the messages, the options, the format
// and, when the request's options set it, think (false, true or a level),
// sent on every call so the server never chooses for the study.
func (m *Model) body(req models.Request) ([]byte, error) {
	msgs := make([]api.Message, len(req.Messages))
	for i, msg := range req.Messages {
		msgs[i] = api.Message{Role: msg.Role, Content: msg.Content}
	}
	stream := false
	cr := &api.ChatRequest{Model: m.spec.Model, Messages: msgs, Stream: &stream, Format: m.format, Options: chatOptions(req)}
	think, set, err := models.Think(req.Options)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", m.spec.Name, err)
	}
	if set {
		cr.Think = &api.ThinkValue{Value: think}
	}
	tools, err := models.WireTools(req.Tools)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", m.spec.Name, err)
	}
	return json.Marshal(chatRequest{ChatRequest: cr, Tools: tools})
}

// toolCallsOf returns the message's tool_calls array exactly as the body
// holds it, or nil.
func toolCallsOf(body []byte) json.RawMessage {
	if !bytes.Contains(body, []byte(`"tool_calls"`)) {
		return nil
	}
	var raw struct {
		Message struct {
			ToolCalls json.RawMessage `json:"tool_calls"`
		} `json:"message"`
	}
	if json.Unmarshal(body, &raw) != nil || string(raw.Message.ToolCalls) == "null" {
		return nil
	}
	return raw.Message.ToolCalls
}

// Generate sends one non-streaming chat request. The answer is the
// message's content; its thinking (a thinking model's reasoning, which
// the server splits off when think is on) and tool calls are kept apart.
func (m *Model) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	body, err := m.body(req)
	if err != nil {
		return models.Reply{}, err
	}
	var chat api.ChatResponse
	resp, events, err := m.tr.Do(ctx, m.post(body), func(b []byte) error {
		chat = api.ChatResponse{}
		if err := json.Unmarshal(b, &chat); err != nil {
			return fmt.Errorf("chat response: %w", err)
		}
		if !chat.Done {
			return errors.New("chat response: done is false (incomplete response)")
		}
		return nil
	})
	if err != nil {
		return models.Reply{Events: events}, err
	}
	r := m.tr.Reply(resp, events, chat.Message.Content, map[string]any{
		"model":                   chat.Model,
		"done_reason":             chat.DoneReason,
		"total_duration_ns":       int64(chat.TotalDuration),
		"load_duration_ns":        int64(chat.LoadDuration),
		"prompt_eval_duration_ns": int64(chat.PromptEvalDuration),
		"eval_duration_ns":        int64(chat.EvalDuration),
	})
	m.tr.Extras(&r, chat.Message.Thinking, toolCallsOf(resp.Body))
	r.PromptTokens, r.OutputTokens = chat.PromptEvalCount, chat.EvalCount
	return r, nil
}

// post builds the chat request of body.
func (m *Model) post(body []byte) func(context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.chat, bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
		return req, err
	}
}

// info is what the server reports about a model.
type info struct {
	Name          string `json:"name"`
	Digest        string `json:"digest"` // full digest from /api/tags
	Family        string `json:"family"`
	ParameterSize string `json:"parameter_size"`
	Quantization  string `json:"quantization"`
	Format        string `json:"format"`
	ServerVersion string `json:"server_version"`
	Host          string `json:"host"` // the server's URL, any password masked
	// Capabilities are what /api/show says the model can do
	// ("completion", "tools", "thinking", …); servers before v0.6.6 say
	// nothing. Resolve fills it; List leaves it empty.
	Capabilities []string `json:"capabilities,omitempty"`
}

// List returns every model on the server at host (ResolveHost) with its
// full digest. A server that cannot be reached is a
// *models.UnreachableError saying how to start it or name another.
func List(ctx context.Context, host string) ([]info, error) {
	u, err := ResolveHost(host)
	if err != nil {
		return nil, err
	}
	return list(ctx, u, hostNote(host))
}

// list is List of the server at u, whose host came from where from says.
func list(ctx context.Context, u *url.URL, from string) ([]info, error) {
	c := api.NewClient(u, &http.Client{Timeout: time.Minute})
	sc := transport.NewScrubber(transport.URLSecrets(u)...)
	version, err := c.Version(ctx)
	if err != nil {
		if ue := unreachable(u, from, sc.Error(err)); ue != nil {
			return nil, ue
		}
		return nil, fmt.Errorf("ollama at %s: %w", u.Redacted(), sc.Error(err))
	}
	list, err := c.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("ollama at %s: /api/tags: %w", u.Redacted(), sc.Error(err))
	}
	out := make([]info, len(list.Models))
	for i, lm := range list.Models {
		out[i] = info{Name: lm.Name, Digest: lm.Digest, Family: lm.Details.Family, ParameterSize: lm.Details.ParameterSize,
			Quantization: lm.Details.QuantizationLevel, Format: lm.Details.Format, ServerVersion: version, Host: u.Redacted()}
	}
	return out, nil
}

// Resolve finds the model on its server: the full digest from /api/tags,
// the details from /api/show. Its name matches as the server matches a
// chat's model (types/model.ParseName: default host, namespace library
// and tag latest, every part compared without case), so "Llama3.2" and
// "library/llama3.2:latest" find llama3.2:latest.
func (m *Model) Resolve(ctx context.Context) (info, error) {
	all, err := list(ctx, m.host, m.from)
	if err != nil {
		return info{}, err
	}
	want := model.ParseName(m.spec.Model)
	for _, in := range all {
		// As the server finds a model: default host, namespace and tag
		// filled in, every part compared without case.
		if want.IsValid() && model.ParseName(in.Name).EqualFold(want) {
			show, err := m.api.Show(ctx, &api.ShowRequest{Model: m.spec.Model})
			if err != nil {
				return in, fmt.Errorf("ollama at %s: /api/show %s: %w", m.host.Redacted(), m.spec.Model, m.scrub.Error(err))
			}
			d := show.Details
			in.Family, in.ParameterSize, in.Quantization, in.Format = d.Family, d.ParameterSize, d.QuantizationLevel, d.Format
			for _, c := range show.Capabilities {
				in.Capabilities = append(in.Capabilities, string(c))
			}
			return in, nil
		}
	}
	return info{ServerVersion: firstVersion(all), Host: m.host.Redacted()}, fmt.Errorf("model %q (%s) is not on the server at %s: pull it with %q", m.spec.Name, m.spec.Model, m.host.Redacted(), pullCommand(m.host, m.spec.Model))
}

// PullCommand is the shell command that pulls model onto the server at
// host (as ResolveHost reads it): "ollama pull MODEL", with OLLAMA_HOST
// set when the ollama client would use another server (but not to a URL
// with credentials, which the command would show).
func PullCommand(host, model string) string {
	u, err := ResolveHost(host)
	if err != nil {
		return "ollama pull " + model
	}
	return pullCommand(u, model)
}

func pullCommand(u *url.URL, model string) string {
	cmd := "ollama pull " + model
	def, err := ResolveHost("")
	if err == nil && u.User == nil && strings.TrimSuffix(def.String(), "/") != strings.TrimSuffix(u.String(), "/") {
		cmd = "OLLAMA_HOST=" + u.String() + " " + cmd
	}
	return cmd
}

func firstVersion(all []info) string {
	if len(all) > 0 {
		return all[0].ServerVersion
	}
	return ""
}

// Verify checks the model's full digest against the manifest's. A missing
// model is an error naming the command that pulls it (PullCommand), a
// different digest one naming the model, the expected and the actual
// digest, and an unreachable server a *models.UnreachableError naming the
// model.
func (m *Model) Verify(ctx context.Context) (models.Facts, error) {
	in, err := m.Resolve(ctx)
	for _, f := range []*string{&in.Name, &in.Digest, &in.Family, &in.ParameterSize, &in.Quantization, &in.Format, &in.ServerVersion} {
		*f, _ = m.scrub.String(*f)
	}
	facts := models.Facts{"backend": Backend, "model": m.spec.Model, "host": in.Host, "server_version": in.ServerVersion,
		"digest": in.Digest, "family": in.Family, "parameter_size": in.ParameterSize, "quantization": in.Quantization, "format": in.Format}
	if in.Capabilities != nil {
		caps := make([]string, len(in.Capabilities))
		for i, c := range in.Capabilities {
			caps[i], _ = m.scrub.String(c)
		}
		facts["capabilities"] = caps
	}
	// Note: an unset think is recorded as such: a server since v0.9 then
	// thinks by default for a model with the thinking capability.
	if think, set, _ := models.Think(m.spec.Options); set {
		facts["think"] = think
	} else {
		facts["think"] = "unset (the server's default)"
	}
	if ue := (*models.UnreachableError)(nil); errors.As(err, &ue) {
		ue.Models = append(ue.Models, m.spec.Name)
	}
	if err != nil {
		return facts, err
	}
	want := strings.TrimPrefix(m.spec.Digest, "sha256:")
	if want == "" {
		facts["pinned"] = false
		return facts, nil
	}
	facts["pinned"] = true
	if in.Digest != want {
		return facts, fmt.Errorf("model %q (%s): digest mismatch: manifest expects %s, server at %s has %s", m.spec.Name, m.spec.Model, want, in.Host, in.Digest)
	}
	return facts, nil
}

// SeedCheck sends one probe request twice with the same seed and compares
// the raw answers.
func (m *Model) SeedCheck(ctx context.Context) (bool, string, error) {
	return models.ProbeSeed(ctx, m, m.spec.Options, nil)
}
