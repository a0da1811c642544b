// Package rules runs the capture rules (coding/rules) as a model backend:
// the rules coder of stress code. Its request is a record (Request): the
// surface, cause, target and observation the rules read; its answer is
// their coding of the record's profile, in the coding answer's JSON
// (package coder parses it as a model's). It calls no model.
package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpstress/stress/coding/rules"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/study"
)

// Backend is the registry name of the rules coder.
const Backend = "rules"

// Model is the one model id of the backend.
const Model = "capture-rules"

func init() {
	models.Register(Backend, models.Backend{New: newCoder})
}

// coder is the rules coder.
type coder struct{}

var _ models.Model = coder{}

// newCoder builds the rules coder; spec.Model must be Model.
func newCoder(spec models.Spec) (models.Model, error) {
	if spec.Model != Model {
		return nil, fmt.Errorf("model %q: backend %s has one model, %s, not %q", spec.Name, Backend, Model, spec.Model)
	}
	return coder{}, nil
}

// record is what a request shows the rules of a record.
type record struct {
	Surface     study.Surface   `json:"surface"`
	Cause       study.Cause     `json:"cause"`
	Target      study.Target    `json:"target"`
	Observation json.RawMessage `json:"observation"`
}

// Request is the request messages that ask the rules to code record s:
// one user message, its surface, cause, target and observation as JSON.
func Request(s *study.Scenario) []models.Message {
	b, _ := json.Marshal(record{Surface: s.Surface, Cause: s.Cause, Target: s.Target, Observation: s.Observation})
	return []models.Message{{Role: "user", Content: string(b)}}
}

// Generate codes the record of the request's last message.
func (coder) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	var r record
	if n := len(req.Messages); n == 0 || json.Unmarshal([]byte(req.Messages[n-1].Content), &r) != nil || len(r.Observation) == 0 {
		return models.Reply{}, errors.New("the rules code a record: want its surface, cause, target and observation as a JSON object (rules.Request)")
	}
	s := study.Scenario{Surface: r.Surface, Cause: r.Cause, Target: r.Target, Observation: r.Observation}
	return models.Reply{Text: answer(rules.Code(&s))}, nil
}

// answer writes coding p as a coding answer: {"control": {…}, "content":
// {…}}, every bit with its evidence and rationale, none marked proposed.
func answer(p study.ProfileCoding) string {
	var b bytes.Buffer
	b.WriteString(`{"control":`)
	cb, _ := json.Marshal(unproposed(p.Control))
	b.Write(cb)
	b.WriteString(`,"content":`)
	cb, _ = json.Marshal(unproposed(p.Content))
	b.Write(cb)
	b.WriteString("}")
	return b.String()
}

func unproposed(v study.View) study.View {
	out := study.View{}
	for k, b := range v {
		b.Proposed = false
		out[k] = b
	}
	return out
}
