package dbenv

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/internal/testserver/exectable"
)

var updateTable = flag.Bool("update-table", false, "rewrite env/dbenv/scenarios/shop.execution.txt")

// executionFile is the shop set's execution table, beside the set; the
// same table must come out of every engine.
const executionFile = "scenarios/shop.execution.txt"

// loadedTimeout bounds a call on a loaded two-core machine.
const loadedTimeout = 60 * time.Second

// dbhub returns the Node.js and DBHub that scripts/test installs.
func dbhub(t testing.TB) (node, script string) {
	t.Helper()
	dir, err := filepath.Abs("../../" + DefaultServers)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(ServersVar, dir)
	node, script, err = FindDBHub("")
	if err != nil {
		t.Fatal(err)
	}
	return node, script
}

// factory returns a factory of the shop set on engine, closed at the
// end of the test. PostgreSQL missing skips the test, except under CI,
// where it fails (.ci/run installs it).
func factory(t testing.TB, engine string, reuse bool) (*Set, *Factory) {
	t.Helper()
	node, script := dbhub(t)
	set, err := BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFactory(context.Background(), set, Options{Engine: engine, Node: node, DBHub: script, Reuse: reuse, CallTimeout: loadedTimeout})
	if err != nil {
		if engine == Postgres && os.Getenv("CI") != "true" && strings.Contains(err.Error(), "no PostgreSQL") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return set, f
}

// executionTable is f's execution table; it fails the test on every
// scenario whose declared sets execution does not prove.
func executionTable(t *testing.T, f *Factory) []byte {
	t.Helper()
	table, problems, err := ExecutionTable(context.Background(), f, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	return table
}

// TestExecutionTable executes every policy's canonical recovery of every
// database scenario on SQLite (a fresh database each, the server kept
// and its database reset in place), checks that each scenario's preferred
// policies are exactly those that recover without harm, and compares the
// table with shop.execution.txt (-update-table rewrites it).
func TestExecutionTable(t *testing.T) {
	_, f := factory(t, SQLite, true)
	got := executionTable(t, f)
	if *updateTable {
		if err := os.WriteFile(executionFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	compareTable(t, got)
}

// TestExecutionTablePostgres: the same scenarios on PostgreSQL (a
// cluster started for the test, a database cloned from a template per
// server) give the same table, cell for cell.
func TestExecutionTablePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	_, f := factory(t, Postgres, true)
	compareTable(t, executionTable(t, f))
}

func compareTable(t *testing.T, got []byte) {
	t.Helper()
	want, err := os.ReadFile(executionFile)
	if err != nil {
		t.Fatalf("%v (go test ./env/dbenv -run 'TestExecutionTable$' -update-table writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the execution table differs from %s (go test ./env/dbenv -run 'TestExecutionTable$' -update-table rewrites it): %s",
			executionFile, strings.Join(exectable.Diff(want, got), "; "))
	}
}
