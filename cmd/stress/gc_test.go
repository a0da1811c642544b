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
// alone, collects at the runtime's default first goal.
func TestDeferGC(t *testing.T) {
	bin := stressBinary(t)
	collections := func(env ...string) int {
		out := filepath.Join(t.TempDir(), "run")
		cmd := exec.Command(bin, "run", "-quiet", "-out", out)
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
	if n := collections(); n != 0 {
		t.Errorf("the built-in study (1,260 decisions) collected %d times, want 0", n)
	}
	if n := collections("GOGC=100"); n == 0 {
		t.Error("with GOGC=100 set, the run never collected: the test cannot tell the two apart")
	}
}
