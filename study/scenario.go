package study

import (
	"encoding/json"
	"slices"
)

// Scenario is one verified failure of the corpus
// (docs/specification.md section 2).
type Scenario struct {
	ID              string          `json:"id"`               // S01…S21 in the paper corpus
	Server          string          `json:"server"`           // server pseudonym, the bootstrap cluster
	ProtocolVersion string          `json:"protocol_version"` // negotiated MCP protocol version
	Probe           Probe           `json:"probe"`
	Cause           Cause           `json:"cause"`
	Surface         Surface         `json:"surface"`
	Observation     json.RawMessage `json:"observation"` // client-normalized view, exactly what a renderer shows
	Code            string          `json:"code"`        // namespaced cause code
	Target          Target          `json:"target"`
	Preferred       Policy          `json:"preferred_policy"`
	// PreferredSet is, when given, every preferred policy execution
	// proves (docs/specification.md section 7.4), Preferred first: the
	// set the Proven column credits. Absent (the paper corpus), the set
	// is {Preferred}, and Proven is Strict.
	PreferredSet    []Policy        `json:"preferred_policies,omitempty"`
	NonHarm         []Policy        `json:"non_harm"`
	ControlEnvelope json.RawMessage `json:"control_envelope"` // counterfactual control plane (section 6)
	Profile         ProfileCoding   `json:"profile"`
	Capture         *Capture        `json:"capture,omitempty"` // provenance of a captured record (capture.go)
	Coding          *Coding         `json:"coding,omitempty"`  // who coded and confirmed the record (coding.go)
}

// Target is the repair target of a failure.
type Target struct {
	Kind    string `json:"kind"`              // tool, parameter, credential or dependency
	Name    string `json:"name,omitempty"`    // tool or credential name
	Pointer string `json:"pointer,omitempty"` // JSON pointer of a parameter
}

// ProvenSet returns the scenario's proven preferred policies: its
// PreferredSet, or {Preferred} when it declares none.
func (s *Scenario) ProvenSet() []Policy { return ProvenSet(s.Preferred, s.PreferredSet) }

// ProvenSet returns the proven preferred policies of a scenario whose
// preferred policy is preferred and whose declared set is set: set, or
// {preferred} when it declares none (a call line's fields, as a record's).
func ProvenSet(preferred Policy, set []Policy) []Policy {
	if len(set) > 0 {
		return set
	}
	return []Policy{preferred}
}

// InNonHarm reports whether p belongs to the scenario's non-harm set.
func (s *Scenario) InNonHarm(p Policy) bool { return slices.Contains(s.NonHarm, p) }

// ObservationText returns the failure text a client shows: the protocol
// error's message or the concatenated text content blocks.
func (s *Scenario) ObservationText() string {
	var o observation
	if json.Unmarshal(s.Observation, &o) != nil {
		return ""
	}
	if o.Exception != nil {
		if o.Exception.Error.Message == nil {
			return ""
		}
		return *o.Exception.Error.Message
	}
	var text string
	if o.Result != nil {
		for i, c := range o.Result.Content {
			if i > 0 {
				text += "\n"
			}
			text += c.Text
		}
	}
	return text
}

// observation is the shape of a client-normalized observation: either the
// exception a client raises for a JSON-RPC error, or a completed result.
type observation struct {
	Exception *struct {
		Type  string `json:"type"`
		Error struct {
			Code    *int            `json:"code"`
			Message *string         `json:"message"`
			Data    json.RawMessage `json:"data,omitempty"`
		} `json:"error"`
	} `json:"exception"`
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError           *bool           `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		Meta              json.RawMessage `json:"_meta,omitempty"`
	} `json:"result"`
}
