package exec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mcpstress/stress/models"
)

// Protocol is the version of the line protocol this backend speaks; every
// request carries it, and a reply that names another is refused.
const Protocol = "stress-exec/1"

// Request types.
const (
	TypeHello    = "hello"    // sent once when the program starts; the reply's meta is recorded
	TypeGenerate = "generate" // one model call
)

// Hello is the first request a program receives after it starts. Its reply
// needs only the id; the reply's meta (name, version, the model it
// serves, …) is recorded among the model's facts in manifest.json.
type Hello struct {
	ID       int64  `json:"id"` // always the first member of the line
	Protocol string `json:"protocol"`
	Type     string `json:"type"`               // TypeHello
	Model    string `json:"model"`              // the manifest's model id
	Endpoint string `json:"endpoint,omitempty"` // the manifest's host or endpoint, if any
	Parallel int    `json:"parallel"`           // the most requests in flight at once, ≥ 1
}

// Call is one model call as a program receives it: one line of JSON on
// its stdin.
type Call struct {
	ID          int64             `json:"id"` // always the first member of the line
	Protocol    string            `json:"protocol"`
	Type        string            `json:"type"`  // TypeGenerate
	Model       string            `json:"model"` // the manifest's model id
	Messages    []models.Message  `json:"messages"`
	Seed        int64             `json:"seed"`              // the turn's seed, 0 ≤ seed < 2^31
	Temperature float64           `json:"temperature"`       // sampling temperature, ≥ 0
	Options     map[string]any    `json:"options,omitempty"` // the manifest's options, minus the backend's own
	Format      json.RawMessage   `json:"format,omitempty"`  // "json", or a JSON schema (the answer's, for format: schema)
	Tools       []json.RawMessage `json:"tools,omitempty"`   // native tools, in OpenAI's and Ollama's shape
}

// Reply is what a program writes for one request: one line of JSON on its
// stdout, in any order relative to other replies, matched by id.
type Reply struct {
	ID           json.RawMessage `json:"id"`                 // the request's id (a number, or a string holding it)
	Protocol     string          `json:"protocol,omitempty"` // Protocol, or absent
	Text         *string         `json:"text"`               // the answer text, required unless error is set
	Thinking     string          `json:"thinking,omitempty"`
	ToolCalls    json.RawMessage `json:"tool_calls,omitempty"`
	PromptTokens int             `json:"prompt_tokens,omitempty"`
	OutputTokens int             `json:"output_tokens,omitempty"`
	Meta         map[string]any  `json:"meta,omitempty"`
	// Error says the call failed (a vendor API's 503, a quota): a
	// transport fault, retried like one, never an answer.
	Error string `json:"error,omitempty"`
}

// replyID reads a reply's id: a JSON integer or a string holding one.
func replyID(raw json.RawMessage) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, errors.New("no id")
	}
	s := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("id %s is not an integer", clip(raw, 40))
	}
	return id, nil
}

// parseReply decodes one stdout line.
func parseReply(line []byte) (Reply, int64, error) {
	var r Reply
	if err := json.Unmarshal(line, &r); err != nil {
		return r, 0, fmt.Errorf("not a JSON reply: %w", err)
	}
	id, err := replyID(r.ID)
	if err != nil {
		return r, 0, err
	}
	if r.Protocol != "" && r.Protocol != Protocol {
		return r, id, fmt.Errorf("reply speaks protocol %q, want %q", r.Protocol, Protocol)
	}
	return r, id, nil
}
