package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

func TestReadCalls(t *testing.T) {
	file := filepath.Join(t.TempDir(), CallsFile)
	good := `{"key":{"model":"m","prompt":"p","condition":"normalized","scenario":"S01","replicate":1},"server":"P1","preferred":"stop_or_escalate","non_harm":[],"turn":0,"seed":5,"response":"x"}`
	os.WriteFile(file, []byte(good+"\n"+good+"\n"), 0o644)
	calls, err := ReadCalls(file)
	if err != nil || len(calls) != 2 || calls[1].Key.Scenario != "S01" || calls[1].Response != "x" {
		t.Fatalf("ReadCalls: %v %+v", err, calls)
	}
	os.WriteFile(file, []byte(good+"\n{torn\n"+good+"\n"), 0o644)
	if _, err := ReadCalls(file); err == nil || !strings.Contains(err.Error(), CallsFile+":2:") {
		t.Errorf("bad line: %v, want an error naming line 2", err)
	}
	if _, err := ReadCalls(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing file must be an error")
	}

	// A format-3 line leaves out its scenario's fields and its seed; the
	// defaults.json beside the file fills them, and without it the line is
	// an error naming the file.
	short := `{"key":{"model":"m","prompt":"p","condition":"normalized","scenario":"S01","replicate":2},"turn":1,"response":"x"}`
	os.WriteFile(file, []byte(short+"\n"), 0o644)
	if _, err := ReadCalls(file); err == nil || !strings.Contains(err.Error(), CallsFile+":1:") || !strings.Contains(err.Error(), DefaultsFile) {
		t.Errorf("format-3 line without defaults: %v", err)
	}
	d := &Defaults{Seed: 9, Scenarios: map[string]ScenarioFields{"S01": {Server: "P1", Preferred: "retry_now", NonHarm: []study.Policy{"retry_now"}}}}
	if _, err := KeepDefaults(filepath.Join(filepath.Dir(file), DefaultsFile), d, true); err != nil {
		t.Fatal(err)
	}
	calls, err = ReadCalls(file)
	if err != nil || len(calls) != 1 {
		t.Fatalf("format-3 line: %v", err)
	}
	c := calls[0]
	if c.Server != "P1" || c.Preferred != "retry_now" || len(c.NonHarm) != 1 || c.Turn != 1 || c.Seed != simulator.Seed(9, "S01", 2, 1) || c.Request.Seed != c.Seed {
		t.Errorf("format-3 line read as %+v", c)
	}
}
