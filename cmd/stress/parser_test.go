package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// sloppyModel answers each call in one of six forms, chosen by a hash of
// its seed: the preferred policy as the strict parser wants it, with a
// trailing sentence, in a one-line fence, in upper case, a sentence with
// no JSON, or a retry_now object inside prose.
type sloppyModel struct{ bySeed map[int64]*study.Scenario }

func (m *sloppyModel) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	s := m.bySeed[req.Seed]
	if s == nil {
		return models.Reply{}, errors.New("sloppy: unknown seed")
	}
	obj := `{"operation_status": "failed", "recovery_policy": "` + string(s.Preferred) + `"}`
	var text string
	switch int(hash01("sloppy", req.Seed) * 6) {
	case 0:
		text = obj
	case 1:
		text = obj + "\nThis is the safest choice."
	case 2:
		text = "```json " + obj + " ```"
	case 3:
		text = `{"operation_status": "FAILED", "recovery_policy": "` + strings.ToUpper(string(s.Preferred)) + `"}`
	case 4:
		text = "I think the tool is broken."
	default:
		text = `My answer is {"operation_status": "failed", "recovery_policy": "retry_now"}.`
	}
	return models.Reply{Text: text}, nil
}

func init() {
	models.Register("sloppy-test", models.Backend{New: func(spec models.Spec) (models.Model, error) {
		m, err := manifests.LoadBuiltin(manifests.DefaultName)
		if err != nil {
			return nil, err
		}
		sm := &sloppyModel{bySeed: map[int64]*study.Scenario{}}
		for i := range m.Corpus.Scenarios {
			s := &m.Corpus.Scenarios[i]
			for rep := 1; rep <= 10; rep++ {
				sm.bySeed[simulator.Seed(m.Seed, s.ID, rep, 0)] = s
			}
		}
		return sm, nil
	}})
}

// sloppyBundle runs the sloppy model under two conditions, 4 replicates.
func sloppyBundle(t *testing.T) string {
	t.Helper()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	m.Name = "sloppy"
	m.Models = []manifests.Model{{Name: "sloppy", Backend: "sloppy-test", Model: "sloppy"}}
	m.Conditions = []study.Condition{study.Normalized, study.Prose}
	m.Replicates = 4
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	fixed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, _, err := plan.Run(context.Background(), runner.Options{Out: dir, RunID: "20260101T000000Z-sloppy", Now: func() time.Time { return fixed }}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAnalyzeParserLenient: -parser lenient prints the primary output
// unchanged, then the sensitivity table (golden); -json adds the same
// numbers as a last member and changes nothing else; every sloppy form
// but the sentence without JSON is fixed, retry_now inside prose is cut.
func TestAnalyzeParserLenient(t *testing.T) {
	dir := sloppyBundle(t)
	strict, _, err := runCmd(t, "analyze", dir)
	if err != nil {
		t.Fatal(err)
	}
	out, log, err := runCmd(t, "analyze", "-parser", "lenient", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if !strings.HasPrefix(out, strict) {
		t.Fatalf("the primary output changed:\n%s\nwant it to begin with:\n%s", out, strict)
	}
	golden(t, "analyze-lenient.golden", out[len(strict):])

	js, _, err := runCmd(t, "analyze", "-json", dir)
	if err != nil {
		t.Fatal(err)
	}
	jl, _, err := runCmd(t, "analyze", "-json", "-parser", "lenient", dir)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(jl), &b); err != nil {
		t.Fatalf("%v\n%s", err, jl)
	}
	var ps struct {
		Parser string
		Cells  []struct {
			N, InvalidStrict, InvalidLenient, InvalidFixed, StrictStrict, StrictLenient, StrictGained, StrictLost, ReplayCut int
		}
	}
	raw := b["parser_sensitivity"]
	delete(b, "parser_sensitivity")
	if len(a) != len(b) {
		t.Errorf("members %d vs %d", len(a), len(b))
	}
	for k := range a {
		if string(a[k]) != string(b[k]) {
			t.Errorf("member %s changed", k)
		}
	}
	if err := json.Unmarshal(fixKeys(raw), &ps); err != nil || ps.Parser != "lenient" || len(ps.Cells) != 2 {
		t.Fatalf("parser_sensitivity %s: %v", raw, err)
	}
	for _, c := range ps.Cells {
		if c.N != 84 || c.InvalidLenient >= c.InvalidStrict || c.InvalidFixed != c.InvalidStrict-c.InvalidLenient ||
			c.StrictLost != 0 || c.StrictLenient != c.StrictStrict+c.StrictGained || c.ReplayCut == 0 || c.StrictGained == 0 {
			t.Errorf("cell %+v", c)
		}
	}
	if _, _, err := runCmd(t, "analyze", "-parser", "loose", dir); err == nil || !strings.Contains(err.Error(), "flag -parser: want strict or lenient") {
		t.Errorf("-parser loose: %v", err)
	}
}

// fixKeys turns the snake_case keys of the sensitivity JSON into the
// field names the test decodes into.
func fixKeys(b []byte) []byte {
	s := string(b)
	for _, k := range []string{"invalid_strict", "invalid_lenient", "invalid_fixed", "strict_strict", "strict_lenient", "strict_gained", "strict_lost", "replay_cut"} {
		s = strings.ReplaceAll(s, `"`+k+`"`, `"`+strings.ReplaceAll(k, "_", "")+`"`)
	}
	return []byte(s)
}
