// Package failclosed runs the deterministic fail-closed client
// (the root package failclosed, imported as client) as a model backend, so it appears in the same counts
// tables as the models and baselines. Like the baselines it reads only the
// messages it is sent: it finds the tool result that the envelope or
// category condition adds to the last user message, decides it, and
// answers with the usual JSON. Where the message carries no such result
// (the paired conditions), or the result fails a check, it stops.
package failclosed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpstress/stress/conditions"
	client "github.com/mcpstress/stress/failclosed"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/study"
)

// Backend is the registry name of the fail-closed client.
const Backend = "fail_closed"

// NoResult is the reason recorded in Reply.Meta when the last user message
// carries no result after an EnvelopeLabel or CategoryLabel line.
const NoResult = "no_result"

func init() {
	models.Register(Backend, models.Backend{New: newBackend})
}

// backend is the fail-closed client in one mode.
type backend struct {
	mode client.Mode
}

var _ models.Model = (*backend)(nil)

// newBackend builds the client whose mode spec.Model names: "registry" or
// "explicit_action".
func newBackend(spec models.Spec) (models.Model, error) {
	m := client.Mode(spec.Model)
	if !m.Valid() {
		return nil, fmt.Errorf("model %q: unknown fail_closed mode %q (want %s or %s)", spec.Name, spec.Model, client.Registry, client.ExplicitAction)
	}
	return &backend{mode: m}, nil
}

// Generate decides the result in the last user message. Reply.Meta records
// the contract read ("envelope", "category" or absent), the reason of a
// stop and its message.
func (c *backend) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	if err := ctx.Err(); err != nil {
		return models.Reply{}, err
	}
	var last string
	for _, m := range req.Messages {
		if m.Role == conditions.User {
			last = m.Content
		}
	}
	meta := map[string]any{"mode": string(c.mode)}
	contract, raw := find(last)
	var d client.Decision
	switch contract {
	case conditions.ContractEnvelope:
		d = client.Decide(raw, c.mode)
	case conditions.ContractCategory:
		d = client.DecideCategory(raw, c.mode)
	case conditions.ContractShapeResult:
		d = client.DecideToolFailure(raw, c.mode, client.Call{Idempotent: idempotent(req.Messages), Now: study.ShapeEpoch})
	case conditions.ContractShapeError:
		d = client.DecideRateLimited(raw, c.mode)
	default:
		d = client.Decision{Policy: study.StopOrEscalate, Mode: c.mode, Reason: NoResult,
			Message: "the message carries no control envelope, error-category result or error-shape result"}
	}
	if contract != "" {
		meta["contract"] = string(contract)
	}
	if d.Reason != "" {
		meta["reason"], meta["message"] = string(d.Reason), d.Message
	}
	if d.Delay > 0 {
		meta["delay_ms"] = d.Delay.Milliseconds()
	}
	text, err := json.Marshal(struct {
		Status study.Status `json:"operation_status"`
		Policy study.Policy `json:"recovery_policy"`
	}{study.Failed, d.Policy})
	return models.Reply{Text: string(text), Meta: meta}, err
}

// find locates the contract an envelope, category or error-shape
// rendering adds to a message (conditions.Table's Contracts): the JSON
// value that follows the last line that opens one (conditions.ContractAt:
// EnvelopeLabel, CategoryLabel, ShapeResultLabel, ShapeErrorLabel). It
// returns the contract and the value's exact bytes, or "" when no label
// line is present. When a label is present but no JSON value follows,
// raw is the rest of the message, which the client then rejects with its
// own reason.
//
// Note: a label only counts as a whole line. The observation above it is
// indented JSON, whose strings cannot contain a line break, so a label
// quoted inside a server's message cannot be mistaken for the annotation.
func find(msg string) (contract conditions.Contract, raw []byte) {
	lines := strings.SplitAfter(msg, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		contract, ok := conditions.ContractAt(strings.TrimRight(lines[i], "\r\n"))
		if !ok {
			continue
		}
		rest := []byte(strings.Join(lines[i+1:], ""))
		dec := json.NewDecoder(bytes.NewReader(rest))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return contract, rest
		}
		return contract, v
	}
	return "", nil
}

// idempotent reports whether the messages of an action task show the
// failing call's tool with annotations.idempotentHint true (the tool list
// after conditions.ToolsLabel, the call after conditions.CallLabel); a
// label-task conversation shows no tools, so the tool is not known to be
// idempotent.
func idempotent(msgs []conditions.Message) bool {
	var tools []struct {
		Name        string `json:"name"`
		Annotations struct {
			IdempotentHint bool `json:"idempotentHint"`
		} `json:"annotations"`
	}
	var call struct {
		Tool string `json:"tool"`
	}
	for _, m := range msgs {
		if m.Role != conditions.User {
			continue
		}
		conditions.DecodeAfter(m.Content, conditions.ToolsLabel, &tools)
		conditions.DecodeAfter(m.Content, conditions.CallLabel, &call)
	}
	for _, t := range tools {
		if t.Name == call.Tool && call.Tool != "" {
			return t.Annotations.IdempotentHint
		}
	}
	return false
}
