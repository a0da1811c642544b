package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstress/stress/results"
)

// TestConcurrentProcesses starts 8 stress run processes at once in one
// directory: each writes its own bundle under results/, every bundle is
// whole, and analyze accepts each.
func TestConcurrentProcesses(t *testing.T) {
	bin := stressBinary(t)
	work := t.TempDir()
	var wg sync.WaitGroup
	outs := make([][]byte, 8)
	errs := make([]error, 8)
	for k := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, "run", "-quiet")
			cmd.Dir = work
			outs[k], errs[k] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for k := range outs {
		if errs[k] != nil {
			t.Fatalf("run %d: %v\n%s", k, errs[k], outs[k])
		}
	}
	entries, err := os.ReadDir(filepath.Join(work, "results"))
	if err != nil || len(entries) != 8 {
		t.Fatalf("%d bundles under results/ (%v), want 8", len(entries), err)
	}
	var first []string
	for _, e := range entries {
		dir := filepath.Join(work, "results", e.Name())
		table, log, err := runCmd(t, "analyze", dir)
		if err != nil {
			t.Fatalf("analyze %s: %v\n%s", dir, err, log)
		}
		if !strings.Contains(table, "always_stop") {
			t.Errorf("%s: table %s", dir, table)
		}
		lines := normLines(t, dir)
		if len(lines) < 1260 {
			t.Errorf("%s: %d call lines", dir, len(lines))
		}
		if first == nil {
			first = lines
		} else if strings.Join(lines, "") != strings.Join(first, "") {
			t.Errorf("%s differs from the first bundle", dir)
		}
	}
}

// TestResumeRaces starts a resume while the run is alive, then two resumes
// at once: the latecomers fail at once naming the process that holds the
// bundle, and the bundle finishes equal to an uninterrupted run.
func TestResumeRaces(t *testing.T) {
	bin := stressBinary(t)
	manifest := slowStudy(t, 40, 20, 1) // 480 decisions at 150/s: about 3 s
	root := t.TempDir()
	want := filepath.Join(root, "want")
	if out, err := exec.Command(bin, "run", "-quiet", "-out", want, manifest).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	dir := filepath.Join(root, "run")
	start := func(args ...string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &stderr
	}
	locked := func(what string, holder *exec.Cmd, args ...string) {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("%s: %v, want exit status 1\n%s", what, err, out)
		}
		if want := fmt.Sprintf("bundle %s is in use by process %d", dir, holder.Process.Pid); !strings.Contains(string(out), want) {
			t.Errorf("%s: %s\nlacks %q", what, out, want)
		}
	}
	run, _ := start("run", "-quiet", "-out", dir, manifest)
	for {
		if _, err := os.Stat(filepath.Join(dir, results.CallsFile)); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	locked("resume during the run", run, "run", "-quiet", "-resume", dir)
	run.Process.Kill()
	run.Wait()

	first, stderr := start("run", "-quiet", "-resume", dir)
	time.Sleep(200 * time.Millisecond)
	locked("a second resume", first, "run", "-quiet", "-resume", dir)
	if err := first.Wait(); err != nil {
		t.Fatalf("first resume: %v\n%s", err, stderr)
	}
	sameDecisions(t, want, dir)
}

// TestResumeElsewhere resumes, from another working directory, a run
// started with a relative manifest path: the bundle's absolute path finds
// the manifest.
func TestResumeElsewhere(t *testing.T) {
	manifest := slowStudy(t, 5, 0, 1)
	t.Chdir(filepath.Dir(filepath.Dir(manifest)))
	rel, _ := filepath.Rel(filepath.Dir(filepath.Dir(manifest)), manifest)
	dir := filepath.Join(t.TempDir(), "run")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", dir, rel); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	var rec results.Record
	data, _ := os.ReadFile(filepath.Join(dir, results.ManifestFile))
	json.Unmarshal(data, &rec)
	if rec.Source != rel || rec.SourceAbs != manifest {
		t.Errorf("recorded source %q (absolute %q), want %q and %q", rec.Source, rec.SourceAbs, rel, manifest)
	}
	t.Chdir(t.TempDir())
	if _, log, err := runCmd(t, "run", "-quiet", "-resume", dir); err != nil {
		t.Fatalf("resume from elsewhere: %v\n%s", err, log)
	}
}

// TestRunErrorsWithoutResumeHint checks that failures that are not an
// interrupt do not tell the user to resume, and that a failure before the
// bundle exists names no empty directory.
func TestRunErrorsWithoutResumeHint(t *testing.T) {
	root := t.TempDir()
	manifest := slowStudy(t, 5, 0, 1)
	dir := filepath.Join(root, "run")
	if _, _, err := runCmd(t, "run", "-quiet", "-out", dir, manifest); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(manifest)
	os.WriteFile(manifest, bytes.Replace(data, []byte("seed: 7"), []byte("seed: 8"), 1), 0o644)
	_, log, err := runCmd(t, "run", "-resume", dir)
	if err == nil || strings.Contains(log+err.Error(), "resume with") {
		t.Errorf("refused resume: %v\n%s", err, log)
	}
	// A preflight failure: nothing was written.
	bad := filepath.Join(filepath.Dir(manifest), "unreachable.yaml")
	os.WriteFile(bad, []byte(strings.Replace(string(data), "models:\n", "models:\n  - {name: far, backend: openai, model: m, host: 'http://127.0.0.1:1', transport: {attempts: 1, timeout_s: 0.5}}\n", 1)), 0o644)
	_, log, err = runCmd(t, "run", "-allow-unpinned", "-out", filepath.Join(root, "never"), bad)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "run into :") || strings.Contains(err.Error(), "resume with") || !strings.HasPrefix(err.Error(), "run") {
		t.Errorf("preflight failure: %v\n%s", err, log)
	}
}
