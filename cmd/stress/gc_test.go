package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDeferGC reads the runtime's trace of each collection
// (GODEBUG=gctrace=1) of runs of the built binary: a one-decision run,
// which stays under firstGC, collects no garbage, while the same run with
// GOGC set, which deferGC leaves alone, collects at the runtime's default
// first goal; the built-in study collects first at firstGC; and the lab
// study, whose live heap is a few megabytes, collects less than half as
// often as at GOGC=100, each time before the heap grows past what the
// last collection left live by more than gcHeadroom (paceGC, which keeps
// the runtime's heap minimum from raising the goal past that).
func TestDeferGC(t *testing.T) {
	bin := stressBinary(t)
	one := oneDecisionStudy(t, t.TempDir())
	if gcs := traceGCs(t, bin, one); len(gcs) != 0 {
		t.Errorf("a one-decision run collected %d times, want 0", len(gcs))
	}
	if gcs := traceGCs(t, bin, one, "GOGC=100"); len(gcs) == 0 {
		t.Error("with GOGC=100 set, a one-decision run never collected: the test cannot tell the two apart")
	}
	if gcs := traceGCs(t, bin, ""); len(gcs) == 0 || gcs[0].goal != firstGC>>20 {
		t.Errorf("the built-in study's collections: %+v, want the first at a goal of %d MB", gcs, firstGC>>20)
	}
	lab := filepath.Join("..", "..", "manifests", "lab.yaml")
	paced, def := traceGCs(t, bin, lab), traceGCs(t, bin, lab, "GOGC=100")
	if len(paced) == 0 || 2*len(paced) >= len(def) {
		t.Errorf("the lab study collected %d times, %d at GOGC=100: want fewer than half", len(paced), len(def))
	}
	for i := 1; i < len(paced); i++ {
		if paced[i-1].live >= gcHeadroom>>21 {
			continue // paced as at GOGC=100 once the heap it scans nears gcHeadroom
		}
		// The trace rounds down to whole megabytes.
		if most := paced[i-1].live + gcHeadroom>>20 + 1; paced[i].goal > most {
			t.Errorf("the lab study's collection %d had a goal of %d MB, %d MB live after the one before: want at most %d", i+1, paced[i].goal, paced[i-1].live, most)
		}
	}
	t.Logf("lab study: %d collections, %d at GOGC=100", len(paced), len(def))
}

// gcTrace is one collection in the runtime's trace: the heap live after
// it and the goal it was started for, in MB (-1 where the trace's last
// line was cut off by the process's exit).
type gcTrace struct{ live, goal int }

var gcLine = regexp.MustCompile(`^gc \d+ .* \d+->\d+->(\d+) MB, (\d+) MB goal`)

// gcStart is how a trace line begins: the collection's number and time.
var gcStart = regexp.MustCompile(`^gc \d+ @\d`)

// traceGCs runs stress run of manifest (the built-in study when "") with
// the environment env added and returns the collections it made.
func traceGCs(t *testing.T, bin, manifest string, env ...string) []gcTrace {
	t.Helper()
	cmd := exec.Command(bin, "run", "-quiet", "-out", filepath.Join(t.TempDir(), "run"))
	if manifest != "" {
		cmd.Args = append(cmd.Args, manifest)
	}
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1", "GOGC=", "GOMEMLIMIT=")
	cmd.Env = append(cmd.Env, env...) // the last value of a key wins
	// Note: the trace alone, from stderr: the runtime writes a trace line
	// in pieces, and with stdout on the same pipe the counts table could
	// land inside one.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.Bytes())
	}
	var gcs []gcTrace
	lines := strings.Split(stderr.String(), "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "gc ") {
			continue
		}
		m := gcLine.FindStringSubmatch(line)
		if m == nil && i == len(lines)-1 && gcStart.MatchString(line) {
			// The process exited while the runtime was writing this last
			// line (no newline ends it): a collection whose heap figures
			// were cut off.
			gcs = append(gcs, gcTrace{-1, -1})
			continue
		}
		if m == nil {
			t.Fatalf("a trace line not understood: %s", line)
		}
		live, _ := strconv.Atoi(m[1])
		goal, _ := strconv.Atoi(m[2])
		gcs = append(gcs, gcTrace{live, goal})
	}
	return gcs
}
