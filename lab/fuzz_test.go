package lab

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/study"
)

// hostileArgs are arguments no tool expects.
var hostileArgs = []string{
	``, `null`, `[]`, `[1,2]`, `"x"`, `42`, `true`, `{`, `{"a":1}{"b":2}`, `{} []`,
	`{"order_id": null}`, `{"quantity": 1e999}`, `{"quantity": -0}`, `{"quantity": 1.5}`, `{"quantity": 99999999999999999999}`,
	`{"charges": [null]}`, `{"charges": [[]]}`, `{"files": "x"}`, `{"path": "/../etc/passwd"}`, `{"path": "//"}`,
	`{"path": "\ud800"}`, `{"auth_token": {"$from": 0}}`, `{"scope": "*"}`, `{"content": "` + strings.Repeat("é", 3000) + `"}`,
	strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000),
}

// FuzzTools calls any tool name with any arguments on a lab with any
// scenario of the core set armed (or none), before or after the first
// call, through the lab and through the MCP handler: every call gets a
// completed result or a JSON-RPC error, never a panic, and the lab's state
// and outcome stay readable.
//
//	go test -fuzz FuzzTools -fuzztime 60s ./lab
func FuzzTools(f *testing.F) {
	set := coreSet(f)
	for name, args := range validCalls {
		f.Add(uint16(0), name, []byte(args))
	}
	for i, sc := range set.Scenarios {
		f.Add(uint16(i+1), sc.Tool, []byte(sc.Args))
		f.Add(uint16(i+1)|0x8000, sc.Tool, []byte(sc.Args))
	}
	for i, a := range hostileArgs {
		f.Add(uint16(i), tools[i%len(tools)].name, []byte(a))
	}
	f.Add(uint16(3), "", []byte(`{}`))
	f.Add(uint16(3), strings.Repeat("x", 1000), []byte(`{}`))
	f.Add(uint16(7), "charge_payment\x00", []byte(`{}`))
	f.Fuzz(func(t *testing.T, sel uint16, name string, args []byte) {
		var sc *Scenario
		if i := int(sel&0x7fff) % (len(set.Scenarios) + 1); i > 0 {
			sc = set.Scenarios[i-1]
		}
		l := New(sc, Options{Seed: int64(sel)})
		if sc != nil && sel&0x8000 != 0 {
			l.First()
		}
		checkResponse(t, l.Call(name, args))
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a held answer (timeout_committed) returns at once
		res, err := answer(ctx, l, name, args, "")
		var rpc *jsonrpc.Error
		switch {
		case err == nil && res == nil:
			t.Fatal("no result and no error")
		case err != nil && res != nil:
			t.Fatal("a result and an error")
		case err != nil && !errors.As(err, &rpc) && !errors.Is(err, context.Canceled):
			t.Fatalf("the handler returned %T %v, not a JSON-RPC error", err, err)
		}
		var doc any
		if json.Unmarshal(l.State(), &doc) != nil {
			t.Fatal("the state is not JSON")
		}
		if sc != nil {
			for _, p := range []string{"retry_now", "select_tool"} {
				if _, err := l.Execute(policy(p), 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		l.Settle()
		if o := l.Outcome(); !json.Valid(o.State) {
			t.Fatal("the outcome's state is not JSON")
		}
	})
}

// checkResponse checks a lab response's invariants.
func checkResponse(t *testing.T, r Response) {
	t.Helper()
	if (r.Result == nil) == (r.Err == nil) {
		t.Fatalf("result %v and error %v", r.Result, r.Err)
	}
	obs := r.Observation()
	if !json.Valid(obs) {
		t.Fatalf("observation %q is not JSON", obs)
	}
	if r.Err != nil && (r.Err.Message == "" || r.Err.Code == 0) {
		t.Fatalf("JSON-RPC error %+v", r.Err)
	}
	if r.Failed && r.Class == "" {
		t.Fatal("a failure without a class")
	}
	if r.Result != nil && len(r.Result.Content) == 0 {
		t.Fatal("a result without content")
	}
}

// TestHostileCalls sends every hostile argument to every tool (and to an
// unknown one) through the Go SDK client over an in-memory transport:
// each gets a completed result or a JSON-RPC error, and the session
// survives.
func TestHostileCalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, sc := range []*Scenario{nil, coreScenario(t, "X04"), coreScenario(t, "X29")} {
		l := New(sc, Options{})
		ct, st := mcp.NewInMemoryTransports()
		ss, err := NewServer(l).Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := newClient().Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		names := append(tools2names(), "no_such_tool", "")
		for _, name := range names {
			for _, a := range hostileArgs {
				var arg any
				if a != "" && json.Valid([]byte(a)) {
					arg = json.RawMessage(a)
				} else if a != "" {
					arg = a // not JSON: sent as a string
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: arg})
				var rpc *jsonrpc.Error
				if err != nil && !errors.As(err, &rpc) {
					t.Fatalf("%s %.40q: %v", name, a, err)
				}
				if err == nil && (res == nil || len(res.Content) == 0) {
					t.Fatalf("%s %.40q: an empty result", name, a)
				}
			}
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("the session did not survive: %v", err)
		}
		cs.Close()
		ss.Wait()
	}
}

func coreScenario(t testing.TB, id string) *Scenario {
	t.Helper()
	sc, ok := coreSet(t).Scenario(id)
	if !ok {
		t.Fatalf("no scenario %s", id)
	}
	return sc
}

func policy(p string) study.Policy { return study.Policy(p) }
