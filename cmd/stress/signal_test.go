package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstress/stress/internal/outdir"
)

// catchesSIGTERM reports whether process pid has a handler for SIGTERM
// installed (Linux: the SigCgt mask of /proc/PID/status), so a signal
// sent now reaches the program, not the default action.
func catchesSIGTERM(pid int) bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(uint(syscall.SIGTERM)-1)) != 0
		}
	}
	return false
}

// startStress starts bin with args, waits until it handles SIGTERM, and
// returns it with its stderr.
func startStress(t *testing.T, bin string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	for deadline := time.Now().Add(30 * time.Second); !catchesSIGTERM(cmd.Process.Pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%v: no SIGTERM handler after 30s", args)
		}
	}
	return cmd, &stderr
}

// waitExit waits for cmd, at most limit, and returns its exit status.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration, what string) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err == nil {
			return 0
		}
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		t.Fatalf("%s: %v", what, err)
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s: still running %v after the signal", what, limit)
	}
	return -1
}

// stalled is an HTTP server that answers nothing until the test ends;
// got is signalled at each request.
func stalled(t *testing.T) (url string, got <-chan struct{}) {
	ch := make(chan struct{}, 16)
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case ch <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv.URL, ch
}

// TestSignalStopsEveryCommand sends SIGTERM to each command in the middle
// of long work (a bootstrap of a million resamples, a large scan, a
// server that never answers, …): each stops within seconds with status 1,
// says it was stopped, and leaves nothing at its -out, not even a
// temporary directory. Without the fix each of these ran to its end
// (tens of seconds to minutes) or until its server answered.
func TestSignalStopsEveryCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs long commands")
	}
	bin := stressBinary(t)
	root := t.TempDir()
	bundle := filepath.Join(root, "bundle")
	if out, err := exec.Command(bin, "run", "-quiet", "-out", bundle).CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	// A bundle whose bootstrap has work to do: the lab study's rates are
	// fractions on each server (the default study's are 0 or all, which
	// analyze settles without a draw).
	labBundle := slowBundle(t, bin, root)
	// A tree that takes the scanner many seconds: 10 files of 2 MB, each
	// line a construction.
	tree := filepath.Join(root, "tree")
	os.MkdirAll(tree, 0o755)
	line := "const r = {isError: true, content: []};\n"
	data := []byte(strings.Repeat(line, (2<<20)/len(line)))
	// Note: 40 files (80 MiB), so that the scan is still reading when
	// the signal comes a second after the start on a fast, idle machine;
	// with 10 it sometimes finished first and wrote its output.
	for i := range 40 {
		os.WriteFile(filepath.Join(tree, fmt.Sprintf("f%d.js", i)), data, 0o644)
	}
	http1, got1 := stalled(t)
	http2, got2 := stalled(t)
	http3, got3 := stalled(t)
	http4, got4 := stalled(t)
	// verify a manifest whose Ollama server never answers, beside a small
	// synthetic corpus.
	study := filepath.Join(root, "study")
	if out, err := exec.Command(bin, "synth", "-scenarios", "4", "-servers", "1", "-out", study).CombinedOutput(); err != nil {
		t.Fatalf("synth: %v\n%s", err, out)
	}
	verifyManifest := filepath.Join(study, "verify.yaml")
	os.WriteFile(verifyManifest, []byte(fmt.Sprintf(`name: v
corpus: corpus
prompts: [{name: default, path: prompts/default.tmpl}]
conditions: [normalized]
replicates: 1
seed: 1
temperature: 0
models:
  - {name: m, backend: ollama, model: tiny, host: %q, digest: %s}
`, http2, strings.Repeat("a", 64))), 0o644)
	// code a corpus with a model whose server never answers.
	repo, _ := filepath.Abs("../..")
	codeManifest := filepath.Join(root, "code.yaml")
	os.WriteFile(codeManifest, []byte(fmt.Sprintf(`name: c
corpus: %s
prompts: [{name: coding, path: %s}]
conditions: [normalized]
replicates: 1
seed: 1
temperature: 0
models:
  - {name: m, backend: ollama, model: tiny, host: %q, format: schema}
`, filepath.Join(repo, "manifests/corpus/paper"), filepath.Join(repo, "manifests/prompts/coding.tmpl"), http4)), 0o644)
	hang := filepath.Join(root, "hang.sh")
	os.WriteFile(hang, []byte("read line\nsleep 600\n"), 0o755)

	out := func(name string) string { return filepath.Join(root, "out-"+name) }
	for _, tc := range []struct {
		name  string
		args  []string
		ready <-chan struct{} // nil: wait a moment of work (settle)
	}{
		{"analyze", []string{"analyze", "-b", "1000000", labBundle}, nil},
		{"compare", []string{"compare", "-b", "1000000", labBundle, labBundle}, nil},
		{"report", []string{"report", "-b", "1000000", "-out", out("report"), labBundle}, nil},
		{"power", []string{"power", "-diff", "0.1", "-rate", "0.5", "-icc", "0.1", "-studies", "20000", "-out", out("power")}, nil},
		{"power-pilot", []string{"power", "-diff", "0.1", "-pilot", bundle, "-studies", "20000", "-out", out("power-pilot")}, nil},
		{"synth", []string{"synth", "-scenarios", "500000", "-servers", "500", "-out", out("synth")}, nil},
		{"scan", []string{"scan", "-out", out("scan"), tree}, nil},
		{"sample", []string{"sample", "-fetch", http1, "-out", out("sample")}, got1},
		{"verify", []string{"verify", verifyManifest}, got2},
		{"models", []string{"models", "-host", http3}, got3},
		{"capture", []string{"capture", "-out", out("capture"), "-stdio", "hang=sh " + hang}, nil},
		// A coding is a bundle written as it goes (resumable): it stays.
		{"code", []string{"code", "-allow-unpinned", "-quiet", "-out", filepath.Join(root, "coding"), codeManifest}, got4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, stderr := startStress(t, bin, tc.args...)
			if tc.ready != nil {
				select {
				case <-tc.ready:
				case <-time.After(30 * time.Second):
					t.Fatalf("the server got no request:\n%s", stderr)
				}
			} else {
				time.Sleep(settle)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			if st := waitExit(t, cmd, time.Minute, tc.name); st != 1 {
				t.Errorf("exit status %d, want 1\n%s", st, stderr)
			}
			if !strings.Contains(stderr.String(), "stress: SIGTERM: stopping (a second one exits at once)\n") {
				t.Errorf("stderr lacks the stopping line:\n%s", stderr)
			}
			if _, err := os.Stat(out(tc.name)); !os.IsNotExist(err) {
				t.Errorf("%s exists after the signal (%v)", out(tc.name), err)
			}
			for _, e := range mustReadDir(t, root) {
				if strings.Contains(e, ".partial-") {
					t.Errorf("left behind: %s", e)
				}
			}
		})
	}
}

// TestSecondSignalExitsAtOnce runs onSignals in a child process (this
// test binary) whose work never looks at its context: the first SIGTERM
// only cancels it, the second exits at once with status 1 and removes the
// temporary output directory; with patience 1 (run's grace period) the
// second is the command's and the third exits.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	if dir := os.Getenv("STRESS_SIGNAL_CHILD"); dir != "" {
		patience, _ := strconv.Atoi(os.Getenv("STRESS_SIGNAL_PATIENCE"))
		ctx, _ := onSignals(patience, os.Stderr)
		od, err := outdir.Create(filepath.Join(dir, "out"), nil)
		if err != nil {
			panic(err)
		}
		os.WriteFile(filepath.Join(od.Path(), "half"), []byte("x"), 0o644)
		fmt.Println("ready")
		<-ctx.Done()
		fmt.Println("cancelled")
		select {} // work that never stops on its own
	}
	for _, patience := range []int{0, 1} {
		t.Run(fmt.Sprint("patience ", patience), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestSecondSignalExitsAtOnce$")
			cmd.Env = append(os.Environ(), "STRESS_SIGNAL_CHILD="+dir, fmt.Sprint("STRESS_SIGNAL_PATIENCE=", patience))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			lines := bufio.NewScanner(stdout)
			if !lines.Scan() || lines.Text() != "ready" {
				t.Fatalf("child: %q\n%s", lines.Text(), stderr.String())
			}
			if len(mustReadDir(t, dir)) != 1 {
				t.Fatalf("no temporary directory: %v", mustReadDir(t, dir))
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			cmd.Process.Signal(syscall.SIGTERM)
			if !lines.Scan() || lines.Text() != "cancelled" {
				t.Fatalf("after the first signal: %q", lines.Text())
			}
			for range patience {
				cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
					t.Fatal("exited on a signal its command handles")
				case <-time.After(300 * time.Millisecond):
				}
			}
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 {
					t.Errorf("exit: %v, want status 1\n%s", err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatal("still running 30s after the last signal")
			}
			if es := mustReadDir(t, dir); len(es) != 0 {
				t.Errorf("left behind: %v", es)
			}
			if !strings.Contains(stderr.String(), "stress: SIGTERM again: exiting at once\n") {
				t.Errorf("stderr:\n%s", stderr.String())
			}
		})
	}
}

// TestStoppedLabRecord: lab record stopped by SIGTERM between its 39
// sessions (each a lab serve -stdio child) writes nothing.
func TestStoppedLabRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := stressBinary(t)
	dir := filepath.Join(t.TempDir(), "lab")
	cmd, stderr := startStress(t, bin, "lab", "record", "-out", dir)
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	st := waitExit(t, cmd, time.Minute, "lab record")
	if _, err := os.Stat(dir); err == nil {
		// Exit status 0, or -1: the signal came once the command had
		// released it, and ended the process by default.
		t.Skipf("the recording finished before the signal (exit status %d): nothing to stop", st)
	}
	if st != 1 || !strings.Contains(stderr.String(), "stress: SIGTERM: stopping") {
		t.Errorf("exit status %d, want 1\n%s", st, stderr)
	}
	if es := mustReadDir(t, filepath.Dir(dir)); len(es) != 0 {
		t.Errorf("a stopped recording left %v", es)
	}
}

// settle is how long TestSignalStopsEveryCommand lets a command work
// before the signal: long enough to be past its start, well short of the
// shortest command's work (compare -b 1000000 on the lab bundle: about
// 1.2 s here).
const settle = 300 * time.Millisecond

// slowBundle runs the lab study (manifests/lab.yaml, 5,000 decisions in
// process) into root/lab-bundle: a bundle whose cluster bootstrap needs
// its draws (analyze -b 1000000 takes about 6 s of it here).
func slowBundle(t *testing.T, bin, root string) string {
	t.Helper()
	bundle := filepath.Join(root, "lab-bundle")
	if out, err := exec.Command(bin, "run", "-quiet", "-out", bundle, "../../manifests/lab.yaml").CombinedOutput(); err != nil {
		t.Fatalf("run lab.yaml: %v\n%s", err, out)
	}
	return bundle
}
