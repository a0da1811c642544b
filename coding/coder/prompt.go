package coder

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/study"
)

// templateSet is a parsed coding prompt: a Go text/template defining
// "system" and "user".
type templateSet struct {
	t *template.Template
}

// promptData is what a coding template receives for one record.
type promptData struct {
	ID          string   // the record's id
	Observation string   // the client-normalized observation, indented JSON
	Surface     string   // protocol_error, tool_error, success_shaped, silent
	Cause       string   // the verified cause label
	CauseWords  string   // the cause in words
	Target      string   // the verified repair target, e.g. "parameter /limit"
	Preferred   string   // the preferred policy label
	Pointers    []string // every JSON pointer of the observation, to cite as evidence
}

// parsePrompt parses a coding template; it must define "system" and
// "user".
func parsePrompt(name, text string) (*templateSet, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	for _, want := range []string{"system", "user"} {
		if t.Lookup(want) == nil {
			return nil, fmt.Errorf("the coding template defines no %q", want)
		}
	}
	return &templateSet{t: t}, nil
}

// Render makes the messages of one record's coding call.
func (ts *templateSet) Render(s *study.Scenario) ([]models.Message, error) {
	var obs any
	if err := json.Unmarshal(s.Observation, &obs); err != nil {
		return nil, err
	}
	ind, err := json.MarshalIndent(obs, "", "  ")
	if err != nil {
		return nil, err
	}
	info, _ := s.Cause.Info()
	target := s.Target.Kind + " " + s.Target.Name
	if s.Target.Pointer != "" {
		target = s.Target.Kind + " " + s.Target.Pointer
	}
	d := promptData{ID: s.ID, Observation: string(ind), Surface: string(s.Surface), Cause: string(s.Cause),
		CauseWords: info.Words, Target: target, Preferred: string(s.Preferred), Pointers: pointers(obs, "")}
	var msgs []models.Message
	for _, role := range []string{"system", "user"} {
		var b strings.Builder
		if err := ts.t.ExecuteTemplate(&b, role, d); err != nil {
			return nil, err
		}
		msgs = append(msgs, models.Message{Role: role, Content: strings.TrimSpace(b.String())})
	}
	return msgs, nil
}

// pointers lists the JSON pointers of every value in v, in document order
// for arrays and sorted order for object members.
func pointers(v any, at string) []string {
	out := []string{}
	if at != "" {
		out = append(out, at)
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, pointers(x[k], at+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k))...)
		}
	case []any:
		for i, e := range x {
			out = append(out, pointers(e, at+"/"+strconv.Itoa(i))...)
		}
	}
	return out
}

// schema is the JSON schema of a coding answer, which a manifest's
// `format: schema` asks the backend to constrain answers to.
func schema() map[string]any {
	bit := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"bit":       map[string]any{"type": "integer", "enum": []any{0, 1}},
			"evidence":  map[string]any{"type": "string"},
			"rationale": map[string]any{"type": "string"},
		},
		"required":             []any{"bit", "evidence", "rationale"},
		"additionalProperties": false,
	}
	view := map[string]any{"type": "object", "properties": map[string]any{}, "required": []any{}, "additionalProperties": false}
	for _, c := range study.Coordinates {
		view["properties"].(map[string]any)[c] = bit
		view["required"] = append(view["required"].([]any), c)
	}
	return map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"control": view, "content": view},
		"required":             []any{"control", "content"},
		"additionalProperties": false,
	}
}
