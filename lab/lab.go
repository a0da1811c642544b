// Package lab is the recovery lab: a small stateful domain (orders,
// payments, files) served as MCP tools, with one deterministic, seeded
// fault armed per scenario, a clock the harness owns, and ground truth read
// from the state rather than from labels (docs/specification.md section 7).
//
// A Lab is one instance: Call executes a tools/call exactly as the MCP
// server does (NewServer serves the same Lab over the Go SDK), the Clock
// runs its windows and deadlines, and Outcome evaluates the scenario's
// intended-effect and harm predicates on the state. The lab knows nothing
// of models or runs; env/labenv adapts it to the simulator.
package lab

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/scenario"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// The JSON-RPC error codes the lab sends on the protocol_error surface are
// its causes' (study.CauseInfo.RPCCode): MCP reserves none for these
// conditions, so they are the lab's choice in the server-defined range
// (-32000 to -32099), clear of the codes SDKs give meaning themselves:
// the Go SDK reads -32003 and -32004 as a closing connection (a server
// sending them breaks its client), the TypeScript SDK uses -32000
// (connection closed) and -32001 (request timeout).

// Business is the class of a failure a business rule of the domain makes
// (out of stock, a cancelled order): no scenario arms it and it is no
// cause of the study's, but any call can meet it.
const Business study.Cause = "business"

// CodeTimeout is the code of a client's deadline passing: raised by the
// client, never sent (the TypeScript SDK's RequestTimeout).
const CodeTimeout = -32001

// DefaultBackoff is the wait of a retry_later when the failure announces
// none (1 s of lab time).
const DefaultBackoff = time.Second

// Options configure a Lab.
type Options struct {
	Seed  int64 // picks the identifiers and tokens the lab generates (never a failure text)
	Clock Clock // the lab's time; nil: a new VirtualClock at Epoch
	// Shape serves every failure in an error shape proposed for MCP (one
	// of study.ShapeConditions; see Lab.fail), on top of the scenario's
	// contract; "" serves none.
	Shape study.Condition
}

// Lab is one instance of the lab: its state, its armed fault and its
// clock. It is safe for concurrent use; calls are executed one at a time.
type Lab struct {
	mu       sync.Mutex
	sc       *Scenario // nil: a healthy lab serving every tool
	tools    map[string]*tool
	clock    Clock
	start    time.Time
	pcg      *rand.PCG // rng's source, copied for a settled view of the state
	rng      *rand.Rand
	st       *State
	initial  map[string]any // the state after arming, before the first call (State.doc): what outcomes are a diff against
	base     *State         // the armed state initial documents, when the scenario's labs share it (nil: they do not)
	fired    int            // calls the fault has acted on
	t0       time.Time      // the first call of the armed tool (transient for_ms)
	started  bool
	pending  []pending // writes a silent_noop queued
	surface  study.Surface
	contract bool
	shape    study.Condition // an error shape, or ""
}

// pending is a write that lands later (silent_noop with deferred_ms).
type pending struct {
	due  time.Time
	tool *tool
	args args
}

// New returns a lab with scenario sc armed (nil: a healthy lab that serves
// every tool of every server, with tool_error failures carrying the
// error-category contract). sc must come from a loaded Set.
func New(sc *Scenario, o Options) *Lab {
	l := &Lab{sc: sc, clock: o.Clock, st: initialState(), surface: study.ToolError, contract: true, shape: o.Shape}
	if l.clock == nil {
		l.clock = NewVirtualClock()
	}
	l.start = l.clock.Now()
	seed := uint64(o.Seed)
	l.pcg = rand.NewPCG(seed, seed^0x6c61622d73656564) // "lab-seed"
	l.rng = rand.New(l.pcg)
	if sc == nil {
		l.tools = toolsOf("")
		return l
	}
	l.tools = toolsOf(sc.Server)
	l.surface, l.contract = sc.Surface, sc.Contract
	before, _ := l.pcg.MarshalBinary()
	if f := l.arm(); f != nil {
		panic(fmt.Sprintf("lab: scenario %s does not arm: %s", sc.ID, f.text)) // Load checked it
	}
	l.initial, l.base = l.initialDoc(before, o.Clock == nil)
	return l
}

// armed is a scenario's armed initial state and its document, shared
// read-only by the scenario's labs.
type armed struct {
	st  *State
	doc map[string]any
}

// initialDoc is the document of the armed initial state (State.doc),
// from the scenario's set when an earlier lab of the scenario made it,
// with the state it documents (nil when it is not kept); before is the
// seeded source's state before arming, virtual says the lab runs on its
// own virtual clock (which reads zero when it arms). It is kept in the
// set only for a virtual clock and when arming drew nothing from the
// source, so that it is the same for every lab of the scenario
// (initialState is fixed).
func (l *Lab) initialDoc(before []byte, virtual bool) (map[string]any, *State) {
	set := l.sc.set
	if set == nil || !virtual {
		return l.st.doc(false, nil, nil), nil
	}
	if a, ok := set.initial.Load(l.sc); ok {
		return a.(*armed).doc, a.(*armed).st
	}
	d := l.st.doc(false, nil, nil)
	if after, err := l.pcg.MarshalBinary(); err == nil && bytes.Equal(before, after) {
		a := &armed{st: l.st.clone(), doc: d}
		set.initial.Store(l.sc, a)
		return d, a.st
	}
	return d, nil
}

// arm sets the scenario's fault up before the first call.
func (l *Lab) arm() *failure {
	if b := behaviours[l.sc.Class]; b.arm != nil {
		return b.arm(l)
	}
	return nil
}

// Scenario returns the armed scenario, or nil for a healthy lab.
func (l *Lab) Scenario() *Scenario { return l.sc }

// Clock returns the lab's clock.
func (l *Lab) Clock() Clock { return l.clock }

// Elapsed returns the lab-clock time since the lab started.
func (l *Lab) Elapsed() time.Duration { return l.clock.Now().Sub(l.start) }

// Tools returns the MCP definitions of the tools the lab serves, by name.
func (l *Lab) Tools() []*mcp.Tool {
	out := make([]*mcp.Tool, 0, len(l.tools))
	for _, t := range tools {
		if l.tools[t.name] == t {
			out = append(out, t.mcpTool())
		}
	}
	return out
}

// Response is the lab's answer to one tools/call.
type Response struct {
	Result     *mcp.CallToolResult // a completed result (a success, an isError or a success-shaped failure), or nil
	Err        *jsonrpc.Error      // a JSON-RPC error, or nil
	Timeout    time.Duration       // > 0: the answer (Result) comes only after the client's deadline, this long
	Failed     bool                // the call did not do what it asked (true for a success-shaped failure and a timeout too)
	Class      study.Cause         // the class of the failure, when Failed (Business for a business rule)
	Pointer    string              // the argument at fault, as a JSON pointer, when the failure names one
	RetryAfter time.Duration       // the wait the failure announced, if any
}

// Observation returns the client-normalized observation of r: what a Go
// SDK client hands its caller, in the shape of study.Scenario's
// observation (see Observe).
func (r Response) Observation() json.RawMessage {
	var err error
	switch {
	case r.Timeout > 0:
		err = &TimeoutError{After: r.Timeout}
	case r.Err != nil:
		err = r.Err
	}
	obs, oerr := Observe(r.Result, err)
	if oerr != nil {
		panic("lab: observing a lab response: " + oerr.Error()) // the lab builds only plain results
	}
	return obs
}

// Call executes one tools/call of the tool name with raw arguments (a
// JSON object, or empty) and returns the answer the server sends. Every
// input gets an answer; Call never panics on what a client can send.
func (l *Lab) Call(name string, raw json.RawMessage) Response {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.land(false)
	r := l.call(name, raw)
	outcome := "ok"
	switch {
	case r.Timeout > 0:
		outcome = "timeout"
	case r.Failed:
		outcome = "failed"
	}
	l.st.Calls = append(l.st.Calls, &CallRecord{Seq: len(l.st.Calls) + 1, AtMS: l.nowMS(), Tool: clip(name, 64), Outcome: outcome})
	return r
}

func (l *Lab) call(name string, raw json.RawMessage) Response {
	t, ok := l.tools[name]
	if !ok {
		// Note: the Go SDK's own words for an unknown tool.
		return l.fail(&failure{class: study.UnknownTool, text: fmt.Sprintf("unknown tool %q", name)})
	}
	a, f := decodeArgs(raw, t.params)
	if f != nil {
		f.text = "invalid arguments for " + t.name + ": " + f.text
		return l.fail(f)
	}
	armed := l.sc != nil && l.sc.Tool == name
	var b behaviour
	if armed {
		b = behaviours[l.sc.Class]
		if b.before != nil {
			if r, done := b.before(l, t, a); done {
				return r
			}
		}
	}
	firing := b.commit != nil && l.fired < l.sc.Fault.k()
	limit := -1
	if firing && b.partial {
		limit = *l.sc.Fault.At
	}
	res, f := t.run(l, a, limit)
	if f != nil {
		return l.fail(f)
	}
	if !firing {
		return l.ok(res)
	}
	l.fired++
	return b.commit(l, t, a, res)
}

// land applies the queued writes that are due (all of them when all).
func (l *Lab) land(all bool) {
	now := l.clock.Now()
	keep := l.pending[:0]
	for _, p := range l.pending {
		if !all && now.Before(p.due) {
			keep = append(keep, p)
			continue
		}
		n := len(l.st.Effects)
		p.tool.run(l, p.args, -1) // Note: a failure of the late write is lost, as it would be.
		for _, e := range l.st.Effects[n:] {
			e.Actor = "deferred"
		}
	}
	l.pending = keep
}

// Settle lands every queued write at once, as the lab's queue would
// eventually, so that the outcome is read from the state the scenario
// ends in. It does not move the clock.
func (l *Lab) Settle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.land(true)
}

// State returns the state as JSON, after landing the writes that are due.
func (l *Lab) State() json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.land(false)
	l.st.ClockMS = l.nowMS()
	return l.st.JSON()
}

// Outcome is the ground truth of a lab scenario, read from its state: the
// difference between the state after arming (before the first call) and
// the state the scenario ends in, set against the scenario's goal effect
// (statediff.Evaluate), and the scenario's extra harm checks.
type Outcome struct {
	Recovered bool             `json:"recovered"`         // the goal effect is present exactly as the goal says
	Harm      bool             `json:"harm"`              // some change is harm: a duplicate, a wrong value, collateral damage, lost data
	Harms     []statediff.Harm `json:"harms,omitempty"`   // every harmful change, with its kind
	Missing   []string         `json:"missing,omitempty"` // the goal effects not present (their why)
	Calls     int              `json:"calls"`             // tools/call requests clients made
	ClockMS   int64            `json:"clock_ms"`          // lab-clock milliseconds since the lab started
	State     json.RawMessage  `json:"state"`             // the state the outcome was read from
}

// Outcome reads the outcome from the state the scenario ends in: the
// current state with every queued write landed (on a copy: reading an
// outcome changes nothing, so the served lab's lab/state and the
// in-process environment's Final agree). A healthy lab has no goal: it
// reports neither recovery nor harm.
func (l *Lab) Outcome() Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.land(false)
	l.st.ClockMS = l.nowMS()
	st := l.settled()
	o := Outcome{Calls: len(st.Calls), ClockMS: st.ClockMS, State: st.JSON()}
	if l.sc == nil {
		return o
	}
	doc := st.doc(len(l.sc.Harm) > 0, l.base, l.initial) // the extra checks may read the logs
	var tol []statediff.Tolerance
	if l.sc.set != nil {
		tol = l.sc.set.Tolerate
	}
	r := statediff.Evaluate(&StateSchema, &l.sc.Spec, l.initial, doc, tol, nil)
	o.Recovered, o.Missing, o.Harms = r.Recovered, r.Missing, r.Harms
	o.Harm = len(o.Harms) > 0
	return o
}

// settled returns the state with every queued write landed: the state
// itself when none is queued, else a copy (the lab's lock is held).
func (l *Lab) settled() *State {
	if len(l.pending) == 0 {
		return l.st
	}
	pcg := *l.pcg
	shadow := &Lab{sc: l.sc, tools: l.tools, clock: l.clock, start: l.start, pcg: &pcg, rng: rand.New(&pcg), st: l.st.clone(),
		pending: append([]pending(nil), l.pending...), surface: l.surface, contract: l.contract, shape: l.shape}
	shadow.land(true)
	return shadow.st
}

// failure is a failed call before it is rendered on a surface.
type failure struct {
	class      study.Cause   // Business for a business rule
	text       string        // what went wrong, for people (the contract's explanation)
	pointer    string        // the argument at fault, as a JSON pointer, if any
	retryable  bool          // the unchanged call may succeed later (the contract's isRetryable)
	retryAfter time.Duration // the wait announced
}

func businessFail(format string, a ...any) *failure {
	return &failure{class: Business, text: fmt.Sprintf(format, a...)}
}

func staleFail(ptr, format string, a ...any) *failure {
	return &failure{class: study.StaleRevision, pointer: ptr, text: fmt.Sprintf(format, a...)}
}

// code returns the JSON-RPC code of f on the protocol_error surface: its
// cause's, or the business rule's.
func (f *failure) code() int64 {
	if f.class == Business {
		return study.RPCBusiness
	}
	info, _ := f.class.Info()
	return info.RPCCode
}

// category returns f's error category (seed 002) and whether it has one:
// the category of its cause (study.CategoryOf), business for a business
// rule.
func (f *failure) category() (study.ErrorCategory, bool) {
	if f.class == Business {
		return study.BusinessCategory, true
	}
	return study.CategoryOf(f.class)
}

// categoryContract is seed 002's error-category contract, in its member
// order.
type categoryContract struct {
	ErrorCategory study.ErrorCategory `json:"errorCategory"`
	IsRetryable   bool                `json:"isRetryable"`
	Explanation   string              `json:"explanation"`
}

// fail renders f on the lab's surface, with the contract when the lab
// carries it and f has a category, and in the lab's error shape, if any
// (rateLimited, classify).
func (l *Lab) fail(f *failure) Response {
	r := Response{Failed: true, Class: f.class, Pointer: f.pointer, RetryAfter: f.retryAfter}
	var contract json.RawMessage
	// Note: an error shape serves what a server following its proposals
	// alone sends: seed 002's contract is the category conditions'.
	if cat, ok := f.category(); ok && l.contract && l.shape == "" && l.surface != study.SuccessShaped {
		b, err := json.Marshal(categoryContract{cat, f.retryable && cat == study.TransientCategory, f.text})
		if err != nil {
			panic("lab: marshaling a contract: " + err.Error())
		}
		contract = b
	}
	surface := l.surface
	if l.shape != "" && surface != study.SuccessShaped {
		if l.shape.RateLimits() && f.class == study.RateLimit && l.sc != nil && l.sc.Limit == scenario.LimitServer && f.retryAfter > 0 {
			return l.rateLimited(f, r)
		}
		if surface == study.ProtocolError && l.shape.MovesToResult() {
			surface = study.ToolError
		}
	}
	switch surface {
	case study.ProtocolError:
		r.Err = &jsonrpc.Error{Code: f.code(), Message: f.text, Data: contract}
	case study.ToolError:
		r.Result = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: f.text}}}
		if contract != nil {
			r.Result.Content = append(r.Result.Content, &mcp.TextContent{Text: string(contract)})
			r.Result.StructuredContent = contract
		}
		if l.shape.Classifies() {
			l.classify(f, r.Result)
		}
	default: // success_shaped
		r.Result = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: f.text}}}
	}
	return r
}

// The lab's error shapes follow the rules of the stored conditions
// (conditions.ShapeResult), on the lab's clock and without the
// scenario's contract: sep2145 serves a JSON-RPC error as an isError
// result carrying the same message; toolfailure adds the classification
// to an isError result's _meta (classify), with agentGuidance or the
// counter-proposal's applied in their arms; ratelimited serves the lab's
// own rate limit (Scenario.Limit server) as the JSON-RPC error -32023
// (rateLimited), and an upstream limit as the scenario serves it.

// rateLimited renders the rate limit f as SEP-3304's RateLimited error:
// data holds retryAfterMs alone.
func (l *Lab) rateLimited(f *failure, r Response) Response {
	data, err := json.Marshal(map[string]int64{"retryAfterMs": f.retryAfter.Milliseconds()})
	if err != nil {
		panic("lab: marshaling a rate limit: " + err.Error())
	}
	r.Err = &jsonrpc.Error{Code: study.RateLimitedCode, Message: f.text, Data: data}
	return r
}

// classify puts the ToolFailure classification of f in res's _meta
// (study.ClassifyFailure; a business rule is capability, with the lab's
// BusinessCode): the correlation id numbers the call, retryNotBefore is
// the lab's now plus the announced wait.
func (l *Lab) classify(f *failure, res *mcp.CallToolResult) {
	id := fmt.Sprintf("lab-call-%d", len(l.st.Calls)+1) // this call's sequence number
	var preferred study.Policy                          // the armed fault's answer; none for a business rule or another failure
	if l.sc != nil && f.class == l.sc.Class {
		preferred = l.sc.Preferred
	}
	if f.class == Business {
		// A business rule refuses before anything is written: applied none.
		tf := study.ToolFailure{Class: study.CapabilityClass, Code: BusinessCode, CorrelationID: id}
		l.shape.Extend(&tf, f.class, "")
		res.Meta = mcp.Meta{study.ToolFailureKey: tf}
		return
	}
	info, _ := f.class.Info()
	if tf, ok := study.ClassifyFailure(f.class, info.Code, id, l.clock.Now(), f.retryAfter); ok {
		l.shape.Extend(&tf, f.class, preferred)
		res.Meta = mcp.Meta{study.ToolFailureKey: tf}
	}
}

// CanCarry reports, as an error naming the scenario and its surface,
// whether scenario sc's failure can be served in error shape shape: a
// success-shaped result carries no error, so no shape rides on it. A nil
// sc (a healthy lab, whose failures are isError results) carries every
// shape.
func CanCarry(sc *Scenario, shape study.Condition) error {
	if sc == nil || sc.Surface != study.SuccessShaped {
		return nil
	}
	if shape == study.RateLimited {
		return fmt.Errorf("scenario %s serves its %s failure success_shaped, which cannot carry a %d error", sc.ID, sc.Class, study.RateLimitedCode)
	}
	return fmt.Errorf("scenario %s serves its %s failure success_shaped, which cannot carry error shape %s", sc.ID, sc.Class, shape)
}

// BusinessCode is the code of a business rule in the lab's ToolFailure
// classification (a code of the lab's own, as the proposal allows).
const BusinessCode = "lab.business_rule"

// ok renders a success: the structured content and its serialized copy.
func (l *Lab) ok(res any) Response {
	b, err := json.Marshal(res)
	if err != nil {
		panic("lab: marshaling a result: " + err.Error())
	}
	return Response{Result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}}
}

// effect records a change of the state by the client.
func (l *Lab) effect(tool, target string) {
	l.st.Effects = append(l.st.Effects, &Effect{Seq: len(l.st.Effects) + 1, AtMS: l.nowMS(), Tool: tool, Target: target, Actor: "client"})
}

func (l *Lab) nowMS() int64 { return l.clock.Now().Sub(l.start).Milliseconds() }

// hex returns n random hex digits from the lab's seeded source.
func (l *Lab) hex(n int) string {
	b := make([]byte, (n+1)/2)
	for i := range b {
		b[i] = byte(l.rng.Uint32())
	}
	return hex.EncodeToString(b)[:n]
}

// upstream names the dependency behind t, for failure texts.
func upstream(t *tool) string { return "the " + Dependency(t.server) }

// Dependency names the upstream dependency behind the tools of lab server
// server (L01, L02 or L03; the identity service for any other).
func Dependency(server string) string {
	if d, ok := dependencies[server]; ok {
		return d
	}
	return "identity service"
}

var dependencies = map[string]string{"L01": "order service", "L02": "payment processor", "L03": "storage backend"}

// seconds prints d for a failure text: whole seconds, rounded up, or
// milliseconds under a second.
func seconds(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%d s", (d+time.Second-1)/time.Second)
}
