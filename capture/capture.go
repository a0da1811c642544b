// Package capture connects to live MCP servers with the official Go SDK,
// induces failures with low-risk probes (docs/specification.md section 2;
// paper IV-B), records both the raw JSON-RPC frames and the SDK's
// normalized view, and turns the failures into a pseudonymous, minimized
// scenario corpus that study.LoadCorpus accepts, with a proposed profile
// coding for a person to confirm.
//
// Probes: a guaranteed-nonexistent tool name; one wrong JSON type and one
// missing required field on a read-only tool; and a type-correct
// out-of-domain sentinel only on tools the user allow-lists. A tool is
// called only when every signal says it is read-only: its annotations (no
// destructiveHint, readOnlyHint not false) and a conservative name rule;
// the user's -read-only list overrides them. No other tool is called, and
// a server that runs a handler on a wrong JSON type gets no further
// argument probe. Calls are rate-limited and capped per server.
package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/coding/rules"
	"github.com/mcpstress/stress/study"
)

// Options tune a capture. The zero value of a duration or count takes the
// documented default.
type Options struct {
	// ProtocolVersion pins the version the client offers ("" lets the SDK
	// offer its latest and negotiate down).
	ProtocolVersion string
	// Roots are root URIs to advertise; with none the client has no roots
	// capability (a filesystem server may widen what it allows to a
	// client's roots).
	Roots []string
	// ReadOnly names tools the user declares safe to call, overriding
	// annotations and the name rule.
	ReadOnly []string
	// ProbeTool names the tool for the wrong-type and missing-field probes
	// on servers that advertise it (default: the first read-only tool with
	// a required field of a known JSON type).
	ProbeTool string
	// Sentinels allow-list tools for the out-of-domain sentinel probe.
	Sentinels []SentinelSpec
	// Interval is the wait between two requests to a server (default 1s).
	Interval time.Duration
	// MaxCalls caps the requests per server after initialization,
	// tools/list pages included (default 10, at most 100).
	MaxCalls int
	// Timeout bounds initialization and each request (default 30s).
	Timeout time.Duration
	// Grace is how long a stdio server may take to exit after its stdin is
	// closed before it gets SIGTERM (default 2s).
	Grace time.Duration
	// AllowHosts names non-loopback HTTP hosts the user allows.
	AllowHosts []string
	// MaxFrameBytes caps the bytes recorded of one frame (default
	// DefaultMaxFrameBytes, 16 MiB; at most MaxFrameBytesLimit); a longer
	// frame is recorded truncated, with the number of bytes cut.
	MaxFrameBytes int
	// MaxServerBytes caps the frame bytes recorded per server (default
	// DefaultMaxServerBytes, 64 MiB); later frames are counted and
	// dropped, with a marker in the frames file.
	MaxServerBytes int64
	// MaxNotifications caps the messages a server sends on its own
	// (notifications, requests, anything that answers no pending request)
	// recorded per request of the client (default DefaultMaxNotifications,
	// 1000); later ones, and the client's replies to them, are counted and
	// dropped, with a marker.
	MaxNotifications int
	// MaxTextBytes caps the server text an observation keeps: its text
	// blocks and error message together, and error.data and
	// structuredContent each (default DefaultMaxTextBytes, 64 KiB). The
	// rest is cut before scrubbing and classification (see boundCall).
	MaxTextBytes int
	// ValidateOutput turns on the client-side outputSchema check
	// (CheckOutput); the observations are then the validating client's
	// view (study.ViewValidating).
	ValidateOutput bool
	// RedactFailureText also redacts generic locators (public URLs, file
	// paths, public IP addresses) inside the failure text; by default they
	// are kept there and counted as flagged. Credentials and private
	// locators are redacted everywhere in any case (see scrubber).
	RedactFailureText bool
	// Salt keys the pseudonyms (at least 16 bytes; keep it private and
	// reuse it for stable pseudonyms).
	Salt []byte
	// Log receives progress lines (nil for none).
	Log io.Writer
}

// DefaultMaxCalls is the default cap on requests per server.
const DefaultMaxCalls = 10

// MaxFrameBytesLimit is the largest frame cap Check accepts, 64 MiB.
const MaxFrameBytesLimit = 64 << 20

// orDefault returns v, or def when v is 0 or less.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (o *Options) interval() time.Duration { return orDefault(o.Interval, time.Second) }
func (o *Options) timeout() time.Duration  { return orDefault(o.Timeout, 30*time.Second) }
func (o *Options) grace() time.Duration    { return orDefault(o.Grace, 2*time.Second) }
func (o *Options) maxCalls() int           { return orDefault(o.MaxCalls, DefaultMaxCalls) }

func (o *Options) view() string {
	if o.ValidateOutput {
		return study.ViewValidating
	}
	return study.ViewGoSDK
}

func (o *Options) logf(format string, a ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", a...)
	}
}

// Check validates options and targets before anything is started.
func (o *Options) Check(targets []Target) error {
	var errs []error
	if len(o.Salt) < 16 {
		errs = append(errs, errors.New("salt: want at least 16 bytes"))
	}
	if o.MaxCalls > 100 {
		errs = append(errs, fmt.Errorf("max calls: want at most 100, got %d", o.MaxCalls))
	}
	if o.MaxFrameBytes < 0 || o.MaxFrameBytes > MaxFrameBytesLimit {
		errs = append(errs, fmt.Errorf("max frame bytes: want 0 (the default) to %d, got %d", MaxFrameBytesLimit, o.MaxFrameBytes))
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"max server bytes", o.MaxServerBytes}, {"max notifications", int64(o.MaxNotifications)}, {"max text bytes", int64(o.MaxTextBytes)}} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("%s: want 0 (the default) or more, got %d", n.name, n.v))
		}
	}
	if o.ProtocolVersion != "" && !versionLike(o.ProtocolVersion) {
		errs = append(errs, fmt.Errorf("protocol version %q: want YYYY-MM-DD", o.ProtocolVersion))
	}
	seen := map[string]bool{}
	for i := range targets {
		if err := targets[i].check(o.AllowHosts); err != nil {
			errs = append(errs, err)
		}
		if seen[targets[i].Label] {
			errs = append(errs, fmt.Errorf("target %s: duplicate label", targets[i].Label))
		}
		seen[targets[i].Label] = true
	}
	return errors.Join(errs...)
}

func versionLike(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i, c := range v {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Outcome statuses.
const (
	statusFailure     = "failure"      // the probe induced a failure: it becomes a scenario
	statusNoFailure   = "no_failure"   // the server returned an ordinary success
	statusClientError = "client_error" // the call failed in the client or transport
	statusSkipped     = "skipped"      // the call cap was reached
)

// Outcome is one probe and what came back.
type Outcome struct {
	Plan
	Status    string // "failure" (it becomes a scenario), "no_failure", "client_error" or "skipped" (the call cap was reached)
	RequestID json.RawMessage
	Request   *Frame // the tools/call request frame
	Response  *Frame // the response frame
	// Err is the Go error CallTool returned, RPC its *jsonrpc.Error, and
	// Result the decoded result; at most one of Err and Result is set.
	Err    error
	RPC    *jsonrpc.Error
	Result *mcp.CallToolResult
	// Wire is the surface of the raw response; Surface the surface in the
	// capture's view ("" for no failure).
	Wire, Surface study.Surface
	// Check is the outputSchema check's verdict (nil when off).
	Check *study.OutputCheck
	Note  string
	// Cut lists the server text cut from the outcome to the text cap, as
	// capture.dropped entries (see boundCall).
	Cut []string
}

// Server is everything captured from one server.
type Server struct {
	Target          Target
	FrameStats      FrameStats // what the recorder kept of the frames and left out
	Pseudonym       string
	Name, Version   string // the server's reported implementation
	Title           string // its reported title, if any
	ProtocolVersion string // negotiated
	SDK             string
	View            string
	Tools           []Tool
	ToolPseudonyms  map[string]string
	Notes           []string
	Outcomes        []Outcome
	Frames          []Frame
	Stderr          []byte
	Calls           int
	Exit            string // how a stdio server ended: "exited", "terminated" (SIGTERM) or "killed" (SIGKILL)
	Err             error  // a failure that stopped the capture of this server
	// Coercing is true when the server ran a tool's handler on the
	// wrong-type probe (see coerced); its later argument probes are then
	// skipped.
	Coercing  bool
	Scenarios []study.Scenario
	// Quarantined are the failures whose records Build did not keep.
	Quarantined []Quarantined
	Redacted    map[string]int // over all scenarios
	Flagged     map[string]int
}

// Run captures from each target in turn. A server that cannot be reached is
// reported in its Server.Err; Run itself fails only on bad options or a
// cancelled context.
func Run(ctx context.Context, targets []Target, o Options) ([]*Server, error) {
	if err := o.Check(targets); err != nil {
		return nil, err
	}
	var out []*Server
	for i := range targets {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		s := runOne(ctx, &targets[i], &o)
		if s.Err != nil {
			o.logf("capture %s (%s): %v", s.Pseudonym, targets[i].Transport(), s.Err)
		}
		out = append(out, s)
	}
	return out, ctx.Err()
}

func runOne(ctx context.Context, t *Target, o *Options) *Server {
	s := &Server{Target: *t, SDK: SDKVersion(), View: o.view(),
		Pseudonym: pseudonym(o.Salt, "M", 8, "server", t.Label), ToolPseudonyms: map[string]string{}}
	c, err := connect(ctx, t, o)
	if err != nil {
		s.Err = err
		s.collect(c, o)
		if c.proc != nil {
			s.Exit = c.proc.how
		}
		return s
	}
	defer func() {
		how, err := c.close()
		s.Exit = how
		if err != nil && s.Err == nil {
			s.Notes = append(s.Notes, "close: "+err.Error())
		}
		s.collect(c, o)
	}()
	init := c.session.InitializeResult()
	s.ProtocolVersion = init.ProtocolVersion
	if init.ServerInfo != nil {
		s.Name, s.Version, s.Title = init.ServerInfo.Name, init.ServerInfo.Version, init.ServerInfo.Title
	}
	o.logf("capture %s: %s %s, protocol %s over %s", s.Pseudonym, s.Name, s.Version, s.ProtocolVersion, t.Transport())

	var last time.Time
	wait := func() error {
		if err := c.gone(); err != nil {
			return err
		}
		if s.Calls >= o.maxCalls() {
			return errCap
		}
		// Note: before the first call, last is zero: no wait.
		if d := o.interval() - time.Since(last); d > 0 && within(ctx.Done(), d) {
			return ctx.Err()
		}
		last = time.Now()
		s.Calls++
		return nil
	}

	// Discovery: every tools/list page, from the raw frames.
	var pages []json.RawMessage
	cursor := ""
	for {
		if err := wait(); err != nil {
			s.Err = fmt.Errorf("tools/list: %w", err)
			return s
		}
		since := c.rec.Len()
		cctx, cancel := context.WithTimeout(ctx, o.timeout())
		res, err := c.session.ListTools(cctx, &mcp.ListToolsParams{Cursor: cursor})
		cancel()
		if err != nil {
			s.Err = fmt.Errorf("tools/list: %w", c.explain(err, since))
			return s
		}
		_, resp := c.rec.AwaitExchange(since, "tools/list", frameWait)
		if resp == nil {
			s.Err = errors.New("tools/list: no response frame recorded")
			return s
		}
		var env struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(resp.Bytes(), &env); err != nil {
			s.Err = fmt.Errorf("tools/list response frame: %w", err)
			return s
		}
		pages = append(pages, env.Result)
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	s.Tools, err = parseTools(pages, set(o.ReadOnly...))
	if err != nil {
		s.Err = err
		return s
	}
	names := map[string]bool{}
	for _, tl := range s.Tools {
		names[tl.Name] = true
		s.ToolPseudonyms[tl.Name] = pseudonym(o.Salt, "tool_", 8, "tool", t.Label, tl.Name)
	}
	missing := pseudonym(o.Salt, "probe_missing_tool_", 4, "nonexistent", t.Label)
	for names[missing] {
		missing += "x"
	}
	probeTool := ""
	if names[o.ProbeTool] {
		probeTool = o.ProbeTool
	}
	plans, notes := plan(s.Tools, missing, probeTool, o.Sentinels, pseudonym(o.Salt, "", 4, "sentinel", t.Label))
	s.Notes = append(s.Notes, notes...)

	for _, p := range plans {
		out := Outcome{Plan: p}
		if s.Coercing && p.Kind != study.NonexistentTool {
			out.Status, out.Note = statusSkipped, noteCoercedSkip
			o.logf("  %-22s %-24s %s", p.Kind, p.Tool, describe(&out))
			s.Outcomes = append(s.Outcomes, out)
			continue
		}
		if err := wait(); err != nil {
			if errors.Is(err, errCap) {
				out.Status, out.Note = statusSkipped, fmt.Sprintf("the cap of %d calls was reached", o.maxCalls())
				s.Outcomes = append(s.Outcomes, out)
				continue
			}
			s.Err = err
			return s
		}
		since := c.rec.Len()
		cuts := c.capped.Cuts()
		cctx, cancel := context.WithTimeout(ctx, o.timeout())
		res, err := c.session.CallTool(cctx, &mcp.CallToolParams{Name: p.Tool, Arguments: p.Arguments})
		cancel()
		err = c.capped.Explain(err, cuts)
		out.Request, out.Response = c.exchange(since, "tools/call", err)
		err = c.explain(err, since)
		if out.Request != nil {
			out.RequestID = out.Request.RequestID()
		}
		s.classify(&out, res, err, o)
		if coerced(&out) {
			s.Coercing = true
			out.Note = strings.TrimPrefix(out.Note+"; "+noteCoerced, "; ")
			s.Notes = append(s.Notes, fmt.Sprintf("%s %s: %s", out.Kind, out.Tool, noteCoerced))
		}
		o.logf("  %-22s %-24s %s", p.Kind, p.Tool, describe(&out))
		s.Outcomes = append(s.Outcomes, out)
	}
	return s
}

var errCap = errors.New("call cap reached")

// Notes on a coercing server.
const (
	noteCoerced     = "the server ran the handler on a wrong JSON type (it coerces types)"
	noteCoercedSkip = "skipped: the server coerces wrong types, so an argument probe may run its handler"
)

// coerced reports whether a wrong-type probe ran the tool's handler: the
// server answered with a completed, non-error result to a call whose
// argument had the wrong JSON type, so it did not reject the arguments.
//
// Note: an isError result may come from the handler too, but it may as
// well be the SDK's argument check; only the non-error answer is proof.
func coerced(o *Outcome) bool {
	return o.Kind == study.WrongType && o.Err == nil && o.Result != nil && !o.Result.IsError
}

// frameWait bounds the wait for a response frame the SDK has already
// decoded (see Recorder.AwaitExchange). A variable so that a test can make
// a wait that should not happen unmistakable.
var frameWait = 2 * time.Second

func describe(o *Outcome) string {
	switch o.Status {
	case statusFailure:
		if o.Wire != o.Surface {
			return fmt.Sprintf("%s (wire: %s)", o.Surface, o.Wire)
		}
		return string(o.Surface)
	case statusClientError:
		return "client error: " + o.Note
	}
	return o.Status
}

// classify fills an outcome's view and surfaces. Note: it first cuts the
// server text to the text cap (boundCall), so that every rule reads what
// the corpus keeps; structuredContent is bounded after the outputSchema
// check, which needs all of it.
func (s *Server) classify(out *Outcome, res *mcp.CallToolResult, err error, o *Options) {
	out.Cut = boundCall(res, err, o.maxText())
	defer func() { out.Cut = append(out.Cut, boundStructured(res, o.maxText())...) }()
	out.Err, out.Result = err, res
	var werr error
	out.Wire, werr = wireSurface(out.Response, o.maxText())
	if err != nil {
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) {
			out.Status, out.Note = statusClientError, err.Error()
			return
		}
		out.RPC = rpc
		out.Surface = study.ProtocolError
	} else {
		shape, serr := shapeOfResult(res)
		if serr != nil {
			out.Status, out.Note = statusClientError, serr.Error()
			return
		}
		out.Surface = shape.surface()
		if o.ValidateOutput {
			var tool *Tool
			for i := range s.Tools {
				if s.Tools[i].Name == out.Tool {
					tool = &s.Tools[i]
				}
			}
			chk := CheckOutput(tool, res)
			out.Check = &chk
			if chk.Verdict == study.OutputRejected {
				out.Surface = study.ProtocolError
			}
		}
	}
	switch {
	case werr != nil:
		out.Status, out.Note = statusClientError, "raw frames: "+werr.Error()
	case out.Wire == "":
		out.Status = statusNoFailure
		if out.Surface != "" {
			out.Note = "the validating client rejected an ordinary success"
		}
	default:
		out.Status = statusFailure
	}
}

// framesName is the frames file of a server, relative to the output
// directory.
func framesName(pseudo string) string { return "private/frames/" + pseudo + ".jsonl" }

// scrubber returns the one scrubber for everything of this server that
// can reach the corpus: its tool names and its own names (label, reported
// name and title) become pseudonyms; the made-up tool name and probe
// values are protected; the target's configured credentials are known
// secrets.
func (s *Server) scrubber(o *Options) *scrubber {
	names := maps.Clone(s.ToolPseudonyms)
	if names == nil {
		names = map[string]string{}
	}
	for _, n := range []string{s.Name, s.Title, s.Target.Label} {
		if n != "" {
			names[n] = s.Pseudonym
		}
	}
	protect := []string{"stress-probe"}
	for _, out := range s.Outcomes {
		if out.Kind == study.NonexistentTool {
			protect = append(protect, out.Tool)
		}
	}
	return newScrubber(names, o.RedactFailureText, protect...).withSecrets(s.Target.secrets()...)
}

// Build turns a server's failures into scenario records; framesRel is the
// frames file relative to the corpus file. Each record is checked before it
// is kept (see vet); one that fails, or cannot be built, goes to
// s.Quarantined with the reason instead, and the others are kept.
func (s *Server) Build(o *Options, framesRel string) {
	s.Scenarios, s.Quarantined = nil, nil
	s.Redacted, s.Flagged = map[string]int{}, map[string]int{}
	seen := map[string]bool{}
	for i := range s.Outcomes {
		out := &s.Outcomes[i]
		if out.Status != statusFailure {
			continue
		}
		q := Quarantined{ID: s.recordID(out), Server: s.Pseudonym, Probe: out.Kind, Tool: out.Tool}
		sc := s.scrubber(o)
		rec, err := s.scenario(out, sc, framesRel)
		if err != nil {
			q.Reason = "cannot build the record: " + err.Error()
			s.Quarantined = append(s.Quarantined, q)
			continue
		}
		q.Record, _ = json.Marshal(rec)
		if q.Reason = vet(rec, sc); q.Reason == "" && seen[rec.ID] {
			q.Reason = "duplicate id " + rec.ID
		}
		if q.Reason != "" {
			s.Quarantined = append(s.Quarantined, q)
			continue
		}
		seen[rec.ID] = true
		s.Scenarios = append(s.Scenarios, rec)
	}
	sort.Slice(s.Scenarios, func(i, j int) bool { return s.Scenarios[i].ID < s.Scenarios[j].ID })
}

// recordID is the id of the record an outcome makes.
func (s *Server) recordID(out *Outcome) string {
	id := s.Pseudonym + "-" + probeShort[out.Kind]
	if out.Kind == study.Sentinel {
		id += "-" + strings.TrimPrefix(s.ToolPseudonyms[out.Tool], "tool_")
	}
	return id
}

var probeShort = map[study.Probe]string{
	study.NonexistentTool: "nx", study.WrongType: "wt", study.MissingRequired: "mr", study.Sentinel: "sv",
}

// scenario builds one record. Every string from the server (or derived
// from its tool schemas) enters the record through sc.
func (s *Server) scenario(out *Outcome, sc *scrubber, framesRel string) (study.Scenario, error) {
	var (
		obs  json.RawMessage
		err  error
		text string // the failure text, scrubbed
		code int64
	)
	var check *study.OutputCheck
	if out.Check != nil {
		c := *out.Check
		c.Reason = sc.text(c.Reason)
		check = &c
	}
	rejected := check != nil && check.Verdict == study.OutputRejected
	switch {
	case out.RPC != nil:
		obs, err = observeError(out.RPC, sc)
		code = out.RPC.Code
	case rejected:
		obs, err = observeRejection(check)
		code = int64(check.Code)
	default:
		obs, err = observeResult(out.Result, sc)
	}
	if err != nil {
		return study.Scenario{}, err
	}
	// Note: the rules read the observation (what a model is shown); for a
	// validating client's rejection that is the rejection, and the rejected
	// result stays in the frames.
	text = observationText(obs)
	cause, rule := causeOf(out.Kind, text)
	info, _ := cause.Info()
	plan := out.Plan
	plan.Field = sc.other(plan.Field) // a schema's property name is the server's too
	target := targetOf(cause, plan, text)
	env, err := Envelope(info.Code, target, info.Preferred[0], observationText(obs), info.Words)
	if err != nil {
		return study.Scenario{}, err
	}
	args, err := json.Marshal(sc.value(out.Arguments))
	if err != nil {
		return study.Scenario{}, err
	}
	id := s.recordID(out)
	tool := ""
	if out.Kind != study.NonexistentTool {
		tool = s.ToolPseudonyms[out.Tool]
	}
	capt := &study.Capture{
		Frames: framesRel, RequestID: out.RequestID, Tool: tool, Arguments: args,
		SDK: s.SDK, View: s.View, WireSurface: out.Wire, OutputValidation: check,
		CauseRule: rule, Proposed: true,
	}
	if out.Response != nil {
		if n, ok := wireTextCode(out.Response); ok {
			capt.TextCode = &n
		}
	}
	typed := rules.HasTyped(obs)
	profile := rules.Propose(obs, out.Surface, code, cause, target, text, typed)
	capt.Dropped = append(out.Cut[:len(out.Cut):len(out.Cut)], sc.dropped...)
	capt.Redacted, capt.Flagged = nonEmpty(sc.redacted), nonEmpty(sc.flagged)
	for k, v := range sc.redacted {
		s.Redacted[k] += v
	}
	for k, v := range sc.flagged {
		s.Flagged[k] += v
	}
	return study.Scenario{
		ID: id, Server: s.Pseudonym, ProtocolVersion: sc.other(s.ProtocolVersion),
		Probe: out.Kind, Cause: cause, Surface: out.Surface, Observation: obs,
		Code: info.Code, Target: target, Preferred: info.Preferred[0],
		NonHarm: []study.Policy{info.Preferred[0], study.StopOrEscalate}, ControlEnvelope: env,
		Profile: profile, Capture: capt,
	}, nil
}

// observationText is the failure text of an observation.
func observationText(obs json.RawMessage) string {
	s := study.Scenario{Observation: obs}
	return s.ObservationText()
}

// wireTextCode reads a JSON-RPC code quoted at the start of the first text
// block of a raw response (TypeScript SDK servers: "MCP error -32602: …").
func wireTextCode(f *Frame) (int, bool) {
	if f.code.known {
		return f.code.n, f.code.ok
	}
	var m wireResponse
	if json.Unmarshal(f.Bytes(), &m) != nil || m.Result == nil {
		return 0, false
	}
	for _, c := range m.Result.Content {
		if c.Type == "text" {
			return quotedCode(c.Text)
		}
	}
	return 0, false
}
