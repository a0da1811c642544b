package coder_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpstress/stress/coding"
	"github.com/mcpstress/stress/coding/coder"
	"github.com/mcpstress/stress/coding/rules"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/study"
)

// scripted is a test backend that codes a record by the rules, except:
// S03 gets an answer with a set bit and no evidence (invalid), S05 a
// transport failure for good (with its events), and the call after the
// limit-th interrupts the coding and is cut short (its ctx cancelled), to
// test resume.
type scripted struct {
	corpus *study.Corpus
	calls  *atomic.Int32
	limit  int32
	cancel context.CancelFunc
}

var recordID = regexp.MustCompile(`Record (S\d+)\.`)

func (s scripted) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	n := s.calls.Add(1)
	if s.limit > 0 && n > s.limit {
		s.cancel()
		<-ctx.Done()
		return models.Reply{}, &models.CallError{Err: ctx.Err()}
	}
	id := recordID.FindStringSubmatch(req.Messages[1].Content)[1]
	switch id {
	case "S03":
		return models.Reply{Text: `{"control":{"D":{"bit":1}},"content":{}}`}, nil
	case "S05":
		return models.Reply{}, &models.CallError{Err: errors.New("HTTP 503 after 3 attempts"), Events: []models.TransportEvent{{Attempt: 1, Kind: "http_status", Status: 503, Error: "503"}}}
	}
	for i := range s.corpus.Scenarios {
		if sc := &s.corpus.Scenarios[i]; sc.ID == id {
			p := rules.Code(sc)
			b, _ := json.Marshal(p)
			return models.Reply{Text: "```json\n" + string(b) + "\n```"}, nil
		}
	}
	return models.Reply{}, errors.New("no such record")
}

var backend atomic.Pointer[scripted]

func init() {
	models.Register("coder_test", models.Backend{New: func(models.Spec) (models.Model, error) { return current{}, nil }})
}

// current answers with the scripted backend of the moment.
type current struct{}

func (current) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	return backend.Load().Generate(ctx, req)
}

func manifest(t *testing.T) *manifests.Resolved {
	t.Helper()
	dir := t.TempDir()
	src, _ := filepath.Abs("../../manifests")
	yaml := "name: t\ncorpus: " + src + "/corpus/paper\nprompts:\n  - name: coding\n    path: " + src + "/prompts/coding.tmpl\n" +
		"conditions: [normalized]\nreplicates: 1\nseed: 7\ntemperature: 0\nmodels:\n  - name: rules\n    backend: rules\n    model: capture-rules\n" +
		"  - name: fake\n    backend: coder_test\n    model: m\n"
	file := filepath.Join(dir, "m.yaml")
	os.WriteFile(file, []byte(yaml), 0o644)
	m, err := manifests.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCodeAndResume(t *testing.T) {
	m := manifest(t)
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	backend.Store(&scripted{corpus: m.Corpus, calls: &calls, limit: 10, cancel: cancel})
	plan, err := coder.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	if _, err := plan.Run(ctx, dir, coder.Options{}); err == nil || !strings.Contains(err.Error(), "resume with: stress code -resume") {
		t.Fatalf("interrupted run: %v", err)
	}
	// A torn last line is cut off on resume.
	f, _ := os.OpenFile(filepath.Join(dir, results.CallsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"model":"fake","prom`)
	f.Close()
	calls.Store(0)
	backend.Store(&scripted{corpus: m.Corpus, calls: &calls})
	sum, err := plan.Resume(context.Background(), dir, coder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 10 model calls before the cut; the resume makes the 11 model
	// codings left (the cut call was not recorded), and the rules codings
	// the cut left.
	if got := calls.Load(); got != 11 {
		t.Errorf("resume made %d calls, want 11", got)
	}
	if len(sum.Coders) != 2 {
		t.Fatalf("summary %+v", sum)
	}
	r, fk := sum.Coders[0], sum.Coders[1]
	if r.Coded != 21 || len(r.Invalid) != 0 || r.Errors != 0 {
		t.Errorf("rules: %+v", r)
	}
	if fk.Coded != 19 || len(fk.Invalid) != 1 || !strings.HasPrefix(fk.Invalid[0], "S03: ") || !strings.Contains(fk.Invalid[0], "control.D.evidence: a set bit needs an evidence pointer") || fk.Errors != 1 {
		t.Errorf("model: %+v", fk)
	}
	// The coded corpora load, say who coded them, and agree with the hand
	// coding on every bit (the rules reproduce it).
	hand, _ := coding.Load("../../manifests/corpus/paper")
	for _, c := range sum.Coders {
		side, err := coding.Load(c.Corpus)
		if err != nil {
			t.Fatal(err)
		}
		res, err := coding.Compare(hand, side, coding.Options{Common: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Disagreements) != 0 || len(res.NotCompared) != 4 {
			t.Errorf("%s vs hand: %d disagreements, not compared %v", c.Model, len(res.Disagreements), res.NotCompared)
		}
		if c.Model == "fake" && (strings.Join(res.OnlyA, ",") != "S03,S05" || side.Coders[0] != "model:fake") {
			t.Errorf("fake: only in hand %v, coders %v", res.OnlyA, side.Coders)
		}
		if un := side.Corpus.Unconfirmed(); len(un) != c.Coded {
			t.Errorf("%s: %d unconfirmed records, want all %d (a coder's bits are proposals)", c.Model, len(un), c.Coded)
		}
	}
	// Every call is in calls.jsonl with its raw request and response; the
	// transport failure keeps its events.
	lines, err := results.ReadCalls(filepath.Join(dir, results.CallsFile))
	if len(lines) != 42 || err != nil {
		t.Errorf("%d lines, want 42 (%v)", len(lines), err)
	}
	var s05 results.Call
	for _, x := range lines {
		if x.Key.Model == "fake" && x.Key.Scenario == "S05" {
			s05 = x
		}
		if x.Key.Model == "fake" && x.Key.Scenario == "S01" && (len(x.Request.Messages) < 2 || !strings.Contains(x.Request.Messages[1].Content, "probe_missing_tool_7c2e") || x.Seed == 0) {
			t.Errorf("S01 request not recorded: %+v", x.Request)
		}
	}
	if s05.Error == "" || len(s05.Events) != 1 {
		t.Errorf("S05: %+v", s05)
	}
	rec, err := results.ReadRecord(dir)
	if err != nil || rec.Finished == nil || rec.Completed != 42 || len(rec.Sessions) != 2 || !rec.Sessions[0].Interrupted {
		t.Errorf("record %+v, %v", rec, err)
	}
	var counts results.Summary
	if b, err := os.ReadFile(filepath.Join(dir, results.SummaryFile)); err != nil || json.Unmarshal(b, &counts) != nil || counts.Errors != 1 {
		t.Errorf("summary.json: %d errors, want 1 (%v)", counts.Errors, err)
	}
	// -retry-errors codes S05 again.
	calls.Store(0)
	if _, err := plan.Resume(context.Background(), dir, coder.Options{RetryErrors: true}); err != nil || calls.Load() != 1 {
		t.Errorf("retry errors: %v, %d calls", err, calls.Load())
	}
}

func TestPrepareRefuses(t *testing.T) {
	m := manifest(t)
	m.Conditions = []study.Condition{study.Normalized, study.Prose}
	m.Replicates = 2
	three := 3
	m.ReplayCap, m.Replay = &three, manifests.ReplayLive
	_, err := coder.Prepare(m, false)
	for _, want := range []string{"field conditions", "field replicates", "field replay_cap: a coding is one call per record: want 0 or none, got 3", `field replay: a coding manifest codes the stored observation: want "stored"`} {
		t.Run(want, func(t *testing.T) {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Prepare: %v, want %q", err, want)
			}
		})
	}
}

func TestParseAnswer(t *testing.T) {
	obs := json.RawMessage(`{"exception":{"type":"McpError","error":{"code":-32602,"message":"m"}}}`)
	good := `{"control":{"D":{"bit":1,"evidence":"/exception/error/code","rationale":"r"},"P":{"bit":0,"evidence":"","rationale":""},"C":{"bit":0},"T":{"bit":0},"E":{"bit":0},"R":{"bit":0}},` +
		`"content":{"D":{"bit":1,"evidence":"/exception/error/message"},"P":{"bit":0},"C":{"bit":0},"T":{"bit":0},"E":{"bit":0},"R":{"bit":0}}}`
	p, err := coder.ParseAnswer(good, obs)
	if err != nil || p.Control["D"].Bit != 1 || !p.Control["D"].Proposed || p.Content["P"].Rationale != "(no rationale given)" {
		t.Fatalf("%+v %v", p, err)
	}
	for _, c := range []struct{ text, want string }{
		{"not json", "not a JSON object"},
		{strings.Replace(good, `"/exception/error/code"`, `"/exception/nope"`, 1), `control.D.evidence: JSON pointer "/exception/nope": no member "nope"`},
		{strings.Replace(good, `"bit":1,"evidence":"/exception/error/code"`, `"bit":1`, 1), "control.D.evidence: a set bit needs an evidence pointer"},
		{strings.Replace(good, `"C":{"bit":0},"T"`, `"C":{"bit":2},"T"`, 1), "control.C.bit: want 0 or 1"},
		{strings.Replace(good, `"R":{"bit":0}}}`, `"R":{"bit":0},"X":{"bit":0}}}`, 1), `content: unknown coordinate "X"`},
		{good + " trailing", "text after the JSON object"},
	} {
		t.Run(c.want, func(t *testing.T) {
			if _, err := coder.ParseAnswer(c.text, obs); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ParseAnswer(%.40q…) = %v, want %q", c.text, err, c.want)
			}
		})
	}
}
