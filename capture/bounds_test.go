package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/study"
)

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
		if len(text) > DefaultMaxTextBytes+100 || !strings.HasPrefix(text, rawText) || !strings.Contains(text, " bytes cut by stress capture]") {
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
