package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
)

// toFormat1 rewrites the finished bundle dir as the code before format 2
// wrote it: every call line with its request's messages inline, no
// messages.jsonl, no format in manifest.json.
func toFormat1(t *testing.T, dir string) []byte {
	t.Helper()
	calls, err := results.ReadCalls(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for i := range calls {
		if len(calls[i].Request.Messages) == 0 {
			t.Fatalf("call %d has no messages", i)
		}
		enc.Encode(&calls[i])
	}
	if bytes.Contains(b.Bytes(), []byte("messages_ref")) {
		t.Fatal("a format-1 line refers to messages")
	}
	os.WriteFile(filepath.Join(dir, results.CallsFile), b.Bytes(), 0o644)
	os.Remove(filepath.Join(dir, results.MessagesFile))
	os.Remove(filepath.Join(dir, results.DefaultsFile))
	var rec map[string]any
	readJSON(t, filepath.Join(dir, results.ManifestFile), &rec)
	delete(rec, "format")
	delete(rec, "messages_durable_bytes")
	rec["calls_durable_bytes"] = b.Len()
	mb, _ := json.Marshal(rec)
	os.WriteFile(filepath.Join(dir, results.ManifestFile), mb, 0o644)
	return b.Bytes()
}

// sameCalls compares two bundles' calls with their requests expanded
// (whatever the format), but for latency and endpoint.
func sameCalls(t *testing.T, want, got string) {
	t.Helper()
	a, err := results.ReadCalls(filepath.Join(want, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := results.ReadCalls(filepath.Join(got, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("%d calls against %d", len(a), len(b))
	}
	for i := range a {
		a[i].LatencyMS, b[i].LatencyMS, a[i].Endpoint, b[i].Endpoint = 0, 0, "", ""
		ja, _ := json.Marshal(&a[i])
		jb, _ := json.Marshal(&b[i])
		if !bytes.Equal(ja, jb) {
			t.Fatalf("call %d differs:\n%s\n%s", i, ja, jb)
		}
	}
}

// TestFormat1Bundle: a bundle written before format 2 (messages inline)
// is analyzed as before, resumed (the new lines refer to a new
// messages.jsonl; the old ones stay inline) and merged, and every request
// reads back the same.
func TestFormat1Bundle(t *testing.T) {
	root := t.TempDir()
	m := hashStudy(t, "hash-test", 1, 2, nil, 0)
	full := filepath.Join(root, "full")
	runTo(t, prepare(t, m), full, runner.Options{})
	var rec results.Record
	readJSON(t, filepath.Join(full, results.ManifestFile), &rec)
	if rec.Format != results.Format || rec.MessagesDurable == nil {
		t.Fatalf("a new bundle has format %d, %v message bytes durable", rec.Format, rec.MessagesDurable)
	}

	// Analysis.
	v1 := filepath.Join(root, "v1")
	os.CopyFS(v1, os.DirFS(full))
	old := toFormat1(t, v1)
	sameCalls(t, full, v1)
	a, err := analysis.LoadBundle(context.Background(), full, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b, err := analysis.LoadBundle(context.Background(), v1, io.Discard)
	if err != nil || b.Problems != 0 {
		t.Fatalf("analyze a format-1 bundle: %v, %d problems", err, b.Problems)
	}
	if fmt.Sprint(a.Acc.Cells()) != fmt.Sprint(b.Acc.Cells()) {
		t.Errorf("cells differ:\n%v\n%v", a.Acc.Cells(), b.Acc.Cells())
	}

	// Resume after a cut in the middle of a line.
	cut := filepath.Join(root, "cut")
	os.MkdirAll(cut, 0o755)
	gs := groups(t, "", old)
	whole := bytes.Join(gs[:len(gs)/2], nil)
	os.WriteFile(filepath.Join(cut, results.CallsFile), append(whole, gs[len(gs)/2][:40]...), 0o644)
	var r map[string]any
	readJSON(t, filepath.Join(v1, results.ManifestFile), &r)
	r["calls_durable_bytes"] = len(whole)
	delete(r, "finished")
	rb, _ := json.Marshal(r)
	os.WriteFile(filepath.Join(cut, results.ManifestFile), rb, 0o644)
	if _, err := prepare(t, m).Resume(context.Background(), cut, runner.Options{}); err != nil {
		t.Fatal(err)
	}
	sameCalls(t, full, cut)
	got, _ := os.ReadFile(filepath.Join(cut, results.CallsFile))
	if !bytes.HasPrefix(got, whole) || !bytes.Contains(got[len(whole):], []byte(`"messages_ref"`)) {
		t.Error("the resumed bundle does not keep the old lines and refer to messages in the new ones")
	}
	readJSON(t, filepath.Join(cut, results.ManifestFile), &rec)
	if st, err := os.Stat(filepath.Join(cut, results.MessagesFile)); err != nil || rec.Format != results.Format || rec.MessagesDurable == nil || *rec.MessagesDurable != st.Size() {
		t.Errorf("resumed bundle: format %d, %v message bytes durable, %v", rec.Format, rec.MessagesDurable, err)
	}
	checkBundle(t, cut, readSummary(t, cut))

	// Merge of a format-1 shard with a format-2 one.
	var shards []string
	for i := 1; i <= 2; i++ {
		dir := filepath.Join(root, fmt.Sprint("shard", i))
		runTo(t, prepare(t, m), dir, runner.Options{Shard: results.Shard{I: i, N: 2}})
		shards = append(shards, dir)
	}
	toFormat1(t, shards[0])
	merged := filepath.Join(root, "merged")
	if _, _, err := runner.Merge(context.Background(), merged, shards, runner.MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	sameCalls(t, full, merged)
	checkBundle(t, merged, readSummary(t, merged))
}

func readSummary(t *testing.T, dir string) *results.Summary {
	t.Helper()
	var s results.Summary
	readJSON(t, filepath.Join(dir, results.SummaryFile), &s)
	return &s
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
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, log.String())
		}
		if !bytes.Contains(log.Bytes(), []byte("torn tail of")) {
			t.Errorf("%s: log %q reports no torn tail", tc.name, log.String())
		}
		sameCalls(t, full, dir)
		sameBundle(t, full, dir)
	}
}
