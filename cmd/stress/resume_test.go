package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstress/stress/internal/testserver/echohttp"
	"github.com/mcpstress/stress/internal/testserver/faultserver"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/synth"
)

// stressBinary builds the stress command into a temporary directory of
// the test.
func stressBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stress")
	// Note: go test puts its own GOROOT/bin first on the PATH, so "go" is
	// the go command that runs the test.
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// slowStudy writes a synthetic study whose baselines take delayMS per call
// with parallel calls in flight per model: 3 x 4 x scenarios decisions.
func slowStudy(t *testing.T, scenarios, delayMS, parallel int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "study")
	if err := synth.Write(context.Background(), dir, synth.Options{Scenarios: scenarios, Servers: 5, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "name: slow\ncorpus: corpus\nprompts: [{name: default, path: prompts/default.tmpl}]\nconditions: [normalized, code_only, structured, prose]\nreplicates: 1\nseed: 7\ntemperature: 0.7\nmodels:\n")
	for _, m := range []string{"always_stop", "code_registry", "explicit_policy"} {
		fmt.Fprintf(&b, "  - {name: %s, backend: baseline, model: %s, parallel: %d, options: {delay_ms: %d}}\n", m, m, parallel, delayMS)
	}
	file := filepath.Join(dir, "slow.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// normLines reads calls.jsonl without latency (the only field that
// depends on timing here).
func normLines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		delete(v, "latency_ms")
		nb, _ := json.Marshal(v)
		out = append(out, string(nb))
	}
	return out
}

// sameDecisions checks two bundles decision for decision: calls.jsonl line
// for line (modulo latency), decisions.parquet row for row, summary.json.
func sameDecisions(t *testing.T, want, got string) {
	t.Helper()
	a, b := normLines(t, want), normLines(t, got)
	if len(a) != len(b) {
		t.Fatalf("%d call lines, want %d", len(b), len(a))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("call line %d:\n got %s\nwant %s", i+1, b[i], a[i])
		}
	}
	ra, err1 := results.ReadRows(filepath.Join(want, results.DecisionsFile))
	rb, err2 := results.ReadRows(filepath.Join(got, results.DecisionsFile))
	if err1 != nil || err2 != nil || len(ra) != len(rb) {
		t.Fatalf("rows: %v %v, %d vs %d", err1, err2, len(ra), len(rb))
	}
	for i := range ra {
		if ra[i] != rb[i] {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, rb[i], ra[i])
		}
	}
	var sa, sb results.Summary
	for _, x := range []struct {
		dir string
		s   *results.Summary
	}{{want, &sa}, {got, &sb}} {
		data, err := os.ReadFile(filepath.Join(x.dir, results.SummaryFile))
		if err != nil || json.Unmarshal(data, x.s) != nil {
			t.Fatalf("%s: %v", x.dir, err)
		}
		x.s.RunID = ""
	}
	if fmt.Sprint(sa) != fmt.Sprint(sb) {
		t.Fatalf("summary %+v, want %+v", sb, sa)
	}
}

// TestKillResume SIGKILLs a real stress process at random instants, many
// times, resuming after each kill; the finished bundle equals an
// uninterrupted run decision for decision. Kills land while calls are in
// flight, while call lines are written and while the bundle is rewritten.
// Note: no kill is aimed before the bundle exists (manifest.json, written
// before any call line): such a kill leaves nothing to resume, and on a
// loaded machine the process may take longer to get there than any delay
// drawn. The first run is killed only once its manifest.json is there, so
// at least one session is killed mid-run whatever the machine's speed (the
// study's calls sleep 4 s in all, far longer than a delay).
func TestKillResume(t *testing.T) {
	bin := stressBinary(t)
	manifest := slowStudy(t, 200, 10, 2) // 2,400 decisions at 600/s: 4 s uninterrupted
	root := t.TempDir()
	want := filepath.Join(root, "want")
	if out, err := exec.Command(bin, "run", "-quiet", "-out", want, manifest).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill schedule seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := filepath.Join(root, "killed")
	bundled := func() bool {
		_, err := os.Stat(filepath.Join(dir, results.ManifestFile))
		return err == nil
	}
	// Up to 20 kills, one per run; a run that finishes first ends them.
	kills := 0
	for done := false; kills < 20 && !done; {
		args := []string{"run", "-quiet", "-resume", dir}
		if kills == 0 {
			args = []string{"run", "-quiet", "-out", dir, manifest}
		}
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		var err error
		gone := false
		// The first run: wait for the bundle (or the run's end) before
		// arming the kill.
		for kills == 0 && !bundled() && !gone {
			select {
			case err = <-exited:
				gone = true
			case <-time.After(2 * time.Millisecond):
			}
		}
		if !gone {
			wait := time.Duration(20+rng.IntN(250)) * time.Millisecond
			select {
			case err = <-exited:
				gone = true
			case <-time.After(wait):
			}
		}
		if gone {
			// It ended before the kill: the bundle must be done.
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, stderr.String())
			}
			done = true
			continue
		}
		cmd.Process.Signal(syscall.SIGKILL)
		err = <-exited
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			kills++
		} else if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr.String())
		} else {
			done = true // it finished as the signal went
		}
	}
	if kills == 0 {
		t.Fatal("no kill landed after the bundle existed")
	}
	out, err := exec.Command(bin, "run", "-resume", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("final resume: %v\n%s", err, out)
	}
	t.Logf("%d kills", kills)
	sameDecisions(t, want, dir)
	var rec results.Record
	data, _ := os.ReadFile(filepath.Join(dir, results.ManifestFile))
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	killed, ran := 0, 0
	for _, s := range rec.Sessions {
		if s.Ended == nil {
			killed++
		}
		ran += s.Ran
	}
	// Every decision is counted by the session that ran it, killed or
	// not: what a killed session ran up to its last sync is in
	// manifest.json, and the resume counts the rest it kept.
	if ran != 2400 {
		t.Errorf("the sessions ran %d decisions in all, want 2400: %+v", ran, rec.Sessions)
	}
	if rec.Finished == nil || rec.Completed != 2400 || rec.Remaining != 0 || killed == 0 || rec.Sessions[len(rec.Sessions)-1].Ended == nil {
		t.Errorf("manifest.json: finished %v, completed %d, remaining %d, %d sessions (%d killed)", rec.Finished, rec.Completed, rec.Remaining, len(rec.Sessions), killed)
	}
	if an, _, err := runCmd(t, "analyze", dir); err != nil || !strings.Contains(an, "always_stop") {
		t.Errorf("analyze of the resumed bundle: %v\n%s", err, an)
	}
}

// TestInterruptSignal sends SIGINT to a running stress: it stops starting
// decisions, lets calls in flight finish, writes the bundle, says how to
// resume and exits 1; the resume completes it.
func TestInterruptSignal(t *testing.T) {
	bin := stressBinary(t)
	// 720 decisions, 9 calls of 50 ms in flight: at least 4 s, which the
	// signal, sent once calls are written, does not miss.
	manifest := slowStudy(t, 60, 50, 3)
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "run", "-out", dir, manifest)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once some decisions are written (a loaded machine may take
	// a while to start the binary).
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st, err := os.Stat(filepath.Join(dir, results.CallsFile)); err == nil && st.Size() > 0 {
			break
		}
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\n%s", err, stderr.String())
	}
	log := stderr.String()
	for _, want := range []string{"interrupt: no new decisions start", "resume with: stress run -resume " + dir, "run interrupted:"} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
	var rec results.Record
	data, _ := os.ReadFile(filepath.Join(dir, results.ManifestFile))
	json.Unmarshal(data, &rec)
	if rec.Completed == 0 || rec.Remaining == 0 || rec.Completed+rec.Remaining != 720 || !rec.Sessions[0].Interrupted {
		t.Errorf("manifest.json after the interrupt: completed %d, remaining %d, sessions %+v", rec.Completed, rec.Remaining, rec.Sessions)
	}
	// The interrupted bundle is consistent: analyze refuses it as partial
	// and, with -partial, analyzes it.
	if _, _, err := runCmd(t, "analyze", dir); err == nil || !strings.Contains(err.Error(), "analyze refuses partial bundle "+dir) {
		t.Errorf("analyze of the interrupted bundle: %v, want a refusal", err)
	}
	if out, _, err := runCmd(t, "analyze", "-partial", dir); err != nil || !strings.HasPrefix(out, "warning: partial bundle "+dir) {
		t.Errorf("analyze -partial of the interrupted bundle: %v\n%.300s", err, out)
	}
	out, err := exec.Command(bin, "run", "-quiet", "-resume", dir).Output()
	if err != nil || !strings.Contains(string(out), "always_stop") {
		t.Fatalf("resume: %v\n%s", err, out)
	}
}

// TestResumeCLI resumes a bundle whose calls.jsonl ends in a torn line, and
// refuses one whose manifest changed.
func TestResumeCLI(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run")
	full, _, err := runCmd(t, "run", "-quiet", "-out", dir)
	if err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(dir, results.CallsFile)
	b, _ := os.ReadFile(calls)
	os.WriteFile(calls, b[:len(b)/2], 0o644) // cut mid-file, most likely mid-line
	os.Remove(filepath.Join(dir, results.DecisionsFile))
	setDurable(t, dir, 0) // as a run killed before its first sync leaves it
	out, log, err := runCmd(t, "run", "-resume", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if out != full {
		t.Errorf("resumed table\n%s\nwant\n%s", out, full)
	}
	if !strings.Contains(log, "decisions done") || !strings.Contains(log, "resume ") {
		t.Errorf("log: %s", log)
	}
	ref := filepath.Join(root, "ref")
	os.MkdirAll(ref, 0o755)
	os.WriteFile(filepath.Join(ref, results.CallsFile), b, 0o644)
	if a, c := normLines(t, ref), normLines(t, dir); strings.Join(a, "") != strings.Join(c, "") {
		t.Error("the resumed calls.jsonl differs from the uninterrupted one")
	}

	// A run from a manifest file that then changes cannot be resumed.
	man := slowStudy(t, 5, 0, 1)
	d2 := filepath.Join(root, "changed")
	if _, _, err := runCmd(t, "run", "-quiet", "-out", d2, man); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(man)
	os.WriteFile(man, bytes.Replace(data, []byte("seed: 7"), []byte("seed: 8"), 1), 0o644)
	_, _, err = runCmd(t, "run", "-resume", d2)
	if err == nil || !strings.Contains(err.Error(), "cannot resume") || !strings.Contains(err.Error(), "the manifest changed: sha256") {
		t.Errorf("resume after the manifest changed: %v", err)
	}
}

// setDurable sets the durable bytes that dir's manifest.json records.
func setDurable(t *testing.T, dir string, n int64) {
	t.Helper()
	file := filepath.Join(dir, results.ManifestFile)
	var rec map[string]any
	data, err := os.ReadFile(file)
	if err != nil || json.Unmarshal(data, &rec) != nil {
		t.Fatalf("%s: %v", file, err)
	}
	rec["calls_durable_bytes"] = n
	data, _ = json.Marshal(rec)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestShardMergeCLI runs the default study as two shards and merges them:
// the merged table is the whole run's (run.golden).
func TestShardMergeCLI(t *testing.T) {
	root := t.TempDir()
	a, b, m := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "m")
	for i, d := range []string{a, b} {
		if _, log, err := runCmd(t, "run", "-quiet", "-shard", fmt.Sprintf("%d/2", i+1), "-out", d); err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
	}
	out, log, err := runCmd(t, "merge", "-out", m, b, a)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "run.golden", out)
	if !strings.Contains(log, "merged 2 shards into "+m+": 1260 decisions") {
		t.Errorf("log: %s", log)
	}
	an, _, err := runCmd(t, "analyze", m)
	if err != nil || !strings.HasPrefix(an, out) {
		t.Errorf("analyze of the merged bundle: %v\n%s", err, an)
	}
	_, _, err = runCmd(t, "merge", "-out", filepath.Join(root, "x"), a)
	if err == nil || !strings.Contains(err.Error(), "shard 2/2 is missing") {
		t.Errorf("merge of one shard of two: %v", err)
	}
}

// TestSynthCLI writes a synthetic study and runs it.
func TestSynthCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	out, _, err := runCmd(t, "synth", "-scenarios", "40", "-servers", "4", "-replicates", "2", "-seed", "5", "-out", dir)
	if err != nil || !strings.Contains(out, "wrote "+dir+": 40 scenarios from 4 servers") {
		t.Fatalf("%v: %s", err, out)
	}
	table, _, err := runCmd(t, "run", "-quiet", "-out", filepath.Join(dir, "run"), filepath.Join(dir, synth.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[3] == "80" {
			n++
		}
	}
	if n != 12 {
		t.Errorf("want 12 cells of N 80:\n%s", table)
	}
}

func TestRunMergeSynthUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-shard", "3/2"}, "flag -shard: want i/n"},
		{[]string{"run", "-shard", "x"}, "flag -shard"},
		{[]string{"run", "-resume", "a", "-out", "b"}, "-resume and -out exclude each other"},
		{[]string{"run", "-grace", "0s"}, "positive duration"},
		{[]string{"run", "-resume", "/nonexistent/bundle"}, "flag -resume: /nonexistent/bundle is not a results bundle"},
		{[]string{"merge", "a"}, "flag -out is required"},
		{[]string{"merge", "-out", "x"}, "merge takes the shard bundle directories"},
		{[]string{"synth", "-scenarios", "10", "-servers", "2"}, "flag -out is required"},
		{[]string{"synth", "-scenarios", "10", "-servers", "20", "-out", "x"}, "flag -servers: want 1 to the number of scenarios"},
		{[]string{"synth", "-scenarios", "0", "-servers", "1", "-out", "x"}, "flag -scenarios"},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			_, _, err := runCmd(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestAnalyzeTransport runs a model whose server always answers HTTP 500
// (through the test-only echohttp backend) and checks that stress analyze
// reports the transport events and the error decisions apart from the
// counts.
// downBundle runs a synthetic study of three decisions against a server
// that answers every call with HTTP 500 (model id model): a bundle of
// three error decisions, each with two transport events.
func downBundle(t *testing.T, model string) string {
	t.Helper()
	srv := faultserver.New(echohttp.Handler(func(models.Request) string { return "" }),
		faultserver.Fault{Kind: faultserver.KindStatus, Status: 500})
	t.Cleanup(srv.Close)
	study := filepath.Join(t.TempDir(), "study")
	if err := synth.Write(context.Background(), study, synth.Options{Scenarios: 3, Servers: 1, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(study, "down.yaml")
	os.WriteFile(man, []byte(`name: down
corpus: corpus
prompts: [{name: default, path: prompts/default.tmpl}]
conditions: [normalized]
replicates: 1
models:
  - name: down
    backend: echohttp
    model: "`+model+`"
    host: `+srv.URL+`
    transport: {attempts: 2, backoff_ms: 1, max_backoff_ms: 1, breaker_after: 100}
`), 0o644)
	dir := filepath.Join(t.TempDir(), "run")
	if _, log, err := runCmd(t, "run", "-out", dir, man); err != nil || !strings.Contains(log, "3 errors, 6 transport events") {
		t.Fatalf("%v\n%s", err, log)
	}
	return dir
}

func TestAnalyzeTransport(t *testing.T) {
	dir := downBundle(t, "x")
	out, _, err := runCmd(t, "analyze", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Transport events (faults met by 3 calls, retried unless the call failed; never counted as answers):",
		"down   http_status  6       3",
		"Error decisions (a call failed for good; excluded from the counts): 3",
		"down/default/normalized/X0000001/1 turn 0: giving up after 2 attempts: HTTP 500: injected 500 [http_status,http_status]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("analyze output lacks %q:\n%s", want, out)
		}
	}
	js, _, err := runCmd(t, "analyze", "-json", dir)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Transport *struct {
			Events []struct {
				Model, Kind   string
				Events, Calls int
			}
			FailedTotal int `json:"failed_total"`
		}
	}
	if err := json.Unmarshal([]byte(js), &got); err != nil || got.Transport == nil || got.Transport.FailedTotal != 3 ||
		len(got.Transport.Events) != 1 || got.Transport.Events[0].Kind != "http_status" || got.Transport.Events[0].Events != 6 {
		t.Errorf("analyze -json transport: %v %+v", err, got.Transport)
	}
}
