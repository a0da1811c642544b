package results

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/simulator"
)

func callLine(scen string, turn int, policy, errMsg string) string {
	resp := fmt.Sprintf(`{"operation_status": "failed", "recovery_policy": %q}`, policy)
	return fmt.Sprintf(`{"key":{"model":"m","prompt":"p","condition":"normalized","scenario":%q,"replicate":1},"server":"P1","preferred":"select_tool","non_harm":["select_tool","stop_or_escalate"],"turn":%d,"seed":%d,"response":%q,"response_sha256":%q,"error":%q}`+"\n", scen, turn, 100+turn, resp, SHA256([]byte(resp)), errMsg)
}

// TestGroupReader checks grouping by decision, byte offsets, completeness,
// scoring, and the two kinds of torn tail.
func TestGroupReader(t *testing.T) {
	a := callLine("S1", 0, "retry_now", "") + callLine("S1", 1, "select_tool", "")
	b := callLine("S2", 0, "retry_now", "") // interrupted mid-trajectory
	c := callLine("S3", 0, "retry_now", "") + callLine("S3", 1, "", "HTTP 500")
	for _, tc := range []struct {
		name, tail, reason string
	}{
		{"clean", "", ""},
		{"no newline", callLine("S4", 0, "stop", "")[:30], "no newline"},
		{"bad last line", "{half\n", "invalid character"},
		{"last line's response changed", strings.Replace(callLine("S4", 0, "stop_or_escalate", ""), "failed", "FAILED", 1), "response_sha256 does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := a + b + c + tc.tail
			gr := NewGroupReader(strings.NewReader(in), "calls.jsonl")
			var gs []Group
			for gr.Next() {
				g := *gr.Group()
				g.Heads = append([]Head(nil), g.Heads...)
				gs = append(gs, g)
			}
			if gr.Err() != nil || len(gs) != 3 {
				t.Fatalf("%v, %d groups", gr.Err(), len(gs))
			}
			if gs[1].Offset != int64(len(a)) || gs[1].Size != int64(len(b)) || gs[2].Line != 4 {
				t.Errorf("offsets %+v", gs[1])
			}
			if !gs[0].Complete(3) || gs[1].Complete(3) || !gs[2].Complete(3) || !gs[1].Complete(0) {
				t.Error("completeness wrong")
			}
			if r, err := gs[0].Row(); err != nil || r.Status != StatusOK || !r.Outcome.Of(simulator.Strict) || r.Replays != 1 || !r.Outcome.Of(simulator.Retry) || r.Seed != 100 || r.Server != "P1" {
				t.Errorf("row %+v", r)
			}
			if r, err := gs[2].Row(); err != nil || r.Status != StatusError || r.Error != "turn 1: HTTP 500" || r.Turns != 2 {
				t.Errorf("error row %+v", r)
			}
			torn := gr.Torn()
			if (torn == nil) != (tc.tail == "") || (torn != nil && (torn.Offset != int64(len(a+b+c)) || !strings.Contains(torn.Reason, tc.reason))) {
				t.Errorf("torn %+v", torn)
			}
		})
	}
	gr := NewGroupReader(strings.NewReader(a+"{bad\n"+c), "calls.jsonl")
	for gr.Next() {
	}
	if gr.Err() == nil || !strings.Contains(gr.Err().Error(), "calls.jsonl:3:") {
		t.Errorf("damaged middle line: %v", gr.Err())
	}
	// A response changed in a line that is not the last: refused.
	changed := strings.Replace(a, "select_tool\\\"", "revise_arguments\\\"", 1)
	if changed == a {
		t.Fatal("test input not changed")
	}
	gr = NewGroupReader(strings.NewReader(changed+b+c), "calls.jsonl")
	for gr.Next() {
	}
	if gr.Err() == nil || !strings.Contains(gr.Err().Error(), "calls.jsonl:2: response_sha256 does not match") {
		t.Errorf("changed response: %v", gr.Err())
	}
	var g Group
	if err := ParseGroup([]byte(a), &g, nil); err != nil || len(g.Heads) != 2 {
		t.Errorf("ParseGroup: %v", err)
	}
	if err := ParseGroup([]byte(callLine("S1", 1, "stop", "")), &g, nil); err == nil {
		t.Error("a group starting at turn 1 parsed")
	}
}

// TestGroupReaderDurable checks the durable point: damage after it (a
// zeroed page followed by valid lines, as a power loss leaves) is a torn
// tail that ends the input; damage within it is refused.
func TestGroupReaderDurable(t *testing.T) {
	a := callLine("S1", 0, "select_tool", "")
	b := callLine("S2", 0, "select_tool", "")
	zeros := strings.Repeat("\x00", 4096)
	c := callLine("S3", 0, "select_tool", "") + callLine("S4", 0, "select_tool", "")
	in := a + b + zeros + c
	read := func(durable int64) ([]Group, *GroupReader) {
		gr := NewGroupReader(strings.NewReader(in), "calls.jsonl")
		gr.SetDurable(durable)
		var gs []Group
		for gr.Next() {
			gs = append(gs, *gr.Group())
		}
		return gs, gr
	}
	for _, tc := range []struct {
		name    string
		durable int64
	}{
		{"nothing durable", 0},
		{"the first decision durable", int64(len(a))},
		{"durable up to the damage", int64(len(a + b))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs, gr := read(tc.durable)
			torn := gr.Torn()
			if gr.Err() != nil || len(gs) != 2 || torn == nil || torn.Offset != int64(len(a+b)) || torn.Size != int64(len(zeros+c)) || torn.Line != 3 {
				t.Errorf("durable %d: err %v, %d groups, torn %+v", tc.durable, gr.Err(), len(gs), torn)
			}
		})
	}
	// Without a durable point (a bundle written before it was recorded),
	// a damaged line followed by others is refused, as before.
	_, gr := read(-1)
	if gr.Err() == nil {
		t.Error("no durable point: zeroed page accepted")
	}
	// Within the durable bytes the same damage is refused.
	_, gr = read(int64(len(a + b + zeros)))
	if gr.Err() == nil || !strings.Contains(gr.Err().Error(), "calls.jsonl:3:") || !strings.Contains(gr.Err().Error(), "known durable: the file was changed") {
		t.Errorf("damage within the durable bytes: %v", gr.Err())
	}
}

// TestRowWriterGroups writes more rows than one row group and reads them
// back.
func TestRowWriterGroups(t *testing.T) {
	file := filepath.Join(t.TempDir(), DecisionsFile)
	w, err := CreateRows(file)
	if err != nil {
		t.Fatal(err)
	}
	n := rowGroupRows + 10
	for i := 0; i < n; i++ {
		w.Add(Row{Model: "m", Replicate: int64(i), Status: StatusOK})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file + ".tmp"); err == nil {
		t.Error("temporary file left behind")
	}
	rows, err := ReadRows(file)
	if err != nil || len(rows) != n || rows[n-1].Replicate != int64(n-1) {
		t.Fatalf("%v: %d rows", err, len(rows))
	}
}
