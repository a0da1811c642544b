package results

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"os"

	"github.com/parquet-go/parquet-go"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/internal/statediff"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// This file holds the crash-safe side of a bundle. calls.jsonl is the
// source of truth: whole decisions are appended to it (the lines of one
// decision are contiguous and never interleave with another's) and it is
// fsynced in batches; decisions.parquet and summary.json are derived from it
// and can always be rebuilt. A run killed at any instant leaves a prefix of
// whole decisions, possibly followed by a torn tail (part of a line, or the
// first lines of a decision whose last lines were not written), which
// GroupReader reports so that a resume discards it.
//
// How far the file is known durable (fsynced) is recorded in manifest.json
// after each sync. Damage past that point is what a crash or power loss can
// leave (a torn write, a zeroed page followed by valid lines): a torn tail.
// Damage before it cannot come from a crash: the file was changed.

// CallLog appends decisions to calls.jsonl. It buffers whole decisions and
// writes them with one write call per batch; Sync makes them durable.
type CallLog struct {
	appendFile
	enc      *json.Encoder
	msgs     *MessageLog // where requests' messages go
	defaults *Defaults   // what lines leave out
}

// appendFile is a file written by appending buffered lines: the call log
// and the message log.
type appendFile struct {
	f    *os.File
	name string
	buf  bytes.Buffer
	size int64 // bytes in the file plus bytes buffered
	// synced says nothing was written since the last sync.
	synced bool
}

// flush writes the buffered lines with one write call.
func (a *appendFile) flush() error {
	if a.buf.Len() == 0 {
		return nil
	}
	a.synced = false
	_, err := a.f.Write(a.buf.Bytes())
	a.buf.Reset()
	if err != nil {
		return fmt.Errorf("%s: %w", a.name, err)
	}
	return nil
}

// sync writes the buffered lines and makes the file durable.
func (a *appendFile) sync() error {
	if err := a.flush(); err != nil {
		return err
	}
	if a.synced {
		return nil
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", a.name, err)
	}
	a.synced = true
	return nil
}

// flushAt is the buffered size at which Append writes the batch out.
const flushAt = 1 << 20

// OpenCallLog opens file for appending after its first size bytes, which
// must be whole decisions: anything after them (a torn tail) is cut off.
// The file is created when missing (size must then be 0).
func OpenCallLog(file string, size int64) (*CallLog, error) {
	f, err := openAppend(file, size)
	if err != nil {
		return nil, err
	}
	l := &CallLog{appendFile: appendFile{f: f, name: file, size: size}}
	l.enc = json.NewEncoder(&l.buf)
	l.enc.SetEscapeHTML(false)
	return l, nil
}

// SetMessages makes Append write each request's messages to m, the
// bundle's messages.jsonl, and refer to them. The log then flushes, syncs
// and closes m, always before its own file. Append needs it.
func (l *CallLog) SetMessages(m *MessageLog) { l.msgs = m }

// SetDefaults makes Append leave out of each line what d holds for it; d
// must be in the bundle's defaults.json before the first line is written
// (KeepDefaults). Append needs it.
func (l *CallLog) SetDefaults(d *Defaults) { l.defaults = d }

// Messages returns the message log set by SetMessages, or nil.
func (l *CallLog) Messages() *MessageLog { return l.msgs }

// Append adds the call lines of decision d (of scenario s) and returns the
// offset and length in bytes of the lines in the file. endpoint, when not
// "", names the server that answered (user info is removed).
func (l *CallLog) Append(d *simulator.Decision, s *study.Scenario, endpoint string) (off, n int64, err error) {
	off = l.size
	before := l.buf.Len()
	endpoint = redact(endpoint)
	for _, c := range CallsOf(d, s) {
		c.Endpoint = endpoint
		if err := l.encode(&c); err != nil {
			l.buf.Truncate(before)
			return 0, 0, fmt.Errorf("%s: decision %s: %w", l.name, d.Key, err)
		}
	}
	n = int64(l.buf.Len() - before)
	l.size += n
	if l.buf.Len() >= flushAt {
		return off, n, l.Flush()
	}
	return off, n, nil
}

// encode buffers the line of call c.
func (l *CallLog) encode(c *Call) error {
	if l.msgs == nil || l.defaults == nil {
		return errors.New("the call log has no message log or defaults table (SetMessages, SetDefaults)")
	}
	ln, err := l.compact(c)
	if err != nil {
		return err
	}
	return l.enc.Encode(ln)
}

// AppendRaw appends lines already encoded (whole decisions).
func (l *CallLog) AppendRaw(b []byte) (off int64, err error) {
	off = l.size
	l.buf.Write(b)
	l.size += int64(len(b))
	if l.buf.Len() >= flushAt {
		return off, l.Flush()
	}
	return off, nil
}

// Size is the length the file has once the buffer is written.
func (l *CallLog) Size() int64 { return l.size }

// compact is call line c with its request's messages replaced by refs
// into the message log: one ref for the leading messages up to the first
// assistant message (the rendered prompt, shared by every replicate and
// model), then one per message. The request's seed is left out when it is
// the call's, and what the defaults table holds (SetDefaults) is left out
// of the line.
func (l *CallLog) compact(c *Call) (*storedCall, error) {
	req := &c.Request
	ln := &storedCall{Call: c, Request: wireRequest{Temperature: req.Temperature, Options: req.Options, Tools: req.Tools}}
	ln.carry(l.defaults.carries(c))
	if req.Seed != c.Seed {
		seed := req.Seed
		ln.Request.Seed = &seed
	}
	k := 0
	for k < len(req.Messages) && req.Messages[k].Role != conditions.Assistant {
		k++
	}
	refs := make([]string, 0, len(req.Messages)-k+1)
	if k > 1 {
		ref, err := l.msgs.RefRun(req.Messages[:k])
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	} else {
		k = 0
	}
	for i := k; i < len(req.Messages); i++ {
		ref, err := l.msgs.Ref(&req.Messages[i])
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	ln.Request.Refs = refs
	return ln, nil
}

// Flush writes the buffered decisions with one write call, after the
// buffered messages they refer to.
func (l *CallLog) Flush() error {
	if l.msgs != nil {
		if err := l.msgs.Flush(); err != nil {
			return err
		}
	}
	return l.flush()
}

// Sync writes the buffered decisions and makes the file durable, after
// making the messages they refer to durable.
func (l *CallLog) Sync() error {
	if l.msgs != nil {
		if err := l.msgs.Sync(); err != nil {
			return err
		}
	}
	return l.sync()
}

// Close syncs and closes the file (and the message log).
func (l *CallLog) Close() error {
	err := l.Sync()
	if l.msgs != nil {
		err = errors.Join(err, l.msgs.Close())
	}
	return errors.Join(err, l.f.Close())
}

// redact drops user info (credentials) from a URL-shaped endpoint.
func redact(endpoint string) string {
	if endpoint == "" {
		return ""
	}
	if u, err := url.Parse(endpoint); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	return endpoint
}

// Head is the part of a call line that scoring and resuming need; reading
// only it skips the request and body of every line.
type Head struct {
	Key       simulator.Key  `json:"key"`
	Server    string         `json:"server"`
	Preferred study.Policy   `json:"preferred"`
	NonHarm   []study.Policy `json:"non_harm"`
	Turn      int            `json:"turn"`
	Seed      int64          `json:"seed"`
	Response  string         `json:"response"`
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

// Group is the call lines of one decision: consecutive lines with the same
// key, starting at turn 0.
type Group struct {
	Key    simulator.Key
	Heads  []Head // in file order
	Offset int64  // byte offset of the first line
	Size   int64  // bytes of the lines, newlines included
	Line   int    // 1-based line number of the first line
	// answers, when not nil, remembers parsed answers (a GroupReader's).
	answers *answerCache
}

// answerCache remembers the answers parsed from recent response texts:
// a study's answers repeat (the same few JSON objects), and parsing is
// a large part of re-scoring. It holds at most maxAnswers texts.
type answerCache map[string]simulator.Answer

const maxAnswers = 4096

// answer returns the answer of line h: too large when the line keeps only
// the first simulator.MaxAnswerBytes bytes of it (ResponseSize), else
// its stored response parsed.
func (g *Group) answer(h *Head) simulator.Answer {
	if h.ResponseSize > simulator.MaxAnswerBytes {
		return simulator.Answer{Reason: simulator.ReasonTooLarge}
	}
	return g.parse(h.Response)
}

// parse returns simulator.ParseAnswer(text), from the cache when it can.
func (g *Group) parse(text string) simulator.Answer {
	if g.answers == nil {
		return simulator.ParseAnswer(text)
	}
	if a, ok := (*g.answers)[text]; ok {
		return a
	}
	a := simulator.ParseAnswer(text)
	if len(*g.answers) >= maxAnswers {
		clear(*g.answers)
	}
	(*g.answers)[text] = a
	return a
}

// Check reports whether the group's turns run 0, 1, … without gaps, and
// only a failed call ends them early.
func (g *Group) Check() error {
	for i, h := range g.Heads {
		if h.Turn != i {
			return fmt.Errorf("decision %s: line %d is turn %d, want turn %d", g.Key, g.Line+i, h.Turn, i)
		}
		if i < len(g.Heads)-1 && h.Error != "" {
			return fmt.Errorf("decision %s: turn %d failed but later turns exist", g.Key, i)
		}
	}
	return nil
}

// Complete reports whether the group is a finished decision under replay
// cap replayCap: its last call failed for good, or its last answer ends
// the trajectory (under live replay: its last line carries the
// environment's outcome). An incomplete group is a decision interrupted
// mid-trajectory.
func (g *Group) Complete(replayCap int) bool {
	if len(g.Heads) == 0 || g.Check() != nil {
		return false
	}
	last := &g.Heads[len(g.Heads)-1]
	if last.Error != "" {
		return true
	}
	if last.Replay != "" {
		return last.Env != nil
	}
	return !simulator.Continues(g.answer(last), last.Turn, replayCap)
}

// Failed reports whether the group's last call failed for good: an error
// decision.
func (g *Group) Failed() bool {
	return len(g.Heads) > 0 && g.Heads[len(g.Heads)-1].Error != ""
}

// Row scores the group into its decisions.parquet row: the one scoring
// path of a decision from its call lines, used by the run, resume, merge
// and analyze. It fails when the turns break the trajectory rules (a gap,
// a failed call before the last, a replay after an answer other than a
// valid retry_now; under live replay, a call after an answer other than a
// valid policy but stop_or_escalate, or no environment outcome at the
// end; lines of both replay modes).
func (g *Group) Row() (Row, error) {
	if len(g.Heads) == 0 {
		return Row{}, fmt.Errorf("decision %s: no call lines", g.Key)
	}
	if err := g.Check(); err != nil {
		return Row{}, err
	}
	h0 := &g.Heads[0]
	last := &g.Heads[len(g.Heads)-1]
	for i := range g.Heads {
		if g.Heads[i].Replay != h0.Replay {
			return Row{}, fmt.Errorf("decision %s: turn 0 has replay %q but turn %d has %q", g.Key, h0.Replay, i, g.Heads[i].Replay)
		}
		if g.Heads[i].Task != h0.Task {
			return Row{}, fmt.Errorf("decision %s: turn 0 has task %q but turn %d has %q", g.Key, h0.Task, i, g.Heads[i].Task)
		}
	}
	switch {
	case h0.Task == "":
		for i := range g.Heads {
			if g.Heads[i].Action != nil {
				return Row{}, fmt.Errorf("decision %s: turn %d carries an action but the decision is not of task %q", g.Key, i, manifests.TaskAct)
			}
		}
	case h0.Task != manifests.TaskAct:
		return Row{}, fmt.Errorf("decision %s: unknown task %q (want %q)", g.Key, h0.Task, manifests.TaskAct)
	case h0.Replay != manifests.ReplayLive:
		return Row{}, fmt.Errorf("decision %s: task %q without live replay", g.Key, h0.Task)
	}
	switch h0.Replay {
	case "":
		if last.Env != nil || bool(last.Result) {
			return Row{}, fmt.Errorf("decision %s: a stored-replay decision carries a live environment's outcome", g.Key)
		}
	case manifests.ReplayLive:
	default:
		return Row{}, fmt.Errorf("decision %s: unknown replay %q (want %q)", g.Key, h0.Replay, manifests.ReplayLive)
	}
	if last.Error != "" {
		return errorRow(g.Key, h0.Server, h0.Seed, len(g.Heads), fmt.Sprintf("turn %d: %s", last.Turn, last.Error)), nil
	}
	if h0.Replay == manifests.ReplayLive {
		return g.liveRow()
	}
	answers := make([]simulator.Answer, len(g.Heads))
	for i := range g.Heads {
		answers[i] = g.answer(&g.Heads[i])
		if i < len(g.Heads)-1 && !simulator.Replays(answers[i]) {
			return Row{}, fmt.Errorf("decision %s: turn %d answered %q but a replay followed (only retry_now is replayed)", g.Key, i, g.Heads[i].Response)
		}
	}
	o := simulator.Score(simulator.Scoring{Answers: answers, Preferred: h0.Preferred, NonHarm: h0.NonHarm})
	return scoredRow(g.Key, h0.Server, h0.Seed, &o), nil
}

// liveRow scores a live decision that completed. Every answer but the
// last was executed (a valid policy other than stop_or_escalate) and
// followed by a turn; the last was executed too when its line carries the
// result; the last line carries the environment's outcome.
func (g *Group) liveRow() (Row, error) {
	h0 := &g.Heads[0]
	n := len(g.Heads)
	answers := make([]simulator.Answer, n)
	for i := range g.Heads {
		h := &g.Heads[i]
		answers[i] = g.answer(h)
		executable := simulator.Executes(answers[i])
		if i < n-1 && !executable {
			return Row{}, fmt.Errorf("decision %s: turn %d answered %q but a call followed (live replay executes a valid policy other than stop_or_escalate)", g.Key, i, h.Response)
		}
		if i < n-1 && (h.Env != nil || bool(h.Result)) {
			return Row{}, fmt.Errorf("decision %s: turn %d carries the environment's result or outcome but is not the last turn", g.Key, i)
		}
		if i == n-1 && bool(h.Result) && !executable {
			return Row{}, fmt.Errorf("decision %s: turn %d answered %q but carries the result of an executed policy", g.Key, i, h.Response)
		}
		if h0.Task == manifests.TaskAct && (i < n-1 || bool(h.Result)) && (h.Action == nil || !h.Action.Sent || h.Action.Invalid != "") {
			return Row{}, fmt.Errorf("decision %s: turn %d was followed by a result but its line does not record a call sent", g.Key, i)
		}
	}
	invalidAction := false
	if a := g.Heads[n-1].Action; a != nil && a.Invalid != "" {
		if a.Sent || bool(g.Heads[n-1].Result) {
			return Row{}, fmt.Errorf("decision %s: turn %d records a refused call (%s) as sent", g.Key, n-1, a.Invalid)
		}
		invalidAction = true
	}
	last := &g.Heads[n-1]
	if last.Env == nil {
		return Row{}, fmt.Errorf("decision %s: the last line (turn %d) of a live decision lacks the environment's outcome", g.Key, last.Turn)
	}
	executed := n - 1
	if last.Result {
		executed++
	}
	e := last.Env
	o := simulator.Score(simulator.Scoring{Answers: answers, Preferred: h0.Preferred, NonHarm: h0.NonHarm, Executed: executed, InvalidAction: invalidAction,
		Env: &simulator.EnvOutcome{Recovered: e.Recovered, Harm: e.Harm, Harms: e.Harms, Calls: e.Calls, ClockMS: e.ClockMS}})
	return scoredRow(g.Key, h0.Server, h0.Seed, &o), nil
}

// Torn describes the tail of a calls.jsonl that a crash left unfinished:
// a line without its newline, or a last line that is not valid JSON.
type Torn struct {
	Offset int64  // where the tail starts
	Size   int64  // its length in bytes
	Line   int    // its first line number
	Reason string // what is wrong with it
}

// GroupReader reads calls.jsonl decision by decision, keeping byte offsets.
// A damaged line (not valid JSON, or a response that does not match its
// response_sha256) past the durable point (SetDurable) ends the input: it
// and everything after it are reported by Torn and not returned. A damaged
// line before the durable point is an error (the file was changed after it
// was written). Without a durable point only the last line may be damaged.
type GroupReader struct {
	r       *bufio.Reader
	name    string
	off     int64
	line    int
	durable int64    // bytes known durable; -1: unknown
	lenient bool     // damaged lines are problems, not the end (Lenient)
	skipped bool     // readOne skipped a damaged line
	probs   []error  // the damaged lines met, when lenient
	head    *lineRec // the first line of the next group, read ahead
	g       Group
	err     error
	torn    *Torn
	eof     bool
	buf     []byte
	answers answerCache
	strs    strTable // interns the lines' strings
	// verified maps responses whose response_sha256 was checked to it.
	verified map[string]string
	// defaults fills what lines leave out.
	defaults beside[Defaults]
}

type lineRec struct {
	h    Head
	off  int64
	size int64
	line int
}

// MaxLine is the longest call line a reader accepts, in bytes.
const MaxLine = 256 << 20

// NewGroupReader reads from r; name labels errors. When r is an *os.File,
// what lines leave out is read from the defaults.json beside it;
// otherwise give it with SetDefaults.
func NewGroupReader(r io.Reader, name string) *GroupReader {
	g := &GroupReader{r: bufio.NewReaderSize(r, 1<<20), name: name, durable: -1}
	g.defaults.load = defaultsBeside
	if f, ok := r.(*os.File); ok {
		g.defaults.file = f.Name()
	}
	return g
}

// SetDefaults gives the defaults table that fills what lines leave out.
func (g *GroupReader) SetDefaults(d *Defaults) { g.defaults.set(d) }

// fill sets the fields line h (line number line) left out (c says which
// it carried). A table that cannot be read, or is missing, is the
// reader's error, not the line's: no line that needs it can be read.
func (g *GroupReader) fill(h *Head, c carried, line int) error {
	if c.all() {
		return nil
	}
	d, err := g.defaults.get()
	if err == nil {
		err = d.fill(h, c)
		if !errors.Is(err, errNoDefaults) {
			return err // nil, or a line's own error
		}
	}
	g.err = fmt.Errorf("%s:%d: %w", g.name, line, err)
	return g.err
}

// Lenient makes the reader go on past damaged lines, as an analysis of a
// bundle does: a line that is not valid JSON is skipped, a response that
// does not match its response_sha256 is kept, and both are reported by
// Problems, located. A resume or merge must not be lenient.
func (g *GroupReader) Lenient() { g.lenient = true }

// Problems returns the damaged lines a lenient reader met.
func (g *GroupReader) Problems() []error { return g.probs }

// SetDurable says that the first n bytes of the input were on stable
// storage (see Record's calls_durable_bytes): damage after them is a torn
// tail, damage within them an error.
func (g *GroupReader) SetDurable(n int64) { g.durable = n }

// Next advances to the next decision's group; it returns false at the end
// of the input or on an error (see Err and Torn).
func (g *GroupReader) Next() bool {
	if g.err != nil {
		return false
	}
	if g.head == nil {
		g.head = g.readLine()
		if g.head == nil {
			return false
		}
	}
	first := g.head
	g.head = nil
	if g.answers == nil {
		g.answers = answerCache{}
	}
	g.g = Group{Key: first.h.Key, Heads: append(g.g.Heads[:0], first.h), Offset: first.off, Size: first.size, Line: first.line, answers: &g.answers}
	for {
		next := g.readLine()
		if next == nil {
			return g.err == nil
		}
		if next.h.Key != g.g.Key || next.h.Turn == 0 {
			g.head = next
			return true
		}
		g.g.Heads = append(g.g.Heads, next.h)
		g.g.Size += next.size
	}
}

// readLine reads and decodes one line, skipping damaged ones when
// lenient; nil at the end, on a torn tail or on an error.
func (g *GroupReader) readLine() *lineRec {
	for {
		rec := g.readOne()
		if rec != nil || !g.skipped {
			return rec
		}
		g.skipped = false
	}
}

// readOne reads and decodes one line; nil at the end, on a torn tail, on
// an error or on a damaged line skipped.
func (g *GroupReader) readOne() *lineRec {
	if g.eof || g.err != nil {
		return nil
	}
	g.buf = g.buf[:0]
	for {
		chunk, err := g.r.ReadSlice('\n')
		g.buf = append(g.buf, chunk...)
		if len(g.buf) > MaxLine {
			g.err = fmt.Errorf("%s:%d: line longer than %d bytes", g.name, g.line+1, MaxLine)
			return nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			g.eof = true
			if len(g.buf) > 0 && g.lenient {
				break // decoded, or reported, below
			}
			if len(g.buf) > 0 {
				g.torn = &Torn{Offset: g.off, Size: int64(len(g.buf)), Line: g.line + 1, Reason: "last line has no newline"}
			}
			return nil
		}
		if err != nil {
			g.err = fmt.Errorf("%s: %w", g.name, err)
			return nil
		}
		break
	}
	rec := &lineRec{off: g.off, size: int64(len(g.buf)), line: g.line + 1}
	g.off += rec.size
	g.line++
	c, err := decodeHead(g.buf, &rec.h, &g.strs)
	if err == nil {
		if err = g.fill(&rec.h, c, rec.line); g.err != nil {
			return nil
		}
	}
	if err == nil && !g.verify(&rec.h) {
		err = errors.New("response_sha256 does not match the response")
		if g.lenient {
			g.probs = append(g.probs, fmt.Errorf("%s:%d: decision %s turn %d: %w", g.name, rec.line, rec.h.Key, rec.h.Turn, err))
			return rec
		}
	}
	if err == nil {
		return rec
	}
	switch {
	case g.lenient:
		g.probs = append(g.probs, fmt.Errorf("%s:%d: %w", g.name, rec.line, err))
		g.skipped = true
	case g.durable >= 0 && rec.off >= g.durable:
		// Past the durable point: crash damage, whatever follows.
		rest, _ := io.Copy(io.Discard, g.r)
		g.eof = true
		g.torn = &Torn{Offset: rec.off, Size: rec.size + rest, Line: rec.line,
			Reason: fmt.Sprintf("line %d is damaged (%v) after the %d bytes known durable", rec.line, err, g.durable)}
	case g.durable >= 0:
		g.err = fmt.Errorf("%s:%d: %w (a damaged line within the %d bytes known durable: the file was changed after it was written)", g.name, rec.line, err, g.durable)
	default:
		// A bad line is a torn tail only if nothing follows it.
		if _, perr := g.r.Peek(1); perr == io.EOF {
			g.eof = true
			g.torn = &Torn{Offset: rec.off, Size: rec.size, Line: rec.line, Reason: "last line is damaged: " + err.Error()}
			return nil
		}
		g.err = fmt.Errorf("%s:%d: %w (a damaged line that is not the last one: the file was changed after it was written)", g.name, rec.line, err)
	}
	return nil
}

// verify reports whether h's response_sha256 is its response's, from the
// responses already verified when it can.
func (g *GroupReader) verify(h *Head) bool {
	if sum, ok := g.verified[h.Response]; ok && sum == h.ResponseSHA256 {
		return true
	}
	if h.ResponseSHA256 != SHA256([]byte(h.Response)) {
		return false
	}
	if len(h.Response) <= maxInterned {
		if g.verified == nil || len(g.verified) >= maxStrings {
			g.verified = make(map[string]string, 1024)
		}
		g.verified[h.Response] = h.ResponseSHA256
	}
	return true
}

// Group returns the current group; it is reused by the next call to Next.
func (g *GroupReader) Group() *Group { return &g.g }

// Err returns the first error: a read failure or a damaged line that is
// not the last.
func (g *GroupReader) Err() error { return g.err }

// Torn returns the torn tail found at the end of the input, or nil.
func (g *GroupReader) Torn() *Torn { return g.torn }

// RowWriter streams decision rows into a decisions.parquet file: rows are
// written in row groups as they come, to a temporary file renamed into
// place by Close, so a reader never sees half a file.
type RowWriter struct {
	file string
	f    *os.File
	pq   *parquet.GenericWriter[any]
	rows []parquet.Row
	inRG int // rows in the current row group
	// sum hashes the bytes written and fp the rows added (Check).
	sum hash.Hash
	fp  Fingerprint
}

// rowGroupRows is the number of rows per row group. Note: parquet-go keeps
// a whole row group in memory until it is flushed, so it must be bounded.
const rowGroupRows = 1 << 16

// CreateRows starts writing file.
func CreateRows(file string) (*RowWriter, error) {
	f, err := os.Create(file + ".tmp")
	if err != nil {
		return nil, err
	}
	w := &RowWriter{file: file, f: f, sum: sha256.New()}
	w.pq = parquet.NewGenericWriter[any](io.MultiWriter(f, w.sum), rowLayout.schema, parquet.Compression(&parquet.Snappy))
	return w, nil
}

// Add writes one row.
func (w *RowWriter) Add(r Row) error {
	w.rows = append(w.rows, rowLayout.encode(nil, &r))
	w.fp.Add(&r)

	if len(w.rows) >= 4096 {
		return w.flush()
	}
	return nil
}

func (w *RowWriter) flush() error {
	if len(w.rows) == 0 {
		return nil
	}
	if _, err := w.pq.WriteRows(w.rows); err != nil {
		return fmt.Errorf("%s: %w", w.file, err)
	}
	w.inRG += len(w.rows)
	w.rows = w.rows[:0]
	if w.inRG >= rowGroupRows {
		w.inRG = 0
		if err := w.pq.Flush(); err != nil {
			return fmt.Errorf("%s: %w", w.file, err)
		}
	}
	return nil
}

// Close finishes the file and renames it into place.
func (w *RowWriter) Close() error {
	err := w.flush()
	err = errors.Join(err, w.pq.Close())
	err = errors.Join(err, w.f.Sync(), w.f.Close())
	if err != nil {
		os.Remove(w.f.Name())
		return err
	}
	return os.Rename(w.f.Name(), w.file)
}

// Check is what to record of the file once closed: its sha256 and the
// fingerprint of its rows.
func (w *RowWriter) Check() ParquetCheck {
	return ParquetCheck{SHA256: hex.EncodeToString(w.sum.Sum(nil)), Rows: w.fp.N, RowsSum: w.fp.Hex()}
}

// Abort discards the file.
func (w *RowWriter) Abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// ParseGroup decodes b, the lines of one decision as a GroupReader located
// them, into g (whose Heads are reused); d, the bundle's defaults table,
// fills what lines leave out.
func ParseGroup(b []byte, g *Group, d *Defaults) error {
	g.Heads = g.Heads[:0]
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i+1], b[i+1:]
		} else {
			b = nil
		}
		var h Head
		c, err := decodeHead(line, &h, nil)
		if err == nil {
			err = d.fill(&h, c)
		}
		if err != nil {
			return err
		}
		g.Heads = append(g.Heads, h)
	}
	if len(g.Heads) == 0 {
		return errors.New("no call lines")
	}
	g.Key = g.Heads[0].Key
	for i := range g.Heads {
		if g.Heads[i].Key != g.Key {
			return fmt.Errorf("lines of decisions %s and %s are mixed", g.Key, g.Heads[i].Key)
		}
	}
	return g.Check()
}
