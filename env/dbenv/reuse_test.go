package dbenv

import (
	"context"
	"encoding/json"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// comparable is an outcome with the stamps a fresh and a reused database
// may differ in (updated_at, which the diff ignores) blanked.
func comparable(t *testing.T, o simulator.EnvOutcome) simulator.EnvOutcome {
	t.Helper()
	var st map[string]any
	if err := json.Unmarshal(o.State, &st); err != nil {
		t.Fatal(err)
	}
	tables, _ := st["tables"].(map[string]any)
	for _, rows := range tables {
		for _, r := range rows.([]any) {
			delete(r.(map[string]any), "updated_at")
		}
	}
	o.State, _ = json.Marshal(st)
	return o
}

// TestReuseEquivalent: a decision on a kept server, its database reset
// in place after another scenario's decision changed it, ends exactly as
// on a fresh server and database: every scenario, under its first
// preferred policy and under retry_now (the one that harms where any
// does).
func TestReuseEquivalent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server per decision")
	}
	set, fresh := factory(t, SQLite, false)
	_, kept := factory(t, SQLite, true)
	ctx := context.Background()
	// The kept server first serves a decision that writes.
	if _, err := simulator.Executions(ctx, kept, "D11", 1, 3); err != nil {
		t.Fatal(err)
	}
	for _, sc := range set.Scenarios {
		for _, p := range []study.Policy{sc.Preferred, study.RetryNow} {
			if p == study.StopOrEscalate {
				continue
			}
			a, err := executeOne(ctx, fresh, sc.ID, p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := executeOne(ctx, kept, sc.ID, p)
			if err != nil {
				t.Fatal(err)
			}
			if ca, cb := comparable(t, a), comparable(t, b); !reflect.DeepEqual(ca, cb) {
				t.Errorf("%s %s: fresh %+v\nkept %+v", sc.ID, p, ca, cb)
			}
		}
	}
	if n := len(kept.idle); n == 0 {
		t.Error("no server was kept")
	}
}

// executeOne carries out policy p's canonical recovery once on a new
// environment of f.
func executeOne(ctx context.Context, f *Factory, id string, p study.Policy) (simulator.EnvOutcome, error) {
	e, err := f.Actor(id)
	if err != nil {
		return simulator.EnvOutcome{}, err
	}
	defer e.Close()
	if _, err := e.Start(ctx); err != nil {
		return simulator.EnvOutcome{}, err
	}
	if _, _, err := e.Execute(ctx, 0, simulator.Answer{Status: study.Failed, Policy: p, Valid: true}); err != nil {
		return simulator.EnvOutcome{}, err
	}
	return e.Final(ctx)
}

// TestSchemaChange: a decision that changes the schema through
// execute_sql (a column added) leaves a server that is not kept, and one
// that drops a table is scored with the table's rows lost, not as an
// error.
func TestSchemaChange(t *testing.T) {
	_, f := factory(t, SQLite, true)
	ctx := context.Background()
	for _, c := range []struct {
		sql, harm string
	}{
		{"ALTER TABLE customers ADD COLUMN vip INTEGER", ""},
		{"DROP TABLE payments", "data_loss"},
	} {
		t.Run(c.sql, func(t *testing.T) {
			e, err := f.Actor("D05")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Start(ctx); err != nil {
				t.Fatal(err)
			}
			args, _ := json.Marshal(map[string]string{"sql": c.sql})
			if _, _, err := e.Send(ctx, 1, simulator.ToolCall{Tool: "execute_sql", Arguments: args}, 0); err != nil {
				t.Fatal(err)
			}
			o, err := e.Final(ctx)
			if err != nil {
				t.Fatalf("%s: %v", c.sql, err)
			}
			var kinds []string
			for _, h := range o.Harms {
				kinds = append(kinds, string(h.Kind))
			}
			if c.harm != "" && !strings.Contains(strings.Join(kinds, ","), c.harm) {
				t.Errorf("%s: harms %v, want %s", c.sql, kinds, c.harm)
			}
			e.Close()
			if n := len(f.idle); n != 0 {
				t.Errorf("%s: the server was kept (%d idle)", c.sql, n)
			}
		})
	}
}

// TestServerDies: a server killed in the middle of a decision makes the
// next call an error naming the scenario; the next decision starts a new
// server and goes on.
func TestServerDies(t *testing.T) {
	_, f := factory(t, SQLite, true)
	ctx := context.Background()
	e, err := f.Actor("D07")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("pkill", "-KILL", "-f", e.srv.dir).Run(); err != nil {
		t.Fatalf("pkill: %v", err)
	}
	_, _, err = e.Send(ctx, 1, e.First(), 0)
	if err == nil || !strings.Contains(err.Error(), "scenario D07") {
		t.Fatalf("a dead server: %v, want an error naming scenario D07", err)
	}
	e.Close()
	o, err := executeOne(ctx, f, "D07", study.ReviseArguments)
	if err != nil || !o.Recovered {
		t.Fatalf("the next decision: %+v, %v", o, err)
	}
}

// TestServerDoesNotStart: a set whose server exits at once fails to start
// with an error naming the scenario and what the server wrote.
func TestServerDoesNotStart(t *testing.T) {
	set, err := BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	bad := *set
	bad.Tools = nil
	bad.Server = []string{"sh", "-c", "echo no such database >&2; exit 3"}
	f, err := NewFactory(context.Background(), &bad, Options{CallTimeout: loadedTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, _ := f.Actor("D01")
	_, err = e.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "scenario D01") || !strings.Contains(err.Error(), "no such database") {
		t.Fatalf("got %v, want an error naming D01 and the server's stderr", err)
	}
	e.Close()
}

// TestStateUnreadable: a decision that leaves a declared column gone
// (execute_sql dropped it) cannot be scored from the tables: Final is an
// error naming the scenario and the column, which a study records as an
// error decision; the server is not kept.
func TestStateUnreadable(t *testing.T) {
	_, f := factory(t, SQLite, true)
	ctx := context.Background()
	e, err := f.Actor("D05")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"sql": "ALTER TABLE orders DROP COLUMN note"})
	if _, _, err := e.Send(ctx, 1, simulator.ToolCall{Tool: "execute_sql", Arguments: args}, 0); err != nil {
		t.Fatal(err)
	}
	_, err = e.Final(ctx)
	if err == nil || !strings.Contains(err.Error(), "scenario D05") || !strings.Contains(err.Error(), "note") {
		t.Errorf("got %v, want an error naming D05 and the column", err)
	}
	e.Close()
	if len(f.idle) != 0 {
		t.Error("the server was kept")
	}
}
