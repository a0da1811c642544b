package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputsNeverClobber: report -out and power -out refuse a directory
// holding files they did not write, leaving it as it was; they replace an
// earlier output of their own whole; and scan -out is refused before any
// repository is read.
func TestOutputsNeverClobber(t *testing.T) {
	dir := mockBundle(t, paperKinds, 2, nil)
	unrelated := filepath.Join(t.TempDir(), "papers")
	os.MkdirAll(unrelated, 0o755)
	for _, f := range []string{"report.md", "notes.txt", "power.md"} {
		os.WriteFile(filepath.Join(unrelated, f), []byte("the user's "+f), 0o644)
	}
	check := func() {
		t.Helper()
		for _, f := range []string{"report.md", "notes.txt", "power.md"} {
			if b, err := os.ReadFile(filepath.Join(unrelated, f)); err != nil || string(b) != "the user's "+f {
				t.Errorf("%s changed: %q %v", f, b, err)
			}
		}
		if es, _ := os.ReadDir(filepath.Join(unrelated, "..")); len(es) != 1 {
			t.Errorf("left beside the directory: %v", es)
		}
	}
	_, _, err := runCmd(t, "report", "-b", "1000", "-out", unrelated, dir)
	if err == nil || !strings.Contains(err.Error(), "flag -out: output directory "+unrelated+" is not empty") {
		t.Errorf("report into an unrelated directory: %v", err)
	}
	check()
	_, _, err = runCmd(t, "power", "-diff", "0.2", "-rate", "0.5", "-icc", "0.1", "-studies", "50", "-scenarios", "20", "-replicates", "1", "-servers", "5", "-out", unrelated)
	if err == nil || !strings.Contains(err.Error(), "flag -out: output directory "+unrelated+" is not empty") {
		t.Errorf("power into an unrelated directory: %v", err)
	}
	check()

	// Twice into the same directory: the second replaces the first.
	rep := filepath.Join(dir, "report")
	for i := range 2 {
		if _, log, err := runCmd(t, "report", "-b", "1000", dir); err != nil {
			t.Fatalf("report %d: %v\n%s", i, err, log)
		}
	}
	es, _ := os.ReadDir(rep)
	if len(es) != 3 {
		t.Errorf("report directory holds %d entries, want report.md, report.html, figures", len(es))
	}
	for _, e := range mustReadDir(t, dir) {
		if strings.Contains(e, ".partial-") || strings.Contains(e, ".old-") {
			t.Errorf("left in the bundle: %s", e)
		}
	}
	pw := filepath.Join(t.TempDir(), "power")
	for i := range 2 {
		if _, log, err := runCmd(t, "power", "-diff", "0.2", "-rate", "0.5", "-icc", "0.1", "-studies", "50", "-scenarios", "20", "-replicates", "1", "-servers", "5", "-out", pw); err != nil {
			t.Fatalf("power %d: %v\n%s", i, err, log)
		}
	}
	if got := mustReadDir(t, pw); strings.Join(got, " ") != "power.md power.png power.svg" {
		t.Errorf("power directory: %v", got)
	}

	// scan checks -out first: a missing repository is not even looked at.
	_, _, err = runCmd(t, "scan", "-out", unrelated, filepath.Join(t.TempDir(), "no-such-repo"))
	if err == nil || !strings.Contains(err.Error(), "flag -out: output directory "+unrelated+" is not empty") {
		t.Errorf("scan into a full directory: %v", err)
	}
	check()
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
