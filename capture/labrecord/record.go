// Package labrecord makes the lab corpus: for each scenario of a lab set it
// starts a lab server process (stress lab serve -stdio), makes the
// scenario's own first call through the official Go SDK client, keeps
// every JSON-RPC frame exactly as it crossed the wire (in capture's frame
// format), and builds the corpus record (study.Scenario) from the
// client-normalized observation: cause and target from the fault class,
// preferred policy and non-harm set from the scenario, the counterfactual
// control envelope, and the profile coding proposed by the paper's rules.
//
// Unlike capture's probes, which only send invalid arguments to servers
// they do not own, the recorder sends the scenario's valid call: the lab is
// a sandbox the harness started, and the fault is armed by the lab itself.
package labrecord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/capture"
	"github.com/mcpstress/stress/coding/rules"
	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/scenario"
	"github.com/mcpstress/stress/study"
)

// framesDir is the directory, relative to the corpus files, of the frames
// files (one per scenario, framesDir/ID.jsonl).
const framesDir = "frames"

// Options configure Record.
type Options struct {
	// Command returns the command that serves scenario id of the set over
	// stdio (stress lab serve -stdio -set NAME -scenario ID -seed N).
	Command func(id string) *exec.Cmd
	// Wait bounds the wall time of one scenario's session (default 30 s).
	Wait time.Duration
}

// Recording is one scenario's corpus record and the frames of its session.
type Recording struct {
	Scenario study.Scenario
	Frames   []capture.Frame
}

// Record records every scenario of set, in set order.
func Record(ctx context.Context, set *lab.Set, o Options) ([]*Recording, error) {
	var out []*Recording
	for _, sc := range set.Scenarios {
		r, err := recordOne(ctx, sc, o)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.ID, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// recordOne records scenario sc: one session with a fresh lab process, the
// scenario's first call, and (for a call the lab holds past the client's
// deadline) the client giving up at the deadline on the lab clock.
func recordOne(ctx context.Context, sc *lab.Scenario, o Options) (*Recording, error) {
	if o.Wait <= 0 {
		o.Wait = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Wait)
	defer cancel()
	cmd := o.Command(sc.ID)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the lab server: %w", err)
	}
	// Note: closing the transport leaves stdout open: the server may still
	// write (an answer to a cancelled call) until it sees its stdin close,
	// and a closed read end would kill it with SIGPIPE; cmd.Wait closes
	// the pipe once it exits.
	rec := &capture.Recorder{}
	t := &mcp.IOTransport{Reader: rec.TeeReader(io.NopCloser(stdout)), Writer: rec.TeeWriter(stdin)}
	client := mcp.NewClient(&mcp.Implementation{Name: "stress-lab-record", Version: lab.Version}, nil)
	if err := mcp.AddSendingCustomMethod[*lab.StateParams, *lab.StateResult](client, lab.MethodState); err != nil {
		return nil, err
	}
	if err := mcp.AddSendingCustomMethod[*lab.AdvanceParams, *lab.StateResult](client, lab.MethodAdvance); err != nil {
		return nil, err
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("connecting to the lab server: %w (stderr: %s)", err, strings.TrimSpace(stderr.String()))
	}
	obs, abandoned, err := call(ctx, cs, sc)
	version := cs.InitializeResult().ProtocolVersion
	cs.Close()
	if werr := wait(cmd, 5*time.Second); werr != nil && err == nil {
		err = fmt.Errorf("the lab server did not exit cleanly: %v (stderr: %s)", werr, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		return nil, err
	}
	req, resp := rec.Exchange(0, "tools/call")
	if req == nil {
		return nil, errors.New("no tools/call request among the frames")
	}
	wire := sc.Surface // an abandoned call: the client raised the timeout
	if resp != nil && !abandoned {
		if wire, err = capture.WireSurface(resp); err != nil {
			return nil, fmt.Errorf("the tools/call response frame: %w", err)
		}
		if wire == "" {
			wire = study.SuccessShaped // isError false or absent on the wire
		}
	}
	s, err := scenarioOf(sc, obs, version)
	if err != nil {
		return nil, err
	}
	s.Capture = &study.Capture{
		Frames: framesDir + "/" + sc.ID + ".jsonl", RequestID: req.RequestID(), Tool: sc.Tool, Arguments: sc.Args,
		SDK: capture.SDKVersion(), View: study.ViewGoSDK, WireSurface: wire,
		CauseRule: fmt.Sprintf("the lab armed fault class %s", sc.Class), Proposed: true,
	}
	return &Recording{Scenario: s, Frames: rec.Frames()}, nil
}

// call makes the scenario's first call and returns its observation. A
// call the lab holds (its answer waits on the lab clock past the client's
// deadline; only timeout_committed scenarios on the protocol_error surface
// are watched for it, by polling lab/state) is
// abandoned as a client whose deadline passed: the client cancels it,
// waits for the lab to drop it, then moves the lab clock past the
// deadline, so the frames of the scenario's exchange are the same on
// every recording (how many lab/state polls it took is not).
func call(ctx context.Context, cs *mcp.ClientSession, sc *lab.Scenario) (obs json.RawMessage, abandoned bool, err error) {
	var args any
	if len(sc.Args) > 0 {
		args = sc.Args
	}
	cctx, cancelCall := context.WithCancel(ctx)
	defer cancelCall()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: sc.Tool, Arguments: args})
		done <- answer{res, err}
	}()
	held := func() (int, error) {
		st, err := mcp.CallCustomMethod[*lab.StateParams, *lab.StateResult](ctx, cs, lab.MethodState, &lab.StateParams{})
		if err != nil {
			return 0, fmt.Errorf("%s: %w", lab.MethodState, err)
		}
		return st.Held, nil
	}
	watch := sc.Held()
	for {
		var tick <-chan time.Time
		if watch {
			tick = time.After(2 * time.Millisecond)
		}
		select {
		case a := <-done:
			obs, err := lab.Observe(a.res, a.err)
			return obs, false, err
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-tick:
		}
		n, err := held()
		if err != nil || n == 0 {
			if err != nil {
				return nil, false, err
			}
			continue
		}
		if sc.Fault.DeadlineMS == nil {
			return nil, false, errors.New("the lab holds the call, but the scenario has no deadline")
		}
		cancelCall()
		<-done
		for n > 0 {
			select {
			case <-ctx.Done():
				return nil, false, ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
			if n, err = held(); err != nil {
				return nil, false, err
			}
		}
		if _, err := mcp.CallCustomMethod[*lab.AdvanceParams, *lab.StateResult](ctx, cs, lab.MethodAdvance, &lab.AdvanceParams{MS: *sc.Fault.DeadlineMS}); err != nil {
			return nil, false, fmt.Errorf("%s: %w", lab.MethodAdvance, err)
		}
		obs, err := lab.Observe(nil, &lab.TimeoutError{After: time.Duration(*sc.Fault.DeadlineMS) * time.Millisecond})
		return obs, true, err
	}
}

// scenarioOf builds the corpus record of scenario sc from the observation
// of its first call, without provenance (Capture) or coding (Coding).
func scenarioOf(sc *lab.Scenario, obs json.RawMessage, protocolVersion string) (study.Scenario, error) {
	cause := sc.Class
	info, ok := cause.Info()
	if !ok {
		return study.Scenario{}, fmt.Errorf("fault class %s has no study cause", sc.Class)
	}
	s := study.Scenario{
		ID: sc.ID, Server: sc.Server, ProtocolVersion: protocolVersion, Probe: study.LabCall,
		Cause: cause, Surface: sc.Surface, Observation: obs, Code: info.Code,
		Target: targetOf(sc), Preferred: sc.Preferred, PreferredSet: sc.PreferredSet, NonHarm: sc.NonHarm,
	}
	env := study.EnvelopeSpec{Code: info.Code, Target: s.Target, Policy: s.Preferred,
		SameRequest: "unsafe", SideEffects: info.SideEffects, Text: s.ObservationText(), Words: info.Words}
	if s.Preferred == study.RetryNow || s.Preferred == study.RetryLater {
		env.SameRequest = "safe"
	}
	if s.Preferred == study.RetryLater {
		ms := retryDelay(obs).Milliseconds()
		env.AfterMS = &ms
	}
	var err error
	if s.ControlEnvelope, err = study.MarshalEnvelope(env); err != nil {
		return study.Scenario{}, err
	}
	s.Profile = rules.Code(&s)
	return s, nil
}

// targetOf returns the repair target of scenario sc, by its class's target
// kind (study.CauseInfo.TargetKind): the argument at fault for a
// parameter, the first call's tool, the token parameter's credential, or
// the upstream dependency of the tool's server.
func targetOf(sc *lab.Scenario) study.Target {
	if sc.Class == study.RateLimit && sc.Limit == scenario.LimitServer {
		return study.Target{Kind: "tool", Name: sc.Tool} // the server's own limit on the tool
	}
	info, _ := sc.Class.Info()
	switch info.TargetKind {
	case "parameter":
		r := lab.New(sc, lab.Options{}).First()
		return study.Target{Kind: info.TargetKind, Pointer: r.Pointer}
	case "tool":
		return study.Target{Kind: info.TargetKind, Name: sc.Tool}
	case "credential":
		return study.Target{Kind: info.TargetKind, Name: "auth_token"}
	}
	return study.Target{Kind: "dependency", Name: lab.Dependency(sc.Server)}
}

// retryDelay is the delay a retry_later waits after a failure: the
// retry-after its observation announces, else lab.DefaultBackoff (as
// lab.Scenario.Execute waits).
func retryDelay(obs json.RawMessage) time.Duration {
	if d, ok := lab.RetryAfter(obs); ok {
		return d
	}
	return lab.DefaultBackoff
}

// Write writes recordings as a lab corpus in the directory final, which
// must not exist or be empty: one file per server (L01.json …, records
// in scenario order) and frames/ID.jsonl per scenario. The corpus is
// written under a temporary name, loaded as study.LoadCorpus loads it,
// and only then renamed into place (internal/outdir).
func Write(final string, recs []*Recording) error {
	out, err := outdir.Create(final, nil)
	if err != nil {
		return err
	}
	defer out.Abort()
	dir := out.Path()
	if err := os.MkdirAll(filepath.Join(dir, framesDir), 0o755); err != nil {
		return err
	}
	byServer := map[string][]study.Scenario{}
	for _, r := range recs {
		byServer[r.Scenario.Server] = append(byServer[r.Scenario.Server], r.Scenario)
		var b bytes.Buffer
		if err := capture.WriteFrames(&b, r.Frames); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, framesDir, r.Scenario.ID+".jsonl"), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	for _, srv := range slices.Sorted(maps.Keys(byServer)) {
		b, err := json.MarshalIndent(byServer[srv], "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, srv+".json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if _, err := study.LoadCorpus(os.DirFS(dir), "."); err != nil {
		return fmt.Errorf("the corpus written does not load: %w", err)
	}
	return out.Commit()
}

// wait waits up to d for cmd to exit after its stdin closed, then kills it.
func wait(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("no exit %s after its stdin closed; killed", d)
	}
}
