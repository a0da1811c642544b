package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstress/stress/study"
)

// stormSeconds is how long the storm child keeps capture busy under the
// notification storm, and stormRSS the most resident memory it may take
// (100 MiB).
const (
	stormSeconds = 5
	stormRSS     = 100 << 20
)

// stormChild captures from the raw storm server with the default caps for
// stormSeconds (three intervals between four requests), writes the output
// to $CAPTURE_STORM_CHILD and prints how long the capture ran.
func stormChild() {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	o := rawOptions()
	o.Interval = stormSeconds * time.Second / 3
	start := time.Now()
	servers, err := Run(context.Background(), []Target{{Label: "raw-storm", Command: []string{exe, "-test.run=^$"}, Env: []string{"CAPTURE_RAW=storm"}}}, o)
	if err != nil {
		panic(err)
	}
	if servers[0].Err != nil {
		fmt.Fprintln(os.Stderr, "storm child:", servers[0].Err)
		os.Exit(1)
	}
	if _, err := Write(os.Getenv("CAPTURE_STORM_CHILD"), servers, o); err != nil {
		fmt.Fprintln(os.Stderr, "storm child:", err)
		os.Exit(1)
	}
	fmt.Printf(`{"seconds": %.2f, "pseudonym": %q}`+"\n", time.Since(start).Seconds(), servers[0].Pseudonym)
}

// TestStormStaysSmall runs a capture, in a child process, from a server
// that floods notifications for the whole session (about stormSeconds),
// and checks that the child's peak resident memory stays under stormRSS,
// and that the frames file keeps at most DefaultMaxNotifications of them per
// request of the client and counts the rest under markers.
func TestStormStaysSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("the storm lasts 5 s")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "CAPTURE_STORM_CHILD="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("storm child: %v\n%s", err, stderr.Bytes())
	}
	var res struct {
		Seconds   float64 `json:"seconds"`
		Pseudonym string  `json:"pseudonym"`
	}
	if err := json.Unmarshal(stdout, &res); err != nil {
		t.Fatalf("storm child printed %q: %v", stdout, err)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	t.Logf("storm of %.1f s: peak RSS of the capturing process %.1f MiB", res.Seconds, float64(rss)/(1<<20))
	if res.Seconds < stormSeconds {
		t.Errorf("the capture took %.1f s, less than the storm's %d s", res.Seconds, stormSeconds)
	}
	if rss > stormRSS {
		t.Errorf("peak RSS %.1f MiB, want under %d MiB", float64(rss)/(1<<20), stormRSS>>20)
	}
	frames := rawFrames(t, filepath.Join(dir, framesName(res.Pseudonym)))
	var inWindow, most, dropped, markers int
	for _, f := range frames {
		raw, _ := f["raw"].(string)
		switch {
		case f["dir"] == "send" && strings.Contains(raw, `"id":`) && strings.Contains(raw, `"method":`):
			inWindow = 0
		case f["dir"] == "recv" && strings.Contains(raw, `"notifications/message"`):
			inWindow++
			most = max(most, inWindow)
		case f["dropped"] != nil:
			d := f["dropped"].(map[string]any)
			if d["cap"] != "max-notifications" || d["frames"].(float64) < 1 || d["bytes"].(float64) < d["frames"].(float64) {
				t.Errorf("marker %v", f)
			}
			markers++
			dropped += int(d["frames"].(float64))
		}
	}
	t.Logf("%d frames in the file; at most %d notifications recorded per request; %d dropped under %d markers", len(frames), most, dropped, markers)
	if most > DefaultMaxNotifications || markers == 0 || dropped == 0 {
		t.Errorf("at most %d notifications per request, %d dropped under %d markers; want at most %d, and markers", most, dropped, markers, DefaultMaxNotifications)
	}
	log, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil || !strings.Contains(string(log), fmt.Sprintf("dropped %d messages the server sent on its own", dropped)) {
		t.Errorf("the private log does not report the %d dropped notifications: %v\n%s", dropped, err, log)
	}
}

// TestOversizedFrameRecordedTruncated checks that a response line over
// the SDK's 16 MiB limit, which the SDK refuses, is still recorded: its
// first DefaultMaxFrameBytes bytes, marked truncated with the exact number
// of bytes cut.
func TestOversizedFrameRecordedTruncated(t *testing.T) {
	o := rawOptions()
	s := runRaw(t, "bigline", o)
	dir := filepath.Join(t.TempDir(), "out")
	_, _ = Write(dir, []*Server{s}, o) // no failures: nothing in the corpus
	var found bool
	for _, f := range rawFrames(t, filepath.Join(dir, framesName(s.Pseudonym))) {
		if f["truncated"] != true {
			continue
		}
		found = true
		raw, _ := f["raw"].(string)
		cut, _ := f["cut"].(float64)
		if len(raw) != 16<<20 || int(cut) != rawBigLine-16<<20 || !strings.HasPrefix(raw, `{"id":`) {
			t.Errorf("truncated frame: %d bytes recorded, %v cut, want %d and %d", len(raw), f["cut"], 16<<20, rawBigLine-16<<20)
		}
	}
	if !found {
		t.Error("the oversized frame was not recorded")
	}
}

// TestCrashedServerSaysHow checks that the error of a stdio server that
// dies during a call says how it ended, with the end of its stderr.
func TestCrashedServerSaysHow(t *testing.T) {
	for mode, want := range map[string][]string{
		"crash":  {"server raw-crash exited with status 3", `"panic: boom"`, `"goroutine 1 [running]:"`},
		"signal": {"server raw-signal was killed by signal 9 (killed)"},
	} {
		t.Run(mode, func(t *testing.T) {
			s := runRaw(t, mode, rawOptions())
			if s.Err == nil {
				t.Fatalf("no error; outcomes %+v", s.Outcomes)
			}
			for _, w := range want {
				if !strings.Contains(s.Err.Error(), w) {
					t.Errorf("error %q does not say %s", s.Err, w)
				}
			}
			// The call it died in says it too.
			if len(s.Outcomes) == 0 || !strings.Contains(s.Outcomes[0].Note, want[0]) {
				t.Errorf("outcomes %+v", s.Outcomes)
			}
		})
	}
}

// TestNonJSONLineNamed checks that a server whose first line on stdout is
// not JSON is told so, with the line quoted.
func TestNonJSONLineNamed(t *testing.T) {
	s := runRaw(t, "banner", rawOptions())
	want := `connect: server wrote a non-JSON line: "Starting server v1..."`
	if s.Err == nil || !strings.Contains(s.Err.Error(), want) {
		t.Errorf("error %v, want it to contain %s", s.Err, want)
	}
}

// TestUnknownIDNamed checks that a call the server answers with an id no
// request has fails naming that id, not only the timeout.
func TestUnknownIDNamed(t *testing.T) {
	o := rawOptions()
	o.Timeout = 300 * time.Millisecond
	s := runRaw(t, "wrongid", o)
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	want := `server answered id "99", which no request has`
	for _, out := range s.Outcomes {
		if out.Status != statusClientError || !strings.Contains(out.Note, want) || !strings.Contains(out.Note, "context deadline exceeded") {
			t.Errorf("%s: %s %q, want a client error saying %s", out.Kind, out.Status, out.Note, want)
		}
	}
}

// TestNoWaitAfterTimeout checks that a timed-out call costs its timeout
// and no more: capture does not wait for a response frame after it.
// Note: the wait for a frame is made 10 minutes long here, so that the
// bound on the run's time can leave a loaded machine a minute for what it
// does besides.
func TestNoWaitAfterTimeout(t *testing.T) {
	defer func(d time.Duration) { frameWait = d }(frameWait)
	frameWait = 10 * time.Minute
	o := rawOptions()
	// The timeout bounds the connection too, which a loaded machine can
	// take a second to make.
	o.Timeout = 5 * time.Second
	start := time.Now()
	s := runRaw(t, "silent", o)
	elapsed := time.Since(start)
	if s.Err != nil || len(s.Outcomes) != 3 {
		t.Fatalf("err %v, outcomes %+v", s.Err, s.Outcomes)
	}
	for _, out := range s.Outcomes {
		if out.Status != statusClientError || out.Request == nil || out.Response != nil {
			t.Errorf("%s: %s %q", out.Kind, out.Status, out.Note)
		}
	}
	// Three timeouts of 5 s; before, each added a wait for a response
	// frame that never came (here 10 minutes).
	if limit := 3*o.Timeout + time.Minute; elapsed > limit {
		t.Errorf("three timed-out calls took %v, over %v", elapsed, limit)
	}
}

// TestLargeTextStoredOnce captures a 5 MB failure text and checks that the
// record keeps its first DefaultMaxTextBytes once (the control envelope
// does not repeat a long text), marks the cut and lists it in
// capture.dropped, while the frames file keeps all of it.
func TestLargeTextStoredOnce(t *testing.T) {
	o := rawOptions()
	s := runRaw(t, "bigtext", o)
	dir := filepath.Join(t.TempDir(), "out")
	w, err := Write(dir, []*Server{s}, o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := study.LoadCorpus(os.DirFS(dir), CorpusDir)
	if err != nil {
		t.Fatal(err)
	}
	record, err := os.ReadFile(filepath.Join(dir, w.Files[0]))
	if err != nil {
		t.Fatal(err)
	}
	first := fmt.Sprintf(bigTextLine, 0)[:20] // "entry 0000000: the i"
	var big int
	for _, sc := range c.Scenarios {
		if sc.Probe != study.WrongType {
			continue
		}
		big++
		text := sc.ObservationText()
		if len(text) > DefaultMaxTextBytes+100 || !strings.HasPrefix(text, rawText) || !strings.Contains(text, " bytes cut by stress]") {
			t.Errorf("%s: observation text of %d bytes: %.80q … %q", sc.ID, len(text), text, text[max(len(text)-80, 0):])
		}
		env, _ := json.Marshal(sc.ControlEnvelope)
		if strings.Contains(string(env), first) {
			t.Errorf("%s: the control envelope repeats the long text", sc.ID)
		}
		if len(sc.Capture.Dropped) == 0 || !strings.HasPrefix(sc.Capture.Dropped[0], "/result/content/0/text (") {
			t.Errorf("%s: dropped %q", sc.ID, sc.Capture.Dropped)
		}
	}
	if n := strings.Count(string(record), first); big != 1 || n != 1 {
		t.Errorf("%d wrong-type records; the corpus holds the text's first line %d times, want once", big, n)
	}
	var whole bool
	for _, f := range rawFrames(t, filepath.Join(dir, framesName(s.Pseudonym))) {
		raw, _ := f["raw"].(string)
		whole = whole || len(raw) > rawBigText && strings.Contains(raw, strings.TrimSuffix(rawText, "\n"))
	}
	if !whole {
		t.Error("the frames file does not hold the whole text")
	}
}

// BenchmarkLargeText captures a 5 MB failure text from a stdio server and
// writes the output: connect, list, three calls (the wrong-type one is
// answered with the text), classification, scrubbing, and the frames and
// corpus files.
func BenchmarkLargeText(b *testing.B) {
	o := rawOptions()
	target := rawTarget(b, "bigtext")
	for i := 0; b.Loop(); i++ {
		servers, err := Run(context.Background(), []Target{target}, o)
		if err != nil || servers[0].Err != nil {
			b.Fatal(err, servers[0].Err)
		}
		if _, err := Write(filepath.Join(b.TempDir(), fmt.Sprint(i)), servers, o); err != nil {
			b.Fatal(err)
		}
	}
}
