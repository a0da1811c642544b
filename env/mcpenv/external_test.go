package mcpenv

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/internal/testserver/hostilemcp"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// scripted answers every turn with its text.
type scripted string

func (s scripted) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	return models.Reply{Text: string(s)}, nil
}

// TestExternalReadOnly: on a server the harness did not start (a healthy
// lab over streamable HTTP), only read-only tools may be called: a call
// to a write tool is refused by the client's check (not_read_only) and
// never reaches the server; a read-only call goes through; a scenario
// whose own first call writes is refused at start.
func TestExternalReadOnly(t *testing.T) {
	l := lab.New(nil, lab.Options{Seed: 1})
	srv := lab.NewServer(l)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	sc := stockScenario("EXT1", "invalid_type", "Show the stock of SKU-RED.", `{"sku": 5}`)
	set := &Set{Name: "ext", Scenarios: []*Scenario{sc}}
	f := Factory(set, Options{ExternalURL: hs.URL})
	p := actPrompt(t)
	env, err := f.NewEnv(context.Background(), "EXT1", 1)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := env.Start(context.Background())
	env.(*Env).Close()
	if err != nil {
		t.Fatal(err)
	}
	rec := &study.Scenario{ID: "EXT1", Server: "X", Observation: obs, Preferred: sc.Preferred, NonHarm: sc.NonHarm}
	key := simulator.Key{Model: "m", Prompt: "act", Condition: study.Normalized, Scenario: "EXT1", Replicate: 1}
	before := strings.Count(string(l.State()), `"tool":"create_order"`)
	write := scripted(`{"operation_status":"failed","recovery_policy":"select_tool","tool":"create_order","arguments":{"customer":"C-17","sku":"SKU-RED","quantity":1}}`)
	d := simulator.Run(context.Background(), write, p, rec, key, simulator.Config{ReplayCap: 3, Env: f, Task: simulator.Act})
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	if a := d.Turns[0].Action; a == nil || a.Invalid != simulator.ReasonNotReadOnly || a.Sent || !d.Outcome.Values.Of(simulator.InvalidAction) {
		t.Errorf("write call: action %+v, outcome %+v", a, d.Outcome)
	}
	if n := strings.Count(string(l.State()), `"tool":"create_order"`); n != before {
		t.Errorf("the refused write reached the server (%d create_order calls, %d before)", n, before)
	}
	read := scripted(`{"operation_status":"failed","recovery_policy":"revise_arguments","tool":"get_stock","arguments":{"sku":"SKU-RED"}}`)
	d = simulator.Run(context.Background(), read, p, rec, key, simulator.Config{ReplayCap: 3, Env: f, Task: simulator.Act})
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	if a := d.Turns[0].Action; a == nil || !a.Sent || !d.Outcome.Values.Of(simulator.Recovered) {
		t.Errorf("read call: action %+v, outcome %+v", a, d.Outcome)
	}
	bad := *sc
	bad.ID, bad.Tool, bad.Args = "EXT2", "create_order", json.RawMessage(`{"customer":"C-17"}`)
	e := New(&bad, Options{ExternalURL: hs.URL})
	defer e.Close()
	if _, err := e.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "create_order may not be called on the external server") {
		t.Errorf("a writing first call on an external server: %v", err)
	}
}

// TestExternalToolPages: the tools of a server that lists them one page
// at a time (the Go SDK's server with a page of one tool) are all read,
// so the scenario's tool on the second page may be called and the model
// is shown both.
func TestExternalToolPages(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "1"}, &mcp.ServerOptions{PageSize: 1})
	type in struct {
		SKU string `json:"sku"`
	}
	read := func(ctx context.Context, r *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok " + a.SKU}}}, nil, nil
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(srv, &mcp.Tool{Name: "get_price", Annotations: ro}, read)
	mcp.AddTool(srv, &mcp.Tool{Name: "get_stock", Annotations: ro}, read)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	sc := stockScenario("P1", "invalid_type", "Show the stock.", `{"sku": 5}`)
	e := New(sc, Options{ExternalURL: hs.URL})
	defer e.Close()
	if _, err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tools, err := e.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, raw := range tools {
		var tl struct{ Name string }
		json.Unmarshal(raw, &tl)
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "get_price,get_stock" {
		t.Errorf("tools shown %v, want both pages", names)
	}
}

// TestObservationBounded: a tool's 1 MiB error text reaches the model cut
// to capture's text cap (64 KiB), marked, as a captured observation would
// keep it.
func TestObservationBounded(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "loud", Version: "1"}, nil)
	type in struct {
		SKU string `json:"sku"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "get_stock", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, r *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("no such sku ", 1<<20/12)}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	sc := stockScenario("B1", "invalid_value", "Show the stock.", `{"sku": "X"}`)
	e := New(sc, Options{ExternalURL: hs.URL})
	defer e.Close()
	obs, err := e.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) > 66<<10 || !strings.Contains(string(obs), "bytes cut by stress]") {
		t.Errorf("observation of %d bytes, ending %q", len(obs), obs[max(0, len(obs)-80):])
	}
}

// TestExternalAnswerCapped: an external server's answer over streamable
// HTTP is capped as the SDK caps a stdio frame (mcp.DefaultMaxLineLength,
// 16 MiB), as a JSON body and as a server-sent event: a 40 MiB tool result
// fails the call naming the cap, and the harness stops reading it (before
// the cap the whole answer was read and held: 1.07 GB peak on 40 MiB).
func TestExternalAnswerCapped(t *testing.T) {
	for _, sse := range []bool{false, true} {
		l := lab.New(nil, lab.Options{Seed: 1})
		srv := lab.NewServer(l)
		h, sent := hostilemcp.Flood(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil), 40<<20, sse)
		hs := httptest.NewServer(h)
		sc := stockScenario("BIG", "invalid_type", "Show the stock.", `{"sku": 5}`)
		e := New(sc, Options{ExternalURL: hs.URL})
		_, err := e.Start(context.Background())
		e.Close()
		hs.Close()
		if err == nil || !strings.Contains(err.Error(), "larger than the frame cap") {
			t.Errorf("sse %v: a 40 MiB answer: %v", sse, err)
		}
		if n := sent(); n > 2*mcp.DefaultMaxLineLength {
			t.Errorf("sse %v: the server sent %d bytes before the client stopped reading, want at most about the cap (%d)", sse, n, mcp.DefaultMaxLineLength)
		}
	}
}

// stockScenario is a scenario on an external server whose first call
// reads the stock of a SKU with args (the SKU at fault), recovered by
// revising the arguments.
func stockScenario(id string, class study.Cause, task, args string) *Scenario {
	sc := &Scenario{Server: "memory"}
	sc.ID, sc.Class, sc.Task, sc.Tool, sc.Args, sc.Pointer = id, class, task, "get_stock", json.RawMessage(args), "/sku"
	sc.Preferred = study.ReviseArguments
	sc.NonHarm = []study.Policy{study.ReviseArguments, study.StopOrEscalate}
	sc.Spec = statediff.Spec{Goal: []statediff.Effect{{Call: "get_stock", Why: "the stock was read"}}}
	return sc
}

// TestDeadlineIsNotAnObservation: a call that gets no answer within the
// environment's deadline (CallTimeout) makes the decision an environment
// error; it is never shown to the model as a timeout observation, which
// would let a loaded machine change an outcome.
func TestDeadlineIsNotAnObservation(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	type in struct {
		SKU any `json:"sku"`
	}
	release := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "get_stock", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, r *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "too late"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	defer close(release)
	sc := stockScenario("SLOW1", "invalid_type", "Show the stock.", `{"sku": 5}`)
	e := New(sc, Options{ExternalURL: hs.URL, CallTimeout: 200 * time.Millisecond})
	defer e.Close()
	obs, err := e.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no answer within the environment's deadline of 200ms") {
		t.Fatalf("start: observation %s, error %v; want the deadline as an error", obs, err)
	}
}
