package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/study"
)

// The test binary doubles as a stdio lab server when LAB_HELPER is set:
// LAB_HELPER=serve LAB_SCENARIO=ID LAB_SEED=N serves that scenario of the
// core set ("" for a healthy lab) over stdin and stdout.
func TestMain(m *testing.M) {
	if os.Getenv("LAB_HELPER") != "serve" {
		os.Exit(m.Run())
	}
	var sc *Scenario
	if id := os.Getenv("LAB_SCENARIO"); id != "" {
		s, err := BuiltinSet("")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		var ok bool
		if sc, ok = s.Scenario(id); !ok {
			fmt.Fprintln(os.Stderr, "no scenario", id)
			os.Exit(2)
		}
	}
	seed, _ := strconv.ParseInt(os.Getenv("LAB_SEED"), 10, 64)
	err := NewServer(New(sc, Options{Seed: seed})).Run(context.Background(), &mcp.StdioTransport{})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "lab helper:", err)
	}
	os.Exit(0)
}

func newClient() *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "lab-test", Version: "1"}, nil)
	must(mcp.AddSendingCustomMethod[*StateParams, *StateResult](c, MethodState))
	must(mcp.AddSendingCustomMethod[*AdvanceParams, *StateResult](c, MethodAdvance))
	return c
}

// wireCaller calls tools through a Go SDK client session to a lab served
// on clock. A call the server holds (a timeout_committed scenario's answer,
// waiting on the lab clock) is abandoned as a client whose deadline passed
// abandons it, and reported as the lab reports it (Response.Timeout, the
// scenario's deadline), so that Scenario.Execute lets that deadline pass on
// the lab clock, which releases the held answer on the server.
func wireCaller(t *testing.T, cs *mcp.ClientSession, sc *Scenario, clock *VirtualClock) Caller {
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	return func(tool string, args json.RawMessage) Response {
		// A held answer the lab clock has released may not have left the
		// clock's sleepers yet (a loaded machine schedules it late): wait
		// for it, so that only this call can hold the clock below.
		for settle := time.Now(); clock.Sleepers() > 0; time.Sleep(time.Millisecond) {
			if time.Since(settle) > 30*time.Second {
				t.Fatalf("%s: a released answer still sleeps on the lab clock", sc.ID)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done := make(chan answer, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			done <- answer{res, err}
		}()
		var a answer
	wait:
		for {
			select {
			case a = <-done:
				break wait
			case <-time.After(time.Millisecond):
				if clock.Sleepers() > 0 {
					cancel()
					<-done
					if sc.Class != study.TimeoutCommitted {
						t.Fatalf("%s: the server held %s", sc.ID, tool)
					}
					return Response{Timeout: durMS(sc.Fault.DeadlineMS), Failed: true}
				}
			}
		}
		var r Response
		obs, oerr := Observe(a.res, a.err)
		if oerr != nil {
			t.Fatalf("%s: %s: %v", sc.ID, tool, oerr)
		}
		// Keep what Scenario.Execute reads (the result) and what the
		// comparison reads (the observation, rebuilt from the result).
		r.Result = a.res
		if a.err != nil {
			r.Result = nil
			r.Err = rpcErr(a.err)
		}
		if got := r.Observation(); string(got) != string(obs) {
			t.Fatalf("%s: the observation does not survive: %s vs %s", sc.ID, got, obs)
		}
		return r
	}
}

// TestInMemory checks that the lab served by the Go SDK and called by the
// Go SDK client over an in-memory transport answers exactly what the
// in-process lab (and so labenv) answers: for every scenario of the core
// set on every surface and contract its class allows, the first call and
// every policy repeated up to the replay cap give the same observations,
// and the outcome a harness reads from the served lab (lab/state, with a
// write still queued on the server) is the in-process lab's: the same
// state, recovery and harms.
func TestInMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	ctx := context.Background()
	n, compared := 0, 0
	for _, base := range coreSet(t).Scenarios {
		for _, sc := range variants(base) {
			held := sc.Class == study.TimeoutCommitted && sc.Surface == study.ProtocolError
			for _, p := range study.Policies {
				if p == study.RetryNow && !held && n%3 != 0 {
					n++
					continue // Note: retry_later makes the same calls; a third of retry_now keeps the test short.
				}
				direct := New(sc, Options{Seed: 9})
				served := New(sc, Options{Seed: 9})
				ct, st := mcp.NewInMemoryTransports()
				ss, err := NewServer(served).Connect(ctx, st, nil)
				if err != nil {
					t.Fatal(err)
				}
				cs, err := newClient().Connect(ctx, ct, nil)
				if err != nil {
					t.Fatal(err)
				}
				wire := wireCaller(t, cs, sc, served.Clock().(*VirtualClock))
				want := trajectoryOf(sc, p, direct.Clock(), direct.Call)
				got := trajectoryOf(sc, p, served.Clock(), wire)
				name := fmt.Sprintf("%s/%s/%v/%s", sc.ID, sc.Surface, sc.Contract, p)
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s: over the SDK\n%s\nin process\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				// The outcome as a harness reads it from the served lab
				// (lab/state over the wire, queued writes unlanded on the
				// server) and from the in-process lab (labenv's Final).
				res, err := mcp.CallCustomMethod[*StateParams, *StateResult](ctx, cs, MethodState, &StateParams{})
				if err != nil {
					t.Fatal(err)
				}
				direct.Settle() // as labenv's Final does
				a, b := direct.Outcome(), res.Outcome
				ja, _ := json.Marshal(a)
				jb, _ := json.Marshal(b)
				if string(ja) != string(jb) {
					t.Errorf("%s: the outcomes differ:\nserved     %s\nin process %s", name, jb, ja)
				}
				if a.Harm != (len(a.Harms) > 0) {
					t.Errorf("%s: harm %v with harms %+v", name, a.Harm, a.Harms)
				}
				cs.Close()
				ss.Wait()
				n++
				compared++
			}
		}
	}
	t.Logf("%d trajectories compared", compared)
}

// trajectoryOf makes the first call and executes p while its last call
// fails, up to the replay cap, through call; it returns the observations.
func trajectoryOf(sc *Scenario, p study.Policy, clock Clock, call Caller) []string {
	r := call(sc.Tool, sc.Args)
	if r.Timeout > 0 {
		clock.Advance(r.Timeout)
	}
	out := []string{string(r.Observation())}
	for turn := 0; p != study.StopOrEscalate && turn < 3; turn++ {
		wait, _ := RetryAfter(r.Observation())
		st, err := sc.Execute(p, wait, clock, call)
		if err != nil {
			panic(err)
		}
		last, ok := st.Last()
		if !ok {
			break
		}
		for _, x := range st.Responses {
			out = append(out, string(x.Observation()))
		}
		// Note: over the wire the ground truth (Failed) is unknown; a call
		// failed when its observation is an exception or an isError or
		// success-shaped failure, which the lab's successes never are
		// (they carry structuredContent).
		if !failedObservation(last.Observation()) {
			break
		}
		r = last
	}
	return out
}

func failedObservation(obs json.RawMessage) bool {
	var o struct {
		Exception json.RawMessage
		Result    *struct {
			IsError           bool
			StructuredContent json.RawMessage
		}
	}
	_ = json.Unmarshal(obs, &o)
	return o.Exception != nil || o.Result == nil || o.Result.IsError || o.Result.StructuredContent == nil
}

// TestStdio drives a lab over stdio, the test binary serving it, with the
// Go SDK client: tools/list shows every tool of the scenario's server with
// schemas and annotations, the rate limit refuses the first call, a call
// inside the window is a violation, lab/advance moves the lab clock past
// the window, the retry succeeds, and lab/state reports the outcome.
func TestStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "LAB_HELPER=serve", "LAB_SCENARIO=X04", "LAB_SEED=3")
	cmd.Stderr = os.Stderr
	cs, err := newClient().Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo.Name; got != "lab-billing" {
		t.Errorf("server name %q", got)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.InputSchema == nil || tl.OutputSchema == nil || tl.Annotations == nil {
			t.Errorf("%s lacks a schema or annotations", tl.Name)
		}
		if tl.Name == "charge_payment" && (tl.Annotations.ReadOnlyHint || tl.Annotations.IdempotentHint || *tl.Annotations.DestructiveHint) {
			t.Errorf("charge_payment annotations %+v", tl.Annotations)
		}
		if tl.Name == "list_payments" && !tl.Annotations.ReadOnlyHint {
			t.Errorf("list_payments is not read-only")
		}
	}
	if got := strings.Join(names, ","); got != "authenticate,charge_batch,charge_payment,get_invoice,list_payments,refund_payment" {
		t.Errorf("tools %s", got)
	}
	args := map[string]any{"invoice_id": "INV-2002", "amount_cents": 1599, "currency": "USD"}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "charge_payment", Arguments: args})
	if err != nil || !res.IsError || !strings.Contains(text(res), "retry after 30 s") {
		t.Fatalf("first call: %v %s", err, text(res))
	}
	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "charge_payment", Arguments: args})
	if !strings.Contains(text(res), "retry after 30 s") {
		t.Errorf("a call inside the window: %s", text(res))
	}
	st, err := mcp.CallCustomMethod[*AdvanceParams, *StateResult](ctx, cs, MethodAdvance, &AdvanceParams{MS: 30000})
	if err != nil || st.Outcome.ClockMS != 30000 || !st.Virtual || st.Scenario != "X04" {
		t.Fatalf("lab/advance: %v %+v", err, st)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "charge_payment", Arguments: args})
	if err != nil || res.IsError || !strings.Contains(text(res), `"invoice_id":"INV-2002"`) {
		t.Fatalf("after the window: %v %s", err, text(res))
	}
	st, err = mcp.CallCustomMethod[*StateParams, *StateResult](ctx, cs, MethodState, &StateParams{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Outcome.Recovered || !st.Outcome.Harm || st.Outcome.Calls != 3 || len(st.Outcome.Harms) != 1 {
		t.Errorf("outcome %+v (recovered, and harmed by the call inside the window)", st.Outcome)
	}
	if _, err := mcp.CallCustomMethod[*AdvanceParams, *StateResult](ctx, cs, MethodAdvance, &AdvanceParams{MS: -1}); err == nil {
		t.Error("lab/advance -1 succeeded")
	}
}

// TestHTTP drives a timeout_committed scenario over streamable HTTP: the
// client's deadline passes while the answer is held, the charge is
// committed all the same, lab/advance releases the held answer, and the
// read-before-retry shows the charge; a healthy lab lists every tool.
func TestHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc, _ := coreSet(t).Scenario("X07")
	l := New(sc, Options{Seed: 4})
	srv := NewServer(l)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	cs, err := newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The call's deadline passes once the server holds the answer: a
	// deadline set in wall time could pass before the request reached it
	// on a loaded machine.
	vc := l.Clock().(*VirtualClock)
	cctx := newDeadline()
	go func() {
		for deadline := time.Now().Add(30 * time.Second); vc.Sleepers() == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		}
		cctx.pass()
	}()
	_, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: "charge_payment", Arguments: sc.Args})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the held call: %v", err)
	}
	obs, _ := Observe(nil, err)
	if !strings.Contains(string(obs), `"type":"timeout","error":{"code":-32001`) {
		t.Errorf("observation %s", obs)
	}
	if l.Outcome().Recovered != true {
		t.Error("the charge was not committed before the deadline")
	}
	st, err := mcp.CallCustomMethod[*AdvanceParams, *StateResult](ctx, cs, MethodAdvance, &AdvanceParams{MS: 30000})
	if err != nil || st.Outcome.ClockMS != 30000 {
		t.Fatalf("lab/advance: %v %+v", err, st)
	}
	for deadline := time.Now().Add(30 * time.Second); vc.Sleepers() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the held answer was not released")
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_payments", Arguments: map[string]any{"invoice_id": "INV-2001"}})
	if err != nil || strings.Count(text(res), `"invoice_id":"INV-2001"`) != 1 {
		t.Errorf("list_payments: %v %s", err, text(res))
	}
	if o := l.Outcome(); !o.Recovered || o.Harm || o.Calls != 2 {
		t.Errorf("outcome %+v", o)
	}

	healthy := NewServer(New(nil, Options{}))
	hs2 := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return healthy }, nil))
	defer hs2.Close()
	cs2, err := newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs2.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	tools, err := cs2.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != len(tools2names()) {
		t.Fatalf("healthy tools/list: %v, %d tools", err, len(tools.Tools))
	}
	res, err = cs2.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	if err != nil || !res.IsError || text(res) != `unknown tool "nope"` {
		t.Errorf("healthy unknown tool: %v %s", err, text(res))
	}
}

// deadline is a context whose deadline passes when the test says so (and
// only then).
type deadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newDeadline() *deadline {
	return &deadline{Context: context.Background(), done: make(chan struct{})}
}

// pass lets the deadline pass: Done closes, Err is DeadlineExceeded.
func (d *deadline) pass() { d.once.Do(func() { close(d.done) }) }

func (d *deadline) Done() <-chan struct{} { return d.done }

func (d *deadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func tools2names() []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.name)
	}
	return out
}

func rpcErr(err error) *jsonrpc.Error {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return e
	}
	panic(err)
}

func text(res *mcp.CallToolResult) string {
	if res == nil {
		return "<nil>"
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
