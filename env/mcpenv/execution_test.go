package mcpenv

import (
	"bytes"
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/mcpstress/stress/internal/testserver/exectable"
	"github.com/mcpstress/stress/simulator"
)

var updateTable = flag.Bool("update-table", false, "rewrite env/mcpenv/scenarios/reference.execution.txt")

// executionFile is the reference set's execution table, beside the set.
const executionFile = "scenarios/reference.execution.txt"

// TestExecutionTable executes every policy's canonical recovery of every
// reference scenario on a fresh sandbox (Scenario.Repair: the corrected
// call, the right tool, or the failing call again; again while it fails,
// up to the replay cap), checks that each scenario's declared preferred
// policies are exactly those that recover without harm and that its
// non-harm set holds no policy that harms (the reference scenarios keep
// the paper's non-harm set: a replay of their deterministic failures is
// counted by Retry though it changes nothing), and compares the table
// with reference.execution.txt (-update-table rewrites it).
func TestExecutionTable(t *testing.T) {
	_, set, f := reusingFactory(t)
	var rows []simulator.ExecutionRow
	for _, sc := range set.Scenarios {
		ex, err := simulator.Executions(context.Background(), f, sc.ID, 1, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range simulator.CheckPreferred(ex, sc.PreferredSet, sc.NonHarm, true) {
			t.Errorf("%s (%s): %s", sc.ID, sc.Class, msg)
		}
		rows = append(rows, simulator.ExecutionRow{Scenario: sc.ID, Class: string(sc.Class), Executions: ex})
	}
	var b bytes.Buffer
	if err := simulator.WriteExecutionTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	if *updateTable {
		if err := os.WriteFile(executionFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(executionFile)
	if err != nil {
		t.Fatalf("%v (go test ./env/mcpenv -run TestExecutionTable -update-table writes it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("the execution table differs from %s (go test ./env/mcpenv -run TestExecutionTable -update-table rewrites it): %s",
			executionFile, strings.Join(exectable.Diff(want, b.Bytes()), "; "))
	}
}
