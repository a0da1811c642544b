package results

import (
	"path/filepath"
	"testing"

	"github.com/mcpstress/stress/simulator"
	"github.com/parquet-go/parquet-go"
)

// oldRow is a decisions.parquet row as written before the invalid_action
// column existed (the live columns without it).
type oldRow struct {
	Model     string `parquet:"model"`
	Scenario  string `parquet:"scenario"`
	Replicate int64  `parquet:"replicate"`
	Status    string `parquet:"status"`
	Strict    bool   `parquet:"strict"`
	Recovered *bool  `parquet:"recovered,optional"`
	Harm      *bool  `parquet:"harm,optional"`
	Calls     *int64 `parquet:"calls,optional"`
	LabMS     *int64 `parquet:"lab_ms,optional"`
}

// TestReadOlderParquet: rows of a file written before invalid_action read
// as today's: a live decision has none (false), a stored one stays null;
// the other columns are kept.
func TestReadOlderParquet(t *testing.T) {
	yes, n, ms := true, int64(2), int64(40)
	file := filepath.Join(t.TempDir(), DecisionsFile)
	if err := parquet.WriteFile(file, []oldRow{
		{Model: "m", Scenario: "X01", Replicate: 1, Status: StatusOK, Strict: true, Recovered: &yes, Harm: new(bool), Calls: &n, LabMS: &ms},
		{Model: "m", Scenario: "S01", Replicate: 1, Status: StatusOK},
	}); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadRows(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	live, stored := rows[0], rows[1]
	if v, ok := live.Outcome.Get(simulator.InvalidAction); !ok || v != 0 || !live.Outcome.Of(simulator.Recovered) || live.Outcome.Value(simulator.Calls) != 2 || !live.Outcome.Of(simulator.Strict) {
		t.Errorf("live row %+v", live)
	}
	if stored.Lab() {
		t.Errorf("stored row %+v has lab columns", stored)
	}
}
