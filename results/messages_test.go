package results_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestCompactRoundTrip writes decisions as a bundle does (messages by
// ref, the scenario's fields in defaults.json): ReadCalls returns the
// calls written, requests byte for byte, and the lines are a fraction of
// the calls' JSON with their messages inline.
func TestCompactRoundTrip(t *testing.T) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ml, err := results.OpenMessageLog(filepath.Join(dir, results.MessagesFile), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := results.OpenCallLog(filepath.Join(dir, results.CallsFile), 0)
	if err != nil {
		t.Fatal(err)
	}
	cl.SetMessages(ml)
	d := results.NewDefaults(1, m.Corpus.Scenarios, m.Conditions)
	if _, err := results.KeepDefaults(filepath.Join(dir, results.DefaultsFile), d, true); err != nil {
		t.Fatal(err)
	}
	cl.SetDefaults(d)
	var want []results.Call
	var inline bytes.Buffer
	enc := json.NewEncoder(&inline)
	enc.SetEscapeHTML(false)
	for si := range 3 {
		s := &m.Corpus.Scenarios[si]
		for rep := 1; rep <= 2; rep++ {
			for _, c := range []study.Condition{study.Normalized, study.Prose} {
				key := simulator.Key{Model: "m", Prompt: "default", Condition: c, Scenario: s.ID, Replicate: rep}
				d := simulator.Run(context.Background(), answers{retryNow, retryNow, stop}, p, s, key, simulator.Config{StudySeed: 1, ReplayCap: 3})
				if d.Err != nil {
					t.Fatal(d.Err)
				}
				if _, _, err := cl.Append(&d, s, ""); err != nil {
					t.Fatal(err)
				}
				for _, c := range results.CallsOf(&d, s) {
					want = append(want, c)
					enc.Encode(&c)
				}
			}
		}
	}
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := results.ReadCalls(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	same(t, "ReadCalls", got, want)

	compact, _ := os.ReadFile(filepath.Join(dir, results.CallsFile))
	table, _ := os.ReadFile(filepath.Join(dir, results.MessagesFile))
	if len(compact)*4 > inline.Len() || bytes.Contains(compact, []byte(`"messages":`)) || !bytes.Contains(compact, []byte(`"messages_ref":["`)) {
		t.Errorf("compact lines: %d bytes against %d inline", len(compact), inline.Len())
	}
	// Each distinct message once.
	t.Logf("calls.jsonl %d bytes + messages.jsonl %d bytes, against %d bytes inline", len(compact), len(table), inline.Len())
	distinct := map[any]bool{}
	for _, c := range want {
		for _, m := range c.Request.Messages {
			distinct[m] = true
		}
		distinct[[2]conditions.Message(c.Request.Messages[:2])] = true // the prompt's run
	}
	if n := bytes.Count(table, []byte("\n")); n != len(distinct) {
		t.Errorf("messages.jsonl has %d lines for %d distinct messages", n, len(distinct))
	}

	// A reader of bytes needs the table; without it the line says so.
	cr := results.NewCallReader(bytes.NewReader(compact), "calls.jsonl")
	cr.SetDefaults(d)
	if !cr.Scan() || cr.LineErr() == nil || !strings.Contains(cr.LineErr().Error(), "calls.jsonl:1: the request refers to messages.jsonl") {
		t.Errorf("no table: %v", cr.LineErr())
	}
	tab, err := results.LoadMessages(filepath.Join(dir, results.MessagesFile), int64(len(table)))
	if err != nil || tab.Torn != 0 || tab.Size != int64(len(table)) {
		t.Fatalf("LoadMessages: %v %+v", err, tab)
	}
	cr = results.NewCallReader(bytes.NewReader(compact), "calls.jsonl")
	cr.SetMessages(tab)
	cr.SetDefaults(d)
	var viaTable []results.Call
	for cr.Scan() {
		if cr.LineErr() != nil {
			t.Fatal(cr.LineErr())
		}
		viaTable = append(viaTable, *cr.Call())
	}
	same(t, "SetMessages", viaTable, want)
}

// same compares calls as JSON, byte for byte.
func same(t *testing.T, what string, got, want []results.Call) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d calls, want %d", what, len(got), len(want))
	}
	for i := range got {
		got[i].LatencyMS, want[i].LatencyMS = 0, 0
		a, _ := json.Marshal(&got[i])
		b, _ := json.Marshal(&want[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: call %d:\n%s\nwant\n%s", what, i, a, b)
		}
		if len(got[i].Request.Messages) == 0 {
			t.Fatalf("%s: call %d has no messages", what, i)
		}
	}
}

// TestLoadMessages: a torn or damaged last line past the durable point is
// a torn tail; the same within it, or a message that does not match its
// ref in the middle, is an error.
func TestLoadMessages(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, results.MessagesFile)
	ml, err := results.OpenMessageLog(file, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := ml.Ref(&conditions.Message{Role: "user", Content: "a <b> & c"})
	r2, _ := ml.Ref(&conditions.Message{Role: "assistant", Content: "d"})
	if again, _ := ml.Ref(&conditions.Message{Role: "user", Content: "a <b> & c"}); again != r1 || len(r1) != 16 || r1 == r2 {
		t.Fatalf("refs %q %q %q", r1, r2, again)
	}
	ml.Close()
	good, _ := os.ReadFile(file)
	torn := append(append([]byte(nil), good...), `{"ref":"00`...)
	os.WriteFile(file, torn, 0o644)
	tab, err := results.LoadMessages(file, -1)
	if err != nil || tab.Len() != 2 || tab.Size != int64(len(good)) || tab.Torn != 10 || !tab.Has(r1) || !tab.Has(r2) {
		t.Fatalf("torn tail: %v %+v", err, tab)
	}
	if _, err := results.LoadMessages(file, int64(len(torn))); err == nil || !strings.Contains(err.Error(), ":3:") {
		t.Errorf("damage within the durable bytes: %v", err)
	}
	changed := bytes.Replace(good, []byte(`"d"`), []byte(`"e"`), 1)
	os.WriteFile(file, append(changed, good...), 0o644)
	if _, err := results.LoadMessages(file, -1); err == nil || !strings.Contains(err.Error(), "does not match the message's sha256") {
		t.Errorf("a changed message: %v", err)
	}
	// Reopening after the kept bytes appends only new messages.
	os.WriteFile(file, torn, 0o644)
	ml, err = results.OpenMessageLog(file, tab.Size, tab)
	if err != nil {
		t.Fatal(err)
	}
	ml.Ref(&conditions.Message{Role: "assistant", Content: "d"})
	ml.Ref(&conditions.Message{Role: "user", Content: "f"})
	ml.Close()
	b, _ := os.ReadFile(file)
	if !bytes.HasPrefix(b, good) || bytes.Count(b, []byte("\n")) != 3 {
		t.Errorf("reopened table:\n%s", b)
	}
}
