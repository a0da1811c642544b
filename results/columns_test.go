package results

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpstress/stress/simulator"
)

// TestRowLayout checks that decisions.parquet is laid out from Row and the
// one column set: Row's identity fields in order, the outcome columns in
// Outcome's place (a lab column optional), then error; and that every
// column, set alone, survives the file, the tally and the packed flags.
func TestRowLayout(t *testing.T) {
	var names []string
	for _, c := range rowLayout.schema.Columns() {
		names = append(names, c[0])
	}
	want := []string{"model", "prompt", "condition", "scenario", "replicate", "server", "seed", "status", "final_label", "final_status", "turns", "replays"}
	for _, c := range simulator.Columns {
		want = append(want, c.Name)
	}
	want = append(want, "error")
	if !slices.Equal(names, want) {
		t.Fatalf("decisions.parquet columns %v, want %v", names, want)
	}
	for _, f := range rowLayout.schema.Fields() {
		c := simulator.ColumnIndex(f.Name())
		if lab := c >= 0 && c.Column().Kind.Lab(); f.Optional() != lab {
			t.Errorf("column %s: optional %v, want %v", f.Name(), f.Optional(), lab)
		}
	}
	file := filepath.Join(t.TempDir(), DecisionsFile)
	w, err := CreateRows(file)
	if err != nil {
		t.Fatal(err)
	}
	var rows []Row
	for c := range simulator.Columns {
		r := Row{Model: "m", Prompt: "p", Condition: "code_only", Scenario: simulator.Columns[c].Name, Status: StatusOK, Turns: 1}
		r.Outcome.Set(simulator.Col(c), 3)
		if simulator.Columns[c].Kind != simulator.LabSum {
			r.Outcome.Set(simulator.Col(c), 1)
		}
		rows = append(rows, r)
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRows(file)
	if err != nil || !slices.Equal(back, rows) {
		t.Fatalf("read back %+v (%v)\nwant %+v", back, err, rows)
	}
	for c := range simulator.Columns {
		col, r := &simulator.Columns[c], &rows[c]
		if r.Lab() != col.Kind.Lab() {
			t.Errorf("column %s: set alone, lab %v", col.Name, r.Lab())
		}
		cell := Count([]Row{*r})[0]
		want := 1
		if col.Kind == simulator.LabSum {
			want = 3
		}
		if cell.Count(simulator.Col(c)) != want || cell.N != 1 || cell.Denominator(simulator.Col(c)) != 1 || cell.LabN != int(b2i(col.Kind.Lab())) {
			t.Errorf("column %s: a row with it counts %d in its cell (N %d, LabN %d)", col.Name, cell.Count(simulator.Col(c)), cell.N, cell.LabN)
		}
		f := FlagsOf(r)
		if col.Kind != simulator.LabSum && f&FlagBit(simulator.Col(c)) == 0 || f&FlagLab != 0 != col.Kind.Lab() {
			t.Errorf("column %s: packed %b", col.Name, f)
		}
		var u Row
		u.SetFlags(f)
		for d := range simulator.Columns {
			if simulator.Columns[d].Kind != simulator.LabSum && u.Outcome.Of(simulator.Col(d)) != r.Outcome.Of(simulator.Col(d)) {
				t.Errorf("column %s: unpacked, column %s is %v", col.Name, simulator.Columns[d].Name, u.Outcome.Of(simulator.Col(d)))
			}
		}
	}
}

// TestCellJSON: a stored-replay cell prints its fields in order without
// the lab ones; a cell with lab outcomes adds lab_n and every lab column,
// zeros included; both read back as they were.
func TestCellJSON(t *testing.T) {
	stored := Cell{Model: "m", Prompt: "p", Condition: "code_only", N: 3, Extra: 4, Errors: 1}
	stored.Counts[simulator.Strict], stored.Counts[simulator.Proven], stored.Counts[simulator.Cover], stored.Counts[simulator.Retry] = 1, 2, 2, 1
	b, err := json.Marshal(stored)
	want := `{"model":"m","prompt":"p","condition":"code_only","n":3,"strict":1,"proven":2,"cover":2,"retry":1,"invalid":0,"any_fs":0,"terminal_fs":0,"extra":4,"errors":1}`
	if err != nil || string(b) != want {
		t.Errorf("stored cell: %s (%v)\nwant %s", b, err, want)
	}
	live := stored
	live.LabN = 3
	live.Counts[simulator.Recovered], live.Counts[simulator.Harm], live.Counts[simulator.HarmDuplicate], live.Counts[simulator.Calls], live.Counts[simulator.LabMS] = 2, 1, 1, 7, 2160
	b, err = json.Marshal(live)
	want = strings.TrimSuffix(want, "}") + `,"lab_n":3,"recovered":2,"harm":1,"harm_duplicate":1,"harm_wrong_value":0,"harm_collateral":0,"harm_data_loss":0,"harm_incomplete":0,"invalid_action":0,"calls":7,"lab_ms":2160,"label_action":{"strict_recovered":0,"strict_unrecovered":0,"other_recovered":0,"other_unrecovered":0}}`
	if err != nil || string(b) != want {
		t.Errorf("live cell: %s (%v)\nwant %s", b, err, want)
	}
	for name, c := range map[string]Cell{"stored cell reads back": stored, "live cell reads back": live} {
		t.Run(name, func(t *testing.T) {
			b, _ := json.Marshal(c)
			var back Cell
			if err := json.Unmarshal(b, &back); err != nil || back != c {
				t.Errorf("%s reads back as %+v (%v)", b, back, err)
			}
		})
	}
	var c Cell
	if err := json.Unmarshal([]byte(`{"model":"m","stirct":1}`), &c); err == nil || !strings.Contains(err.Error(), `"stirct"`) {
		t.Errorf("an unknown member: %v", err)
	}
}
