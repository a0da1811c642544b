package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
)

// TestRecover checks what a resume keeps of a calls.jsonl left by a crash:
// whole decisions anywhere, not a decision interrupted mid-trajectory (in
// the middle, left behind, or at the end, cut off), not a torn last line;
// and that the file is cut back to the end of the last whole decision.
func TestRecover(t *testing.T) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	line := func(model, scen string, rep, turn int, answer string) string {
		resp := fmt.Sprintf(`{"operation_status": "failed", "recovery_policy": %q}`, answer)
		return fmt.Sprintf(`{"key":{"model":%q,"prompt":"default","condition":"normalized","scenario":%q,"replicate":%d},"turn":%d,"response":%q,"response_sha256":%q}`+"\n",
			model, scen, rep, turn, resp, results.SHA256([]byte(resp)))
	}
	d1 := line("always_stop", "S01", 1, 0, "stop_or_escalate")
	d2 := line("always_stop", "S02", 1, 0, "retry_now") // interrupted, then left in the middle
	d3 := line("code_registry", "S03", 2, 0, "retry_now") + line("code_registry", "S03", 2, 1, "select_tool")
	d4 := line("always_stop", "S04", 1, 0, "retry_now") + line("always_stop", "S04", 1, 1, "retry_now")
	torn := line("always_stop", "S04", 1, 2, "stop_or_escalate")[:40]
	dir := t.TempDir()
	file := filepath.Join(dir, results.CallsFile)
	os.WriteFile(file, []byte(d1+d2+d3+d4+torn), 0o644)
	// The lines leave out their scenario fields and seeds, which are
	// here, and refer to no message (a bundle's table is there, empty).
	os.WriteFile(filepath.Join(dir, results.MessagesFile), nil, 0o644)
	if _, err := results.KeepDefaults(filepath.Join(dir, results.DefaultsFile), results.NewDefaults(m.Seed, m.Corpus.Scenarios, m.Conditions), true); err != nil {
		t.Fatal(err)
	}
	p := &Plan{m: m}
	sp := newSpace(&m.Manifest, p.scenarioIDs(), results.Shard{})
	s := &session{p: p, dir: dir, rec: &results.Record{}, sp: sp, idx: testTable(t, dir, sp.count())}
	if err := s.recover(); err != nil {
		t.Fatal(err)
	}
	keep := int64(len(d1 + d2 + d3))
	if s.keep != keep || s.torn != int64(len(d4+torn)) || s.redone != 2 {
		t.Errorf("keep %d, torn %d, redone %d; want %d, %d, 2", s.keep, s.torn, s.redone, keep, len(d4+torn))
	}
	done := 0
	s.idx.each(func(j int, l loc, _ outcome) error {
		if l.done() {
			done++
			k := sp.key(sp.global(j)).String()
			if k != "always_stop/default/normalized/S01/1" && k != "code_registry/default/normalized/S03/2" {
				t.Errorf("kept %s", k)
			}
		}
		return nil
	})
	if done != 2 {
		t.Errorf("%d decisions kept, want 2", done)
	}
	// Appending starts at the end of the last whole decision.
	cl, err := results.OpenCallLog(file, s.keep)
	if err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if b, _ := os.ReadFile(file); string(b) != d1+d2+d3 {
		t.Errorf("after cutting:\n%s", b)
	}
	// A damaged line with lines after it is not a crash's doing.
	os.WriteFile(file, []byte(d1+"{bad\n"+d3), 0o644)
	s = &session{p: p, dir: dir, rec: &results.Record{}, sp: sp, idx: testTable(t, dir, sp.count())}
	if err := s.recover(); err == nil || !strings.Contains(err.Error(), "calls.jsonl:2:") {
		t.Errorf("damaged middle line: %v", err)
	}
}

// testTable makes a decision index closed at the end of the test.
func testTable(t *testing.T, dir string, n int) *locTable {
	t.Helper()
	idx, err := newLocTable(dir, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	return idx
}
