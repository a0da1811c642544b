package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeferGC: a run of the built binary that stays under firstGC
// collects no garbage (the runtime's trace, GODEBUG=gctrace=1, prints no
// collection), while the same run with GOGC set, which deferGC leaves
// alone, collects at the runtime's default first goal; and the lab study,
// whose live heap is a few megabytes, collects less than half as often as
// at GOGC=100 (paceGC).
func TestDeferGC(t *testing.T) {
	bin := stressBinary(t)
	if n := countGCs(t, bin, ""); n != 0 {
		t.Errorf("the built-in study (1,260 decisions) collected %d times, want 0", n)
	}
	if n := countGCs(t, bin, "", "GOGC=100"); n == 0 {
		t.Error("with GOGC=100 set, the run never collected: the test cannot tell the two apart")
	}
	lab := filepath.Join("..", "..", "manifests", "lab.yaml")
	paced, def := countGCs(t, bin, lab), countGCs(t, bin, lab, "GOGC=100")
	if paced == 0 || 2*paced >= def {
		t.Errorf("the lab study collected %d times, %d at GOGC=100: want fewer than half", paced, def)
	}
	t.Logf("lab study: %d collections, %d at GOGC=100", paced, def)
}

// countGCs runs stress run of manifest (the built-in study when "") with
// the environment env added and returns the collections it made.
func countGCs(t *testing.T, bin, manifest string, env ...string) int {
	t.Helper()
	cmd := exec.Command(bin, "run", "-quiet", "-out", filepath.Join(t.TempDir(), "run"))
	if manifest != "" {
		cmd.Args = append(cmd.Args, manifest)
	}
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1", "GOGC=", "GOMEMLIMIT=")
	cmd.Env = append(cmd.Env, env...) // the last value of a key wins
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "gc ") {
			n++
		}
	}
	return n
}
