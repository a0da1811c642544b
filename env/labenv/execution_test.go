package labenv

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

var updateTable = flag.Bool("update-table", false, "rewrite lab/scenarios/core.execution.txt")

// executionFile is the core set's execution table, beside the set.
const executionFile = "../../lab/scenarios/core.execution.txt"

// TestExecutionTable executes every policy's canonical recovery of every
// core scenario on a fresh lab (again while its call fails, up to the
// replay cap), checks that each scenario's declared preferred policies
// are exactly those that recover without harm (or, where none does,
// those that harm nothing, stop first) and its non-harm set what the
// executions show, and compares the table with core.execution.txt
// (-update-table rewrites it).
func TestExecutionTable(t *testing.T) {
	ctx := context.Background()
	f, err := Factory("")
	if err != nil {
		t.Fatal(err)
	}
	var rows []simulator.ExecutionRow
	for _, sc := range set(t).Scenarios {
		ex, err := simulator.Executions(ctx, f, sc.ID, 11, replayCap)
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range simulator.CheckPreferred(ex, sc.PreferredSet, sc.NonHarm, paperClasses[sc.Class]) {
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
		t.Fatalf("%v (go test ./env/labenv -run TestExecutionTable -update-table writes it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("the execution table differs from %s (go test ./env/labenv -run TestExecutionTable -update-table rewrites it): %s",
			executionFile, strings.Join(exectable.Diff(want, b.Bytes()), "; "))
	}
}
