package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadCalls(t *testing.T) {
	file := filepath.Join(t.TempDir(), CallsFile)
	good := `{"key":{"model":"m","prompt":"p","condition":"normalized","scenario":"S01","replicate":1},"turn":0,"response":"x"}`
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
}
