// Package results writes and reads a run's bundle: manifest.json,
// calls.jsonl (one line per model call), messages.jsonl (each distinct
// request message once, which call lines refer to), decisions.parquet
// (one row per decision) and summary.json. See results/README.md for the
// layout.
//
// It owns one definition of each part of a bundle: the schema of
// manifest.json and summary.json (Record, Summary) and of the counts
// (Cell, Tally); the call line (Call) and the one streaming reader of
// calls.jsonl (GroupReader, decision by decision); the one scoring path
// from a decision's call lines to its row (Group.Row, which RowOf mirrors
// for a decision as it runs); the bundle lock and the crash-safe log.
package results

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// File names inside a bundle.
const (
	ManifestFile  = "manifest.json"
	CallsFile     = "calls.jsonl"
	DecisionsFile = "decisions.parquet"
	SummaryFile   = "summary.json"
)

// Call is one line of calls.jsonl: one model call with everything needed to
// re-score its decision later.
type Call struct {
	Key       simulator.Key `json:"key"`
	Server    string        `json:"server"`
	Preferred study.Policy  `json:"preferred"`
	// PreferredSet is the scenario's execution-proven preferred set,
	// Preferred first (study.Scenario.PreferredSet), which the Proven
	// column credits; absent when the scenario declares none (then the
	// set is {Preferred}), as on every line written before it existed.
	PreferredSet   []study.Policy `json:"preferred_policies,omitempty"`
	NonHarm        []study.Policy `json:"non_harm"`
	Turn           int            `json:"turn"`
	Seed           int64          `json:"seed"`
	Request        models.Request `json:"request"`
	Response       string         `json:"response"`
	ResponseSHA256 string         `json:"response_sha256"` // sha256 of Response as stored
	// ResponseSize is the size in bytes of the answer the model sent, set
	// only when it exceeded simulator.MaxAnswerBytes: then Response holds
	// its first bytes (whole UTF-8 characters, at most MaxAnswerBytes),
	// OriginalResponseSHA256 the sha256 of all of it, the body is not
	// stored (OriginalBodySHA256 and BodySize describe it), and the
	// answer is invalid (too_large), so the line is scored without it.
	ResponseSize           int            `json:"response_size,omitempty"`
	OriginalResponseSHA256 string         `json:"original_response_sha256,omitempty"`
	BodySize               int            `json:"body_size,omitempty"`
	Body                   []byte         `json:"body,omitempty"`        // exact bytes (unless Redacted), base64 in JSON
	BodySHA256             string         `json:"body_sha256,omitempty"` // sha256 of Body as stored
	LatencyMS              float64        `json:"latency_ms"`
	PromptTokens           int            `json:"prompt_tokens,omitempty"`
	OutputTokens           int            `json:"output_tokens,omitempty"`
	Meta                   map[string]any `json:"meta,omitempty"`
	Error                  string         `json:"error,omitempty"` // transport or backend failure, or the environment's (EnvError)
	// EnvError says Error is a failure of the decision's live environment
	// (simulator.EnvError: it did not start, died, or its state could not
	// be read), not of the model call; on a turn 0 the model never saw,
	// Response is empty.
	EnvError bool `json:"env_error,omitempty"`
	// Events are the transport faults met during the call (retried, or
	// fatal when Error is set); never counted as answers.
	Events []models.TransportEvent `json:"transport_events,omitempty"`
	// Endpoint is the server that answered, for a model whose decisions
	// are spread over several endpoints (user info removed).
	Endpoint string `json:"endpoint,omitempty"`
	// Redacted says that Response, Body or Meta are not exactly what the
	// server sent: a credential the backend sends (an API key) was found
	// in them and replaced by "[redacted]". The sha256 fields still
	// describe the stored bytes, and the stored response is the one scored.
	Redacted bool `json:"redacted,omitempty"`
	// OriginalBodySHA256 is the sha256 of the body the server sent, when
	// Body was redacted (to match it against the server's own records).
	OriginalBodySHA256 string `json:"original_body_sha256,omitempty"`
	// Replay is "live" on every line of a decision run with live replay
	// (manifests.ReplayLive); absent under stored replay. It selects the
	// trajectory rules Group.Row applies.
	Replay string `json:"replay,omitempty"`
	// Observation is, under live replay, what the environment returned
	// for the call this turn shows (Start's at turn 0, else the result of
	// the policy executed after the previous turn).
	Observation json.RawMessage `json:"observation,omitempty"`
	// Result is, under live replay and on the last line only, the
	// observation of the policy executed after the last turn when the
	// environment settled the decision (no turn shows it). Its presence
	// says that the last answer was executed.
	Result json.RawMessage `json:"result,omitempty"`
	// Env is, under live replay and on the last line of a decision that
	// completed, the outcome read from the environment's final state
	// (recovered, harm, calls, clock_ms, state): the end of the decision.
	Env *simulator.EnvOutcome `json:"env,omitempty"`
	// Thinking is the reasoning text the server returned apart from the
	// answer (a thinking model's); stored, never parsed as the answer.
	Thinking string `json:"thinking,omitempty"`
	// ToolCalls are the native tool calls the server returned, exactly as
	// it sent them (models.ParseToolCalls reads them).
	ToolCalls json.RawMessage `json:"tool_calls,omitempty"`
	// Action is, under task: act, what the harness did with the turn's
	// answer: the call it sent (tool, arguments, channel, wait) or
	// refused (invalid, with the reason and the check's detail).
	Action *simulator.Action `json:"action,omitempty"`
	// Task is "act" on every line of a decision of the action task
	// (manifests.TaskAct); absent for the label task.
	Task string `json:"task,omitempty"`
}

// wireRequest is a call line's request as stored: its messages as refs
// into messages.jsonl.
type wireRequest struct {
	Refs        []string       `json:"messages_ref,omitempty"`
	Seed        *int64         `json:"seed,omitempty"` // absent: the call's seed
	Temperature float64        `json:"temperature"`
	Options     map[string]any `json:"options,omitempty"`
	Tools       []models.Tool  `json:"tools,omitempty"`
}

// storedCall is a call line as stored: the call with its request as
// stored and the fields a line may leave out (see Defaults);
// the outer fields shadow Call's in JSON.
type storedCall struct {
	*Call
	Server       *string         `json:"server,omitempty"`
	Preferred    *study.Policy   `json:"preferred,omitempty"`
	PreferredSet *[]study.Policy `json:"preferred_policies,omitempty"`
	NonHarm      *[]study.Policy `json:"non_harm,omitempty"`
	Turn         int             `json:"turn,omitempty"`
	Seed         *int64          `json:"seed,omitempty"`
	Request      wireRequest     `json:"request"`
}

// carry sets the fields c carries from the call.
func (ln *storedCall) carry(c carried) {
	ln.Turn = ln.Call.Turn
	if c.scenario {
		ln.Server, ln.Preferred, ln.NonHarm = &ln.Call.Server, &ln.Call.Preferred, &ln.Call.NonHarm
		if len(ln.Call.PreferredSet) > 0 {
			ln.PreferredSet = &ln.Call.PreferredSet
		}
	}
	if c.seed {
		ln.Seed = &ln.Call.Seed
	}
}

// unpack copies the fields ln carries into ln.Call and says which it
// carried (the others are for Defaults to fill).
func (ln *storedCall) unpack() carried {
	c := ln.Call
	c.Turn = ln.Turn
	if ln.Server != nil {
		c.Server = *ln.Server
	}
	if ln.Preferred != nil {
		c.Preferred = *ln.Preferred
	}
	if ln.PreferredSet != nil {
		c.PreferredSet = *ln.PreferredSet
	}
	if ln.NonHarm != nil {
		c.NonHarm = *ln.NonHarm
	}
	if ln.Seed != nil {
		c.Seed = *ln.Seed
	}
	return carried{scenario: ln.Server != nil, seed: ln.Seed != nil}
}

// Decision statuses in decisions.parquet.
const (
	StatusOK    = "ok"    // the trajectory completed and is counted
	StatusError = "error" // a call failed; excluded from the counts
)

// Row is one row of decisions.parquet.
type Row struct {
	Model       string `parquet:"model" json:"model"`
	Prompt      string `parquet:"prompt" json:"prompt"`
	Condition   string `parquet:"condition" json:"condition"`
	Scenario    string `parquet:"scenario" json:"scenario"`
	Replicate   int64  `parquet:"replicate" json:"replicate"`
	Server      string `parquet:"server" json:"server"`
	Seed        int64  `parquet:"seed" json:"seed"`
	Status      string `parquet:"status" json:"status"`
	FinalLabel  string `parquet:"final_label" json:"final_label"`
	FinalStatus string `parquet:"final_status" json:"final_status"`
	Turns       int64  `parquet:"turns" json:"turns"`
	Replays     int64  `parquet:"replays" json:"replays"`
	// Outcome holds the decision's value of each outcome column
	// (simulator.Columns): in decisions.parquet a column each, after
	// Replays (see rowLayout); a lab column is null for stored replay and
	// error decisions.
	Outcome simulator.Values `parquet:"-" json:"-"`
	Error   string           `parquet:"error" json:"error,omitempty"`
}

// Lab reports whether row r has lab outcomes (live replay).
func (r *Row) Lab() bool { return r.Outcome.Lab() }

// MarshalJSON implements json.Marshaler: Row's fields, then the
// outcome columns that have a value, a flag as a boolean and a lab sum as
// a number.
func (r Row) MarshalJSON() ([]byte, error) {
	type fields Row // without this method
	b, err := json.Marshal(fields(r))
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1]
	for c, col := range simulator.Columns {
		v, ok := r.Outcome.Get(simulator.Col(c))
		if !ok {
			continue
		}
		b = append(b, `,"`+col.Name+`":`...)
		if col.Kind == simulator.LabSum {
			b = strconv.AppendInt(b, v, 10)
		} else {
			b = strconv.AppendBool(b, v != 0)
		}
	}
	return append(b, '}'), nil
}

// Key returns the decision key of the row.
func (r *Row) Key() simulator.Key {
	return simulator.Key{Model: r.Model, Prompt: r.Prompt, Condition: study.Condition(r.Condition), Scenario: r.Scenario, Replicate: int(r.Replicate)}
}

// RowOf builds the parquet row of a decision as it ran (the simulator
// scored it with simulator.Score, as Group.Row scores its call lines).
func RowOf(d *simulator.Decision) Row {
	var seed int64
	if len(d.Turns) > 0 {
		seed = d.Turns[0].Request.Seed
	}
	if d.Err != nil {
		return errorRow(d.Key, d.Server, seed, len(d.Turns), d.Err.Error())
	}
	return scoredRow(d.Key, d.Server, seed, &d.Outcome)
}

// keyRow is the row of decision k with its identity filled in.
func keyRow(k simulator.Key, server string, seed int64) Row {
	return Row{Model: k.Model, Prompt: k.Prompt, Condition: string(k.Condition), Scenario: k.Scenario,
		Replicate: int64(k.Replicate), Server: server, Seed: seed, Status: StatusOK}
}

// errorRow is the row of an error decision: a call failed for good after
// turns calls.
func errorRow(k simulator.Key, server string, seed int64, turns int, msg string) Row {
	r := keyRow(k, server, seed)
	r.Status, r.Error, r.Turns = StatusError, msg, int64(turns)
	return r
}

// scoredRow is the row of a decision whose trajectory scored o.
func scoredRow(k simulator.Key, server string, seed int64, o *simulator.Outcome) Row {
	r := keyRow(k, server, seed)
	r.FinalLabel, r.FinalStatus = string(o.Final), string(o.FinalStatus)
	r.Turns, r.Replays = int64(o.Turns), int64(o.Replays)
	r.Outcome = o.Values
	return r
}

// CallsOf builds the calls.jsonl lines of a decision of scenario s.
func CallsOf(d *simulator.Decision, s *study.Scenario) []Call {
	out := make([]Call, len(d.Turns))
	for i, t := range d.Turns {
		c := Call{Key: d.Key, Server: s.Server, Preferred: s.Preferred, PreferredSet: s.PreferredSet, NonHarm: s.NonHarm,
			Turn: t.Index, Seed: t.Request.Seed, Request: t.Request,
			Response: t.Reply.Text, ResponseSHA256: SHA256([]byte(t.Reply.Text)),
			LatencyMS:    float64(t.Latency.Microseconds()) / 1000,
			PromptTokens: t.Reply.PromptTokens, OutputTokens: t.Reply.OutputTokens, Meta: t.Reply.Meta}
		if t.Reply.Body != nil {
			c.Body, c.BodySHA256 = t.Reply.Body, SHA256(t.Reply.Body)
		}
		c.Redacted, c.OriginalBodySHA256 = t.Reply.Redacted, t.Reply.OriginalBodySHA256
		if len(c.Response) > simulator.MaxAnswerBytes {
			// Note: stored once, clipped: a hostile model's 10 MB answer
			// would otherwise be stored twice, as text and as its body.
			c.ResponseSize, c.OriginalResponseSHA256 = len(c.Response), c.ResponseSHA256
			c.Response = clipUTF8(c.Response, simulator.MaxAnswerBytes)
			c.ResponseSHA256 = SHA256([]byte(c.Response))
			if c.Body != nil {
				c.BodySize, c.OriginalBodySHA256 = len(c.Body), c.BodySHA256
				c.Body, c.BodySHA256 = nil, ""
			}
		}
		c.Thinking, c.ToolCalls = t.Reply.Thinking, t.Reply.ToolCalls
		c.Events = t.Reply.Events
		if d.Live {
			c.Replay, c.Observation, c.Result, c.Action = manifests.ReplayLive, t.Observation, t.Result, t.Action
			if d.Task == simulator.Act {
				c.Task = manifests.TaskAct
			}
			if i == len(d.Turns)-1 && d.Err == nil {
				c.Env = d.Env
			}
		}
		if t.Err != nil {
			c.Error = t.Err.Error()
			var ce *models.CallError
			if errors.As(t.Err, &ce) {
				c.Events = ce.Events
			}
			_, c.EnvError = errors.AsType[*simulator.EnvError](t.Err)
		}
		out[i] = c
	}
	return out
}

// clipUTF8 returns the longest prefix of s of at most n bytes that ends
// on a character boundary.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// SHA256 returns the lower-case hex sha256 of b.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// WriteJSON writes v as indented JSON to file, via a synced temporary file
// and a rename, so a reader (or a run resumed after a crash) never sees half
// a file.
func WriteJSON(file string, v any) error { return writeJSON(file, v, true) }

// WriteJSONUnsynced is WriteJSON without the fsync: for a file the bundle
// can rebuild (summary.json), or one a later fsync covers before anything
// depends on it. A crash may leave such a file empty or missing, never
// half of one that a reader takes for whole: the rename still replaces
// the old file in one step.
func WriteJSONUnsynced(file string, v any) error { return writeJSON(file, v, false) }

func writeJSON(file string, v any, sync bool) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil && sync {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, file)
}

// CallReader streams calls.jsonl; a bad line is reported with its line
// number and does not stop the others (Scan/Call/Err, like bufio.Scanner).
// A line comes back with its request's messages expanded from the table
// its refs point into (messages.jsonl).
type CallReader struct {
	sc   *bufio.Scanner
	line int
	call Call
	err  error
	name string
	msgs beside[Messages]
	// defaults fills what lines leave out.
	defaults beside[Defaults]
}

// NewCallReader reads call lines from r; name labels errors. When r is an
// *os.File, the messages lines refer to are read from the messages.jsonl
// beside it, and what lines leave out from the defaults.json
// beside it; otherwise give them with SetMessages and SetDefaults.
func NewCallReader(r io.Reader, name string) *CallReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	cr := &CallReader{sc: sc, name: name}
	cr.msgs.load, cr.defaults.load = messagesBeside, defaultsBeside
	if f, ok := r.(*os.File); ok {
		cr.msgs.file, cr.defaults.file = f.Name(), f.Name()
	}
	return cr
}

// SetMessages gives the message table the lines refer to.
func (r *CallReader) SetMessages(m *Messages) { r.msgs.set(m) }

// SetDefaults gives the defaults table that fills what lines leave out.
func (r *CallReader) SetDefaults(d *Defaults) { r.defaults.set(d) }

// Scan advances to the next line. It returns false at the end of input or
// on a read error (see Err). After Scan, either Call or LineErr is set.
func (r *CallReader) Scan() bool {
	if !r.sc.Scan() {
		return false
	}
	r.line++
	r.call = Call{}
	r.err = nil
	ln := storedCall{Call: &r.call}
	if err := json.Unmarshal(r.sc.Bytes(), &ln); err != nil {
		r.err = fmt.Errorf("%s:%d: %w", r.name, r.line, err)
		return true
	}
	if err := r.fill(ln.unpack()); err != nil {
		r.err = fmt.Errorf("%s:%d: %w", r.name, r.line, err)
		return true
	}
	w := &ln.Request
	r.call.Request = models.Request{Seed: r.call.Seed, Temperature: w.Temperature, Options: w.Options, Tools: w.Tools}
	if w.Seed != nil {
		r.call.Request.Seed = *w.Seed
	}
	if len(w.Refs) == 0 {
		return true
	}
	table, err := r.msgs.get()
	if err != nil {
		r.err = err
		return true
	}
	if table == nil {
		r.err = fmt.Errorf("%s:%d: the request refers to %s, which was not given", r.name, r.line, MessagesFile)
		return true
	}
	msgs, err := table.Expand(w.Refs)
	if err != nil {
		r.err = fmt.Errorf("%s:%d: %w", r.name, r.line, err)
		return true
	}
	r.call.Request.Messages = msgs
	return true
}

// fill sets the fields the current line left out (c says which it
// carried) from the bundle's defaults table.
func (r *CallReader) fill(c carried) error {
	if c.all() {
		return nil
	}
	d, err := r.defaults.get()
	if err != nil {
		return err
	}
	call := &r.call
	h := Head{Key: call.Key, Turn: call.Turn, Server: call.Server, Preferred: call.Preferred, PreferredSet: call.PreferredSet, NonHarm: call.NonHarm, Seed: call.Seed}
	if err := d.fill(&h, c); err != nil {
		return err
	}
	call.Server, call.Preferred, call.PreferredSet, call.NonHarm, call.Seed = h.Server, h.Preferred, h.PreferredSet, h.NonHarm, h.Seed
	return nil
}

// Call returns the call of the current line.
func (r *CallReader) Call() *Call { return &r.call }

// LineErr returns the error of the current line, or nil.
func (r *CallReader) LineErr() error { return r.err }

// Err returns the first read error (not line errors).
func (r *CallReader) Err() error {
	if err := r.sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	return nil
}

// ReadCalls reads every line of a calls.jsonl file into memory; the first
// bad line is an error naming its line. For large bundles stream with
// CallReader instead.
func ReadCalls(file string) ([]Call, error) {
	f, err := input.OpenStream(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Call
	cr := NewCallReader(f, file)
	for cr.Scan() {
		if err := cr.LineErr(); err != nil {
			return out, err
		}
		out = append(out, *cr.Call())
	}
	return out, cr.Err()
}
