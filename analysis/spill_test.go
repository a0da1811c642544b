package analysis

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// mergeRows returns the rows of a small study in a finished bundle's
// order (model, prompt, condition, scenario, replicate): 2 models × 2
// prompts × 4 conditions × 7 scenarios on 3 servers × 3 replicates, with
// pseudo-random outcomes, some error decisions and some missing ones.
func mergeRows() []results.Row {
	rng := rand.New(rand.NewPCG(3, 4))
	var rows []results.Row
	for _, m := range []string{"m1", "m2"} {
		for _, p := range []string{"p1", "p2"} {
			for c, cond := range study.Conditions {
				for s := range 7 {
					for rep := int64(1); rep <= 3; rep++ {
						if rng.IntN(20) == 0 {
							continue // a decision missing
						}
						u := rng.Float64()
						r := results.Row{Model: m, Prompt: p, Condition: string(cond), Scenario: fmt.Sprintf("S%d", s), Replicate: rep,
							Server: fmt.Sprintf("P%d", s%3), Status: results.StatusOK,
							Outcome: simulator.Values{}.WithFlag(simulator.Strict, u < 0.2+0.1*float64(c)).WithFlag(simulator.Cover, u < 0.7).
								WithFlag(simulator.Retry, u > 0.8).WithFlag(simulator.Invalid, u > 0.95)}
						if rng.IntN(15) == 0 {
							r.Status, r.Outcome = results.StatusError, simulator.Values{}
						}
						rows = append(rows, r)
					}
				}
			}
		}
	}
	return rows
}

// TestRecordRoundTrip: a record decodes to what was encoded, at the
// extremes of every field.
func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []unitRecord{
		{group: 1, scenario: 2, server: 3, cond: 4, replicate: 5, flags: results.FlagOK | 7},
		{group: 1<<31 - 1, scenario: 1<<31 - 1, server: 1<<31 - 1, cond: 63, replicate: 1<<63 - 1, flags: ^results.Flags(0)},
		{replicate: -1 << 63},
		{replicate: -1},
	} {
		var b [recordSize]byte
		if err := r.encode(b[:]); err != nil {
			t.Fatal(err)
		}
		var got unitRecord
		if err := got.decode(b[:]); err != nil {
			t.Fatal(err)
		}
		if got != r {
			t.Errorf("%+v came back as %+v", r, got)
		}
	}
	if n := binary.Size(spillRecord{}); n != recordSize {
		t.Errorf("a spillRecord is %d bytes, recordSize %d", n, recordSize)
	}
	var r unitRecord
	if err := r.encode(make([]byte, recordSize-1)); err == nil {
		t.Error("a record encoded into a short buffer")
	}
	if err := r.decode(make([]byte, recordSize-1)); err == nil {
		t.Error("a record decoded from a short buffer")
	}
}

// TestMergedPairing: the pairing that merges two cells' records (in
// memory, and from the temporary file) gives the analysis the pairing
// table gives, for condition, prompt and model pairs; rows out of order
// or repeated are paired through the table.
func TestMergedPairing(t *testing.T) {
	var specs []PairSpec
	for _, s := range []string{"prompt:p1,p2,cover", "model:m1,m2,retry", "structured,prose,invalid", "code_only,prose,strict"} {
		p, err := ParsePairSpec(s, simulator.Strict)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, p)
	}
	analyze := func(rows []results.Row, spill int, table bool) (*Accumulator, string) {
		t.Helper()
		defer func(n int) { spillAt = n }(spillAt)
		spillAt = spill
		a := NewAccumulator()
		for i := range rows {
			a.Add(&rows[i])
		}
		if table {
			a.index.mergeable = false
		}
		an, err := a.Analyze(context.Background(), Options{Pairs: specs, B: 200})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(an)
		if err != nil {
			t.Fatal(err)
		}
		return a, string(b)
	}
	rows := mergeRows()
	a, inMemory := analyze(rows, 1<<18, false)
	if !a.merged() || a.records.f != nil {
		t.Fatalf("a finished bundle's rows: merged %v, file %v; want merged in memory", a.merged(), a.records.f != nil)
	}
	a, spilled := analyze(rows, 5, false)
	if !a.merged() || a.records.f == nil {
		t.Fatalf("merged %v, file %v; want merged from the file", a.merged(), a.records.f != nil)
	}
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	a, noTemp := analyze(rows, 5, false)
	if !a.merged() || a.records.f != nil || !a.records.inMemory || noTemp != spilled {
		t.Errorf("without a temporary directory: merged %v, file %v, in memory %v, same analysis %v", a.merged(), a.records.f != nil, a.records.inMemory, noTemp == spilled)
	}
	_, table := analyze(rows, 5, true)
	if !strings.Contains(table, `"unpaired":`) || !strings.Contains(table, `"factor":"model"`) || !strings.Contains(table, `"factor":"prompt"`) {
		t.Fatalf("the analysis lacks prompt or model pairs: %.300s", table)
	}
	if inMemory != table || spilled != table {
		t.Errorf("merged pairing differs from the table's:\nmerged in memory %s\nmerged from file %s\ntable %s", inMemory, spilled, table)
	}

	// A cell's rows apart, or out of order, or repeated: the table.
	swapped := append([]results.Row(nil), rows...)
	swapped[3], swapped[4] = swapped[4], swapped[3]
	moved := append(append([]results.Row(nil), rows[10:]...), rows[:10]...)
	repeated := append(append([]results.Row(nil), rows...), rows[0])
	for name, rs := range map[string][]results.Row{"swapped": swapped, "moved": moved, "repeated": repeated} {
		a, _ := analyze(rs, 5, false)
		if a.merged() {
			t.Errorf("%s rows: merged", name)
		}
		if w := a.DuplicatesWarning(); (name == "repeated") != strings.Contains(w, "1 decision rows repeat") {
			t.Errorf("%s rows: duplicates warning %q", name, w)
		}
	}
}
