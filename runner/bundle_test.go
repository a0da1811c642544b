package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
)

// TestConcurrentRunsNeverCollide starts 8 runs of one study at the same
// instant (the same start time, as runs started in one second or one
// millisecond have): each gets its own bundle, and every bundle is whole.
func TestConcurrentRunsNeverCollide(t *testing.T) {
	root := t.TempDir()
	m := hashStudy(t, "hash-test", 1, 2, nil, 0)
	fixed := time.Date(2026, 12, 1, 1, 2, 3, 0, time.UTC)
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	errs := make([]error, 8)
	for k := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[k], _, errs[k] = prepare(t, m).Run(context.Background(), runner.Options{ResultsRoot: root, Now: func() time.Time { return fixed }})
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for k, dir := range dirs {
		if errs[k] != nil {
			t.Fatalf("run %d: %v", k, errs[k])
		}
		if seen[dir] {
			t.Fatalf("two runs wrote %s", dir)
		}
		seen[dir] = true
		if !strings.HasPrefix(filepath.Base(dir), "20261201T010203.000Z-") || !strings.HasSuffix(dir, "-"+m.Name) {
			t.Errorf("run directory %s", dir)
		}
		var rec results.Record
		readJSON(t, filepath.Join(dir, results.ManifestFile), &rec)
		if rec.RunID != filepath.Base(dir) || rec.Finished == nil || rec.Completed != 168 {
			t.Errorf("%s: run id %s, finished %v, completed %d", dir, rec.RunID, rec.Finished, rec.Completed)
		}
		if k > 0 {
			sameBundle(t, dirs[0], dir)
		}
	}
}

// TestOneWriterPerBundle checks the bundle lock: a resume started while
// the run is alive, a second resume while the first is alive, and a run
// into the same -out directory all fail at once, naming the process that
// holds the bundle, and leave it intact.
func TestOneWriterPerBundle(t *testing.T) {
	root := t.TempDir()
	want := filepath.Join(root, "want")
	runTo(t, prepare(t, hashStudy(t, "hash-test", 1, 2, nil, 0)), want, runner.Options{})

	m := hashStudy(t, "gate-test", 1, 2, nil, 2)
	dir := filepath.Join(root, "run")
	holder := fmt.Sprintf("process %d (stress run,", os.Getpid())
	checkLocked := func(what string, err error) {
		t.Helper()
		var le *results.LockedError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), holder) || !strings.Contains(err.Error(), "bundle "+dir+" is in use") {
			t.Fatalf("%s: error %v, want the bundle in use by %q", what, err, holder)
		}
	}
	setGate(false)
	defer setGate(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, _, err := prepare(t, m).Run(ctx, runner.Options{Out: dir, Grace: time.Millisecond})
		done <- err
	}()
	for gate.inFlight.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	_, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{})
	checkLocked("resume during the run", err)
	_, _, err = prepare(t, m).Run(context.Background(), runner.Options{Out: dir})
	checkLocked("a second run into the same directory", err)
	cancel()
	if err := <-done; !errors.Is(err, runner.ErrInterrupted) {
		t.Fatalf("run: %v, want interrupted", err)
	}

	// Two resumes at once: the second fails while the first runs.
	holder = fmt.Sprintf("process %d (stress run -resume,", os.Getpid())
	go func() {
		_, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{})
		done <- err
	}()
	for gate.inFlight.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	_, err = prepare(t, m).Resume(context.Background(), dir, runner.Options{})
	checkLocked("a second resume", err)
	openGate()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sameBundle(t, want, dir)
	// Once the writer is gone the lock is free: resuming the finished
	// bundle only rewrites its derived files.
	if _, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{}); err != nil {
		t.Fatal(err)
	}
}

// shuffledRun runs the hash study into root/full and returns it with its
// decisions' lines in an order shuffled by seed, as a parallel run writes
// them.
func shuffledRun(t *testing.T, root string, seed uint64) (full string, m *manifests.Resolved, gs [][]byte) {
	t.Helper()
	full = filepath.Join(root, "full")
	m = hashStudy(t, "hash-test", 1, 2, nil, 0)
	runTo(t, prepare(t, m), full, runner.Options{})
	calls, _ := os.ReadFile(filepath.Join(full, results.CallsFile))
	gs = groups(t, full, calls)
	rng := rand.New(rand.NewPCG(seed, seed+1))
	rng.Shuffle(len(gs), func(i, j int) { gs[i], gs[j] = gs[j], gs[i] })
	return full, m, gs
}

// crashBundle writes a bundle as a crash leaves it: manifest.json as the
// finished run full recorded it but with durable bytes, and calls.
func crashBundle(t *testing.T, full, dir string, durable int64, calls []byte) {
	t.Helper()
	var rec map[string]any
	readJSON(t, filepath.Join(full, results.ManifestFile), &rec)
	rec["calls_durable_bytes"] = durable
	delete(rec, "finished")
	b, _ := json.Marshal(rec)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, results.ManifestFile), b, 0o644)
	os.WriteFile(filepath.Join(dir, results.CallsFile), calls, 0o644)
	copyTables(t, full, dir)
}

// copyTables copies the message and defaults tables of bundle from to
// bundle to, as a crash leaves them beside the call lines (they are made
// durable before the lines that refer to them).
func copyTables(t testing.TB, from, to string) {
	t.Helper()
	for _, name := range []string{results.MessagesFile, results.DefaultsFile} {
		b, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestResumeDurablePoint checks crash recovery against the durable point
// recorded in manifest.json: a zeroed page followed by valid lines after
// it (what a power loss can leave in the last unsynced second) is cut off
// and redone; the same damage within the durable bytes, and a response
// changed within them, are refused as tampering, and so are fewer bytes
// than were durable, or no calls.jsonl at all.
func TestResumeDurablePoint(t *testing.T) {
	root := t.TempDir()
	full, m, gs := shuffledRun(t, root, 3)
	head := bytes.Join(gs[:100], nil)
	zeroed := append(bytes.Repeat([]byte{0}, 4096), bytes.Join(gs[100:110], nil)...)

	dir := filepath.Join(root, "power-loss")
	crashBundle(t, full, dir, int64(len(head)), append(append([]byte(nil), head...), zeroed...))
	var log bytes.Buffer
	if _, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{Log: &log}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if want := fmt.Sprintf("torn tail of %d bytes discarded", len(zeroed)); !strings.Contains(log.String(), want) {
		t.Errorf("log %q lacks %q", log.String(), want)
	}
	sameBundle(t, full, dir)
	var rec results.Record
	readJSON(t, filepath.Join(dir, results.ManifestFile), &rec)
	if st, _ := os.Stat(filepath.Join(dir, results.CallsFile)); rec.CallsDurable == nil || *rec.CallsDurable != st.Size() {
		t.Errorf("finished bundle records %v durable bytes, calls.jsonl has %d", rec.CallsDurable, st.Size())
	}

	// The same damage before the durable point is not a crash's doing.
	dir = filepath.Join(root, "changed")
	damaged := append(append([]byte(nil), head...), zeroed...)
	crashBundle(t, full, dir, int64(len(damaged)), damaged)
	_, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{})
	if err == nil || !strings.Contains(err.Error(), "known durable: the file was changed") {
		t.Errorf("damage within the durable bytes: %v", err)
	}
	// A response changed within the durable bytes.
	dir = filepath.Join(root, "response")
	changed := bytes.Replace(head, []byte(`recovery_policy\": \"`), []byte(`recovery_policy\":  \"`), 1)
	if bytes.Equal(changed, head) {
		t.Fatal("no response changed")
	}
	crashBundle(t, full, dir, int64(len(changed)), changed)
	_, err = prepare(t, m).Resume(context.Background(), dir, runner.Options{})
	if err == nil || !strings.Contains(err.Error(), "response_sha256 does not match the response") {
		t.Errorf("changed response: %v", err)
	}
	// Fewer bytes than were durable: data is missing.
	dir = filepath.Join(root, "short")
	crashBundle(t, full, dir, int64(len(head)+1), head)
	_, err = prepare(t, m).Resume(context.Background(), dir, runner.Options{})
	if err == nil || !strings.Contains(err.Error(), "data that was on stable storage is missing") {
		t.Errorf("short file: %v", err)
	}
	// No calls.jsonl at all (its name was lost: the directory's fsync is
	// what keeps it) is the same loss, not a run killed before its first
	// write: the decisions are not silently run again.
	dir = filepath.Join(root, "no-calls")
	crashBundle(t, full, dir, int64(len(head)), head)
	if err := os.Remove(filepath.Join(dir, results.CallsFile)); err != nil {
		t.Fatal(err)
	}
	_, err = prepare(t, m).Resume(context.Background(), dir, runner.Options{})
	if err == nil || !strings.Contains(err.Error(), "calls.jsonl is missing, but its first") || !strings.Contains(err.Error(), "data that was on stable storage is missing") {
		t.Errorf("missing calls.jsonl: %v", err)
	}
}

// TestFinishNeedsSpace checks that finishing a bundle whose calls.jsonl
// is not in canonical order first checks for room for the canonical copy:
// on a full disk it says how much is needed, keeps every decision and
// records the session; a resume with room finishes the bundle.
func TestFinishNeedsSpace(t *testing.T) {
	root := t.TempDir()
	full, m, gs := shuffledRun(t, root, 5)
	shuffled := bytes.Join(gs, nil)
	dir := filepath.Join(root, "full-disk")
	crashBundle(t, full, dir, int64(len(shuffled)), shuffled)

	restore := runner.SetFreeSpace(func(string) (int64, error) { return 1000, nil })
	_, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{})
	restore()
	if err == nil || !strings.Contains(err.Error(), "finishing the bundle needs") || !strings.Contains(err.Error(), "1.0 kB is available") || !strings.Contains(err.Error(), "stress run -resume "+dir) {
		t.Fatalf("error %v, want the space needed", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, results.CallsFile)); !bytes.Equal(b, shuffled) {
		t.Error("calls.jsonl changed")
	}
	if _, err := os.Stat(filepath.Join(dir, results.CallsFile+".tmp")); err == nil {
		t.Error("a partial copy was left")
	}
	var rec results.Record
	readJSON(t, filepath.Join(dir, results.ManifestFile), &rec)
	last := rec.Sessions[len(rec.Sessions)-1]
	if rec.Finished != nil || last.Ended == nil || !last.Interrupted || rec.Completed != 168 || rec.Remaining != 0 {
		t.Errorf("manifest.json: finished %v, completed %d, remaining %d, last session %+v", rec.Finished, rec.Completed, rec.Remaining, last)
	}
	if _, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{}); err != nil {
		t.Fatal(err)
	}
	sameBundle(t, full, dir)
}

// TestResumeKilledWhileLoading: a resume killed after it loaded the
// bundle (cut the torn tail, removed the stale derived files) but before
// it recorded its session leaves no session behind, and the next resume
// finishes the bundle exactly as one from the crash itself does: the
// same calls, one more session, the sessions' counts adding up to the
// decisions.
func TestResumeKilledWhileLoading(t *testing.T) {
	root := t.TempDir()
	full, m, gs := shuffledRun(t, root, 7)
	head := bytes.Join(gs[:100], nil)
	torn := append(append([]byte(nil), head...), gs[100][:len(gs[100])/2]...)

	crashed := filepath.Join(root, "crashed")
	crashBundle(t, full, crashed, int64(len(head)), torn)
	// What the killed load left: the tail cut, the derived files gone,
	// manifest.json as the crash left it.
	loaded := filepath.Join(root, "loaded")
	crashBundle(t, full, loaded, int64(len(head)), head)
	for _, f := range []string{results.DecisionsFile, results.SummaryFile} {
		os.Remove(filepath.Join(loaded, f))
	}
	// The killed run made its first 100 decisions durable.
	for _, dir := range []string{crashed, loaded} {
		var rec map[string]any
		readJSON(t, filepath.Join(dir, results.ManifestFile), &rec)
		sess := rec["sessions"].([]any)[0].(map[string]any)
		sess["ran"] = 100
		delete(sess, "ended")
		b, _ := json.Marshal(rec)
		os.WriteFile(filepath.Join(dir, results.ManifestFile), b, 0o644)
	}
	var before results.Record
	readJSON(t, filepath.Join(crashed, results.ManifestFile), &before)
	for _, dir := range []string{crashed, loaded} {
		if _, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{}); err != nil {
			t.Fatal(err)
		}
		sameBundle(t, full, dir)
		var rec results.Record
		readJSON(t, filepath.Join(dir, results.ManifestFile), &rec)
		ran := 0
		for _, s := range rec.Sessions {
			ran += s.Ran
		}
		if len(rec.Sessions) != len(before.Sessions)+1 || ran != rec.Decisions || rec.Finished == nil {
			t.Errorf("%s: %d sessions (want %d), ran %d of %d decisions, finished %v", dir, len(rec.Sessions), len(before.Sessions)+1, ran, rec.Decisions, rec.Finished)
		}
	}
}

// TestSessionStoppedByError: a session an error stops (here a prompt
// that does not render for one scenario) is recorded as ended, with its
// error and the decisions it made durable; the resume with the prompt
// mended credits it the rest, and the sessions' counts add up.
func TestSessionStoppedByError(t *testing.T) {
	root := t.TempDir()
	m := hashStudy(t, "hash-test", 1, 1, nil, 1)
	broken := *m
	broken.Prompts = slices.Clone(m.Prompts)
	// S17's user message indexes past the end of a string.
	broken.Prompts[0].Text = strings.Replace(m.Prompts[0].Text, "{{define \"user\" -}}\n", "{{define \"user\" -}}\n{{if eq .Condition \"prose\"}}{{index \"ab\" 5}}{{end}}", 1)
	if broken.Prompts[0].Text == m.Prompts[0].Text {
		t.Fatal("prompt not edited")
	}
	dir := filepath.Join(root, "stopped")
	_, _, err := prepare(t, &broken).Run(context.Background(), runner.Options{Out: dir})
	if err == nil || !strings.Contains(err.Error(), "fix the cause and resume") {
		t.Fatalf("run with a prompt that does not render: %v", err)
	}
	var rec results.Record
	readJSON(t, filepath.Join(dir, results.ManifestFile), &rec)
	s := rec.Sessions[0]
	if s.Ended == nil || !s.Interrupted || !strings.Contains(s.Error, "index") || rec.Finished != nil {
		t.Fatalf("the stopped session: %+v", s)
	}
	// The prompt mended. (The broken copy kept the recorded hash of the
	// original text, so the resume takes the original.)
	if _, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{}); err != nil {
		t.Fatal(err)
	}
	readJSON(t, filepath.Join(dir, results.ManifestFile), &rec)
	ran := 0
	for _, s := range rec.Sessions {
		ran += s.Ran
	}
	if len(rec.Sessions) != 2 || ran != rec.Decisions || rec.Finished == nil {
		t.Errorf("after the resume: %d sessions, ran %d of %d, finished %v", len(rec.Sessions), ran, rec.Decisions, rec.Finished)
	}
	full := filepath.Join(root, "full")
	runTo(t, prepare(t, m), full, runner.Options{})
	sameBundle(t, full, dir)
}

// TestResumeLostMessages: when a crash loses the tail of messages.jsonl,
// the call lines past the durable point that refer to a lost message are
// a torn tail (cut off and redone); within the durable point, such a line
// is refused.
func TestResumeLostMessages(t *testing.T) {
	root := t.TempDir()
	full, m, gs := shuffledRun(t, root, 7)
	calls := bytes.Join(gs, nil)
	msgs, _ := os.ReadFile(filepath.Join(full, results.MessagesFile))
	lines := bytes.SplitAfter(msgs, []byte("\n"))
	kept := bytes.Join(lines[:len(lines)/2], nil)
	torn := append(append([]byte(nil), kept...), lines[len(lines)/2][:20]...)
	for _, tc := range []struct {
		name    string
		durable int64
		want    string
	}{
		{"past", 0, ""},
		{"within", int64(len(calls)), "which is not in messages.jsonl"},
	} {
		t.Run("torn tail "+tc.name+" the durable length", func(t *testing.T) {
			dir := filepath.Join(root, tc.name)
			crashBundle(t, full, dir, tc.durable, calls)
			var r map[string]any
			readJSON(t, filepath.Join(dir, results.ManifestFile), &r)
			r["messages_durable_bytes"] = 0
			rb, _ := json.Marshal(r)
			os.WriteFile(filepath.Join(dir, results.ManifestFile), rb, 0o644)
			os.WriteFile(filepath.Join(dir, results.MessagesFile), torn, 0o644)
			var log bytes.Buffer
			_, err := prepare(t, m).Resume(context.Background(), dir, runner.Options{Log: &log})
			if tc.want != "" {
				if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
					t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v\n%s", tc.name, err, log.String())
			}
			if !bytes.Contains(log.Bytes(), []byte("torn tail of")) {
				t.Errorf("%s: log %q reports no torn tail", tc.name, log.String())
			}
			sameCalls(t, full, dir)
			sameBundle(t, full, dir)
		})
	}
}
