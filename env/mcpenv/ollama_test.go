package mcpenv

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstress/stress/env/labenv"
	"github.com/mcpstress/stress/internal/testserver/ollamatest"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/ollama"
	"github.com/mcpstress/stress/models/transport"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// actFormat is the answer schema of the action task for the tiny model
// on R07 (search the memory graph): the label, a tool of server-memory's
// read tools and search_nodes' arguments, so that a call the model
// writes can pass the client's check.
const actFormat = `{"type":"object","properties":{` +
	`"operation_status":{"type":"string","enum":["failed","succeeded"]},` +
	`"recovery_policy":{"type":"string","enum":["revise_arguments","select_tool","authenticate","retry_later","retry_now","stop_or_escalate"]},` +
	`"tool":{"type":"string","enum":["search_nodes","read_graph","search_graph"]},` +
	`"arguments":{"type":"object","properties":{"query":{"type":"string","enum":["tea","coffee"]}},"required":["query"]}},` +
	`"required":["operation_status","recovery_policy","tool","arguments"]}`

// TestTinyModelActsOnServerMemory: the tiny model on a real Ollama server
// (v0.17.4) answers the action task on R07 through the JSON channel with
// actFormat as format; each decision runs on its own server-memory, and
// every call the server received after the failing one is exactly a call
// calls.jsonl records as sent, in order; a refused call is recorded with
// its reason and never reaches the server.
func TestTinyModelActsOnServerMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Ollama and Node servers")
	}
	mods := modules(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	m := tinyActModel(t, "ollamatest-act-memory", actFormat, "tool", "arguments", "query", "search_nodes", "read_graph", "search_graph", "tea", "coffee")
	set, err := BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := set.Scenario("R07")
	rec := records(t, &Set{Name: "r07", Scenarios: []*Scenario{sc}}, mods)["R07"]
	p := actPrompt(t)
	f := &recording{EnvFactory: Factory(set, Options{Modules: mods, CallTimeout: loadedTimeout})}
	sent, refused, written := 0, map[string]int{}, 0
	tally := results.NewTally()
	for rep := 1; rep <= 6; rep++ {
		key := simulator.Key{Model: "tiny", Prompt: "act", Condition: study.Normalized, Scenario: "R07", Replicate: rep}
		d := simulator.Run(ctx, m, p, rec, key, simulator.Config{StudySeed: 3, Temperature: 0.7, ReplayCap: 3, Env: f, Task: simulator.Act,
			Options: map[string]any{"num_predict": 96}})
		if d.Err != nil {
			t.Fatalf("replicate %d: %v", rep, d.Err)
		}
		var recorded []string
		for _, c := range results.CallsOf(&d, rec) {
			if c.Task != manifests.TaskAct {
				t.Errorf("line without task act")
			}
			if a := c.Action; a != nil && a.Sent {
				recorded = append(recorded, a.Tool+" "+string(a.Arguments))
				if a.Channel == simulator.ChannelText {
					written++
				}
			} else if a != nil {
				refused[a.Invalid]++
			}
		}
		var got []string
		for _, c := range f.calls("R07")[1:] {
			got = append(got, c.Tool+" "+string(c.Arguments))
		}
		if strings.Join(recorded, "\n") != strings.Join(got, "\n") {
			t.Errorf("replicate %d: calls.jsonl records %q as sent, server-memory received %q", rep, recorded, got)
		}
		sent += len(got)
		row := results.RowOf(&d)
		tally.Add(&row)
	}
	c := tally.Cells()[0]
	t.Logf("sent %d calls (%d written by the model), refused %v; cell %+v", sent, written, refused, c)
	// The seeds make the model write calls that pass the client's check
	// and reach the server, and calls that it refuses (search_graph is
	// not a tool of server-memory).
	if c.LabN != 6 || written == 0 || refused[simulator.ReasonUnknownTool] == 0 || c.Count(simulator.InvalidAction) != refused[simulator.ReasonUnknownTool] || c.Count(simulator.Calls) != 6+sent {
		t.Errorf("sent %d (%d written), refused %v, cell %+v", sent, written, refused, c)
	}
}

// shared is the Ollama server the tests of this file share.
var shared struct {
	once sync.Once
	srv  *ollamatest.Server
	err  error
}

// tinyActModel imports the tiny model under name on the shared real
// Ollama server, favouring words, and returns it as a backend whose
// format is the JSON schema format.
func tinyActModel(t *testing.T, name, format string, words ...string) models.Model {
	t.Helper()
	if !ollamatest.Available() {
		t.Fatal("the Ollama test binary is not installed: run scripts/ollama-install.sh (scripts/test does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpenv-ollama-")
		if err != nil {
			shared.err = err
			return
		}
		shared.srv, shared.err = ollamatest.StartServer(ctx, dir)
	})
	if shared.err != nil {
		t.Fatalf("real Ollama server: %v", shared.err)
	}
	info, err := shared.srv.CreateModel(ctx, name, ollamatest.ChatTemplate, ollamatest.WithWords(words...))
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal([]byte(format), &f); err != nil {
		t.Fatal(err)
	}
	m, err := ollama.New(models.Spec{Name: "tiny", Model: info.Name, Host: shared.srv.Host, Format: f}, transport.Options{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Stop()
		os.RemoveAll(shared.srv.Dir)
	}
	os.Exit(code)
}

// labFormat is the action task's answer schema for the tiny model on lab
// scenario X29 (place_order is unknown; create_order is the tool).
const labFormat = `{"type":"object","properties":{` +
	`"operation_status":{"type":"string","enum":["failed","succeeded"]},` +
	`"recovery_policy":{"type":"string","enum":["revise_arguments","select_tool","authenticate","retry_later","retry_now","stop_or_escalate"]},` +
	`"tool":{"type":"string","enum":["create_order","place_order","get_stock"]},` +
	`"arguments":{"type":"object","properties":{"customer":{"type":"string","enum":["C-23"]},"sku":{"type":"string","enum":["SKU-RED"]},"quantity":{"type":"integer","enum":[4,40]}},"required":["customer","sku","quantity"]}},` +
	`"required":["operation_status","recovery_policy","tool","arguments"]}`

// TestTinyModelActsOnLab: the tiny model on the real Ollama server acts
// on lab scenario X29 through the JSON channel; every call the lab
// received after the failing one (its own call log) is a call the
// decision records as sent, in order.
func TestTinyModelActsOnLab(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Ollama")
	}
	m := tinyActModel(t, "ollamatest-act-lab", labFormat, "tool", "arguments", "customer", "sku", "quantity", "create_order", "place_order", "get_stock", "C-23", "SKU-RED")
	set, err := lab.BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := set.Scenario("X29")
	first, err := labenv.New(sc, 1).Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rec := &study.Scenario{ID: sc.ID, Server: sc.Server, Observation: first, Preferred: sc.Preferred, NonHarm: sc.NonHarm}
	p := actPrompt(t)
	tally := results.NewTally()
	written := 0
	for rep := 1; rep <= 8; rep++ {
		env := &oneLab{sc: sc}
		key := simulator.Key{Model: "tiny", Prompt: "act", Condition: study.Normalized, Scenario: sc.ID, Replicate: rep}
		d := simulator.Run(context.Background(), m, p, rec, key, simulator.Config{StudySeed: 5, Temperature: 0.7, ReplayCap: 3, Env: env, Task: simulator.Act,
			Options: map[string]any{"num_predict": 96}})
		if d.Err != nil {
			t.Fatalf("replicate %d: %v", rep, d.Err)
		}
		var recorded []string
		for _, c := range results.CallsOf(&d, rec) {
			if a := c.Action; a != nil && a.Sent {
				recorded = append(recorded, a.Tool)
				if a.Channel == simulator.ChannelText {
					written++
				}
			}
		}
		var st struct {
			Calls []struct {
				Tool string `json:"tool"`
			} `json:"calls"`
		}
		if err := json.Unmarshal(env.env.Lab().State(), &st); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range st.Calls[1:] {
			got = append(got, c.Tool)
		}
		if strings.Join(recorded, " ") != strings.Join(got, " ") {
			t.Errorf("replicate %d: recorded %v as sent, the lab's log has %v", rep, recorded, got)
		}
		row := results.RowOf(&d)
		tally.Add(&row)
	}
	c := tally.Cells()[0]
	t.Logf("%d calls written by the model; cell %+v", written, c)
	if c.LabN != 8 || written == 0 {
		t.Errorf("cell %+v, %d written calls sent", c, written)
	}
}

// oneLab is the factory of one lab decision, keeping its environment.
type oneLab struct {
	sc  *lab.Scenario
	env *labenv.Env
}

func (o *oneLab) NewEnv(ctx context.Context, scenario string, seed int64) (simulator.Environment, error) {
	o.env = labenv.New(o.sc, seed)
	return o.env, nil
}
