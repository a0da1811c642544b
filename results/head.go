package results

import (
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// This file holds the schema of what the readers decode of a call line
// (Head), leaving out the request and body; headfast.go decodes it fast.

// Head is the part of a call line that scoring and resuming need; reading
// only it skips the request and body of every line.
type Head struct {
	Key       simulator.Key `json:"key"`
	Server    string        `json:"server"`
	Preferred study.Policy  `json:"preferred"`
	// PreferredSet is the scenario's proven preferred set (Call), nil
	// when the line and the defaults table declare none.
	PreferredSet []study.Policy `json:"preferred_policies,omitempty"`
	NonHarm      []study.Policy `json:"non_harm"`
	Turn         int            `json:"turn"`
	Seed         int64          `json:"seed"`
	Response     string         `json:"response"`
	// ResponseSize is set when Response keeps only the first
	// simulator.MaxAnswerBytes bytes of a longer answer (Call).
	ResponseSize int `json:"response_size,omitempty"`
	// ResponseSHA256 is the hex sha256 of Response; a line where it does
	// not match is damaged.
	ResponseSHA256 string `json:"response_sha256"`
	// Request holds the refs of the request's messages, for a line that
	// refers to messages.jsonl.
	Request RequestHead `json:"request"`
	Error   string      `json:"error,omitempty"`
	// EnvError says Error is the live environment's failure (Call).
	EnvError bool `json:"env_error,omitempty"`
	// Events are the call's transport events (their kinds only).
	Events []EventHead `json:"transport_events,omitempty"`
	// Replay is "live" for a decision run with live replay, "" for stored.
	Replay string `json:"replay,omitempty"`
	// Result says the line carries a result: the last answer was executed
	// and the environment settled the decision (live replay).
	Result present `json:"result,omitempty"`
	// Env is the environment's outcome, on the last line of a live
	// decision that completed (its state is not read).
	Env *EnvHead `json:"env,omitempty"`
	// Task is "act" for a decision of the action task, "" for label.
	Task string `json:"task,omitempty"`
	// Action is what the harness did with the answer (task act).
	Action *ActionHead `json:"action,omitempty"`
}

// ActionHead is the part of a call line's action that scoring reads.
type ActionHead struct {
	Sent    bool   `json:"sent"`              // the call went to the server
	Invalid string `json:"invalid,omitempty"` // why it was refused, "" when sent
}

// RequestHead is the part of a call line's request that resuming reads:
// the refs of its messages in messages.jsonl (none for inline messages).
type RequestHead struct {
	Refs []string `json:"messages_ref,omitempty"`
}

// EnvHead is the part of a live decision's environment outcome that
// scoring reads: simulator.EnvOutcome without the state.
type EnvHead struct {
	Recovered bool             `json:"recovered"` // the goal effect is present exactly as the goal says
	Harm      bool             `json:"harm"`      // some change is harm
	Harms     []statediff.Harm `json:"harms"`     // the harmful changes, with their kinds
	Calls     int              `json:"calls"`     // tool calls made
	ClockMS   int64            `json:"clock_ms"`  // lab-clock ms to the final state
}

// present is true when its JSON member is there and not null; decoding it
// does not copy the value.
type present bool

// UnmarshalJSON implements json.Unmarshaler.
func (p *present) UnmarshalJSON(b []byte) error {
	*p = string(b) != "null"
	return nil
}

// EventHead is the part of a transport event that the analysis reads.
type EventHead struct {
	Kind string `json:"kind"`
}
