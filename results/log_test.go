package results

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func callLine(scen string, turn int, policy, errMsg string) string {
	resp := fmt.Sprintf(`{"operation_status": "failed", "recovery_policy": %q}`, policy)
	return fmt.Sprintf(`{"key":{"model":"m","prompt":"p","condition":"normalized","scenario":%q,"replicate":1},"server":"P1","preferred":"select_tool","non_harm":["select_tool","stop_or_escalate"],"turn":%d,"seed":%d,"response":%q,"error":%q}`+"\n", scen, turn, 100+turn, resp, errMsg)
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
		{"bad last line", "{half\n", "not valid JSON"},
	} {
		in := a + b + c + tc.tail
		gr := NewGroupReader(strings.NewReader(in), "calls.jsonl")
		var gs []Group
		for gr.Next() {
			g := *gr.Group()
			g.Heads = append([]Head(nil), g.Heads...)
			gs = append(gs, g)
		}
		if gr.Err() != nil || len(gs) != 3 {
			t.Fatalf("%s: %v, %d groups", tc.name, gr.Err(), len(gs))
		}
		if gs[1].Offset != int64(len(a)) || gs[1].Size != int64(len(b)) || gs[2].Line != 4 {
			t.Errorf("%s: offsets %+v", tc.name, gs[1])
		}
		if !gs[0].Complete(3) || gs[1].Complete(3) || !gs[2].Complete(3) || !gs[1].Complete(0) {
			t.Errorf("%s: completeness wrong", tc.name)
		}
		if r := gs[0].Row(); r.Status != StatusOK || !r.Strict || r.Replays != 1 || !r.Retry || r.Seed != 100 || r.Server != "P1" {
			t.Errorf("row %+v", r)
		}
		if r := gs[2].Row(); r.Status != StatusError || r.Error != "turn 1: HTTP 500" || r.Turns != 2 {
			t.Errorf("error row %+v", r)
		}
		torn := gr.Torn()
		if (torn == nil) != (tc.tail == "") || (torn != nil && (torn.Offset != int64(len(a+b+c)) || !strings.Contains(torn.Reason, tc.reason))) {
			t.Errorf("%s: torn %+v", tc.name, torn)
		}
	}
	gr := NewGroupReader(strings.NewReader(a+"{bad\n"+c), "calls.jsonl")
	for gr.Next() {
	}
	if gr.Err() == nil || !strings.Contains(gr.Err().Error(), "calls.jsonl:3:") {
		t.Errorf("damaged middle line: %v", gr.Err())
	}
	var g Group
	if err := ParseGroup([]byte(a), &g); err != nil || len(g.Heads) != 2 {
		t.Errorf("ParseGroup: %v", err)
	}
	if err := ParseGroup([]byte(callLine("S1", 1, "stop", "")), &g); err == nil {
		t.Error("a group starting at turn 1 parsed")
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
