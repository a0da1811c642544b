package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noTestProfiles skips a test that profiles in this process when go test
// itself profiles it (-test.cpuprofile, -test.trace): one CPU profile and
// one trace at a time.
func noTestProfiles(t *testing.T) {
	t.Helper()
	for _, name := range []string{"test.cpuprofile", "test.trace"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			t.Skipf("go test -%s is in use", name)
		}
	}
}

// profileArgs are the three profiling flags, their files named after
// prefix in dir.
func profileArgs(dir, prefix string) []string {
	return []string{
		"-cpuprofile", filepath.Join(dir, prefix+".cpu"),
		"-memprofile", filepath.Join(dir, prefix+".mem"),
		"-trace", filepath.Join(dir, prefix+".trace"),
	}
}

// pprofRaw checks that file is a gzip-compressed profile that go tool
// pprof reads, and returns what it prints with -raw.
func pprofRaw(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		t.Fatalf("%s: no gzip magic: % x", file, data[:min(len(data), 8)])
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err == nil {
		_, err = io.Copy(io.Discard, zr) // the checksum too
	}
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	// Note: go test puts its own GOROOT/bin first on the PATH, so "go" is
	// the go command that runs the test.
	out, err := exec.Command("go", "tool", "pprof", "-raw", "-symbolize=none", file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -raw %s: %v\n%s", file, err, out)
	}
	return string(out)
}

// checkProfiles checks the three files of profileArgs(dir, prefix): a
// CPU profile and an allocation profile that go tool pprof reads, and an
// execution trace.
func checkProfiles(t *testing.T, dir, prefix string) {
	t.Helper()
	base := filepath.Join(dir, prefix)
	if raw := pprofRaw(t, base+".cpu"); !strings.Contains(raw, "PeriodType: cpu nanoseconds") || !strings.Contains(raw, "samples/count cpu/nanoseconds") {
		t.Errorf("%s.cpu is not a CPU profile:\n%.500s", base, raw)
	}
	if raw := pprofRaw(t, base+".mem"); !strings.Contains(raw, "alloc_space/bytes") || !strings.Contains(raw, "inuse_space/bytes") || !regexp.MustCompile(`(?m)^Samples:\n.*\n +\d+`).MatchString(raw) {
		t.Errorf("%s.mem is not an allocation profile with samples:\n%.500s", base, raw)
	}
	data, err := os.ReadFile(base + ".trace")
	if err != nil {
		t.Fatal(err)
	}
	if len(data) <= 16 || !bytes.HasPrefix(data, []byte("go 1.")) || !bytes.Contains(data[:16], []byte(" trace\x00")) {
		t.Errorf("%s.trace: %d bytes, no trace header: %q", base, len(data), data[:min(len(data), 16)])
	}
}

// TestProfileFlags runs run, merge, analyze, report and export on real
// bundles with -cpuprofile, -memprofile and -trace: each writes the three
// files, each readable, and prints what it prints without them.
func TestProfileFlags(t *testing.T) {
	noTestProfiles(t)
	root := t.TempDir()
	prof := filepath.Join(root, "profiles")
	os.Mkdir(prof, 0o755)
	full, a, b, m := filepath.Join(root, "full"), filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "m")
	runOK := func(args ...string) string {
		t.Helper()
		out, log, err := runCmd(t, args...)
		if err != nil {
			t.Fatalf("stress %q: %v\n%s", args, err, log)
		}
		return out
	}
	out := runOK(append([]string{"run", "-quiet", "-out", full}, profileArgs(prof, "run")...)...)
	golden(t, "run.golden", out)
	checkProfiles(t, prof, "run")
	runOK("run", "-quiet", "-shard", "1/2", "-out", a)
	runOK("run", "-quiet", "-shard", "2/2", "-out", b)
	out = runOK(append([]string{"merge", "-quiet", "-out", m, a, b}, profileArgs(prof, "merge")...)...)
	golden(t, "run.golden", out)
	checkProfiles(t, prof, "merge")
	plain := runOK("analyze", "-b", "500", m)
	if got := runOK(append([]string{"analyze", "-b", "500", m}, profileArgs(prof, "analyze")...)...); got != plain {
		t.Errorf("analyze prints otherwise with the profiling flags:\n%s", diff(plain, got))
	}
	checkProfiles(t, prof, "analyze")
	runOK(append([]string{"report", "-b", "500", "-out", filepath.Join(root, "report"), m}, profileArgs(prof, "report")...)...)
	checkProfiles(t, prof, "report")
	if _, err := os.Stat(filepath.Join(root, "report", "report.html")); err != nil {
		t.Error(err)
	}
	runOK(append([]string{"export", "-quiet", "-out", filepath.Join(root, "inspect"), full}, profileArgs(prof, "export")...)...)
	checkProfiles(t, prof, "export")
	if running.Load() != nil {
		t.Error("a profiler is still registered after the commands")
	}
}

// TestProfileRefused: a profile path that exists (a file, a dangling
// symbolic link, a named pipe) or that two flags name is refused before
// the command runs, naming the flag; the files the other flags had
// created are removed, and the path is left as it was.
func TestProfileRefused(t *testing.T) {
	noTestProfiles(t)
	dir := t.TempDir()
	taken := filepath.Join(dir, "taken")
	os.WriteFile(taken, []byte("mine"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(filepath.Join(dir, "nowhere"), link)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh")
	bundle := filepath.Join(dir, "no-bundle") // never read: the refusal comes first
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", "-cpuprofile", fresh, "-memprofile", taken, bundle}, "analyze: flag -memprofile: " + taken + " already exists; choose another"},
		{[]string{"report", "-trace", taken, bundle}, "report: flag -trace: " + taken + " already exists"},
		{[]string{"export", "-cpuprofile", link, bundle}, "export: flag -cpuprofile: " + link + " already exists"},
		{[]string{"merge", "-out", filepath.Join(dir, "m"), "-memprofile", fifo, bundle}, "merge: flag -memprofile: " + fifo + " already exists"},
		{[]string{"run", "-out", filepath.Join(dir, "r"), "-cpuprofile", fresh, "-trace", fresh}, "run: flags -cpuprofile and -trace name the same file " + fresh},
		{[]string{"analyze", "-cpuprofile", filepath.Join(dir, "missing", "cpu.out"), bundle}, "analyze: flag -cpuprofile: open " + filepath.Join(dir, "missing", "cpu.out")},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			out, _, err := runCmd(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("stress %q: %v, want %q", tc.args, err, tc.want)
			}
			if out != "" {
				t.Errorf("stress %q printed %q", tc.args, out)
			}
			if _, err := os.Lstat(fresh); !os.IsNotExist(err) {
				t.Errorf("stress %q left %s (%v)", tc.args, fresh, err)
				os.Remove(fresh)
			}
		})
	}
	if b, _ := os.ReadFile(taken); string(b) != "mine" {
		t.Errorf("%s holds %q", taken, b)
	}
	for _, p := range []string{filepath.Join(dir, "m"), filepath.Join(dir, "r")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists: the command ran", p)
		}
	}
	if running.Load() != nil {
		t.Error("a profiler is registered after the refusals")
	}
}

// TestProfileOnFailure: a command that fails still writes its profiles
// (analyze of a missing bundle, report of one refused as partial), and
// its error is its own.
func TestProfileOnFailure(t *testing.T) {
	noTestProfiles(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	_, _, err := runCmd(t, append([]string{"analyze", missing}, profileArgs(dir, "analyze")...)...)
	if err == nil || strings.Contains(err.Error(), "profile") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("analyze of a missing bundle: %v", err)
	}
	checkProfiles(t, dir, "analyze")
	// A usage error after the flags are parsed too.
	_, _, err = runCmd(t, append([]string{"merge", "-out", filepath.Join(dir, "m")}, profileArgs(dir, "merge")...)...)
	if !errors.Is(err, errUsage) {
		t.Fatalf("merge without shards: %v", err)
	}
	checkProfiles(t, dir, "merge")
}

// TestProfileOnSignal: analyze stopped by SIGTERM in the middle of a long
// bootstrap writes its profiles, the CPU profile holding the seconds of
// work; a second signal, which exits at once, writes them too
// (finishProfiles, in a child process whose work never stops).
func TestProfileOnSignal(t *testing.T) {
	if dir := os.Getenv("STRESS_PROFILE_CHILD"); dir != "" {
		ctx, _ := onSignals(0, os.Stderr)
		if _, err := startProfiles("child", filepath.Join(dir, "hard.cpu"), filepath.Join(dir, "hard.mem"), filepath.Join(dir, "hard.trace")); err != nil {
			panic(err)
		}
		fmt.Println("ready")
		<-ctx.Done()
		fmt.Println("cancelled")
		for x := 0; ; x++ { // work that never stops on its own
			_ = fmt.Sprint(x)
		}
	}
	if testing.Short() {
		t.Skip("builds the binary and runs a long bootstrap")
	}
	bin := stressBinary(t)
	dir := t.TempDir()
	bundle := slowBundle(t, bin, dir)
	cmd, stderr := startStress(t, bin, append([]string{"analyze", "-b", "1000000", bundle}, profileArgs(dir, "stopped")...)...)
	time.Sleep(time.Second)
	cmd.Process.Signal(syscall.SIGTERM)
	if st := waitExit(t, cmd, time.Minute, "analyze"); st != 1 || !strings.Contains(stderr.String(), "stress: analyze: stopped by SIGTERM") {
		t.Errorf("exit status %d, want 1, stopped\n%s", st, stderr)
	}
	checkProfiles(t, dir, "stopped")
	if raw := pprofRaw(t, filepath.Join(dir, "stopped.cpu")); !regexp.MustCompile(`(?m)^Samples:\nsamples/count cpu/nanoseconds.*\n +\d+ +\d+`).MatchString(raw) {
		t.Errorf("the CPU profile of a second of bootstrap has no samples:\n%.500s", raw)
	}

	child := exec.Command(os.Args[0], "-test.run=^TestProfileOnSignal$")
	child.Env = append(os.Environ(), "STRESS_PROFILE_CHILD="+dir)
	var childErr bytes.Buffer
	child.Stderr = &childErr
	stdout, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill() })
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("child: %q\n%s", lines.Text(), childErr.String())
	}
	child.Process.Signal(syscall.SIGTERM)
	if !lines.Scan() || lines.Text() != "cancelled" {
		t.Fatalf("after the first signal: %q\n%s", lines.Text(), childErr.String())
	}
	time.Sleep(200 * time.Millisecond) // some work to profile
	child.Process.Signal(syscall.SIGTERM)
	if st := waitExit(t, child, 30*time.Second, "child"); st != 1 || !strings.Contains(childErr.String(), "stress: SIGTERM again: exiting at once\n") {
		t.Errorf("child: exit status %d, want 1\n%s", st, childErr.String())
	}
	checkProfiles(t, dir, "hard")
}
