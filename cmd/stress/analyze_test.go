package main

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
	"github.com/parquet-go/parquet-go"
)

// mockProfile is a mock model's behaviour under one condition: the chance
// of each kind of final answer (the rest stops).
type mockProfile struct {
	strict, retry, cover, invalid, succ float64
}

// mockKinds are the mock models: "steady" looks like the paper's Llama,
// "erratic" like its Qwen, "steady-v2" is steady with a better prompt.
var mockKinds = map[string]map[study.Condition]mockProfile{
	"steady": {
		study.Normalized: {strict: .40, retry: .01, cover: 1},
		study.CodeOnly:   {strict: .37, retry: .01, cover: 1},
		study.Structured: {strict: .90, cover: 1},
		study.Prose:      {strict: 1, cover: 1},
	},
	"steady-v2": {
		study.Normalized: {strict: .55, retry: .01, cover: 1},
		study.CodeOnly:   {strict: .60, retry: .01, cover: 1},
		study.Structured: {strict: .93, cover: 1},
		study.Prose:      {strict: 1, cover: 1},
	},
	"erratic": {
		study.Normalized: {strict: .06, retry: .23, cover: .70, invalid: .05, succ: .04},
		study.CodeOnly:   {strict: .05, retry: .23, cover: .72, invalid: .06, succ: .02},
		study.Structured: {strict: .37, retry: .25, cover: .80, invalid: .08, succ: .02},
		study.Prose:      {strict: .29, retry: .22, cover: .73, invalid: .10, succ: .02},
	},
}

// mockModel answers pseudo-randomly but deterministically: it recognises
// the scenario and turn from the request's seed (the simulator derives it
// from them) and the condition from the first user message, and draws from
// its profile with a hash of (kind, seed), mostly shared across conditions
// (as a real model's answers are correlated across renderings).
type mockModel struct {
	kind   string
	bySeed map[int64]*study.Scenario
}

func hash01(parts ...any) float64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(toString(p)))
		h.Write([]byte{0})
	}
	return float64(h.Sum64()>>11) / (1 << 53)
}

func toString(p any) string {
	switch x := p.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

func conditionOf(user string) study.Condition {
	switch {
	case strings.Contains(user, "Error details:"):
		return study.Structured
	case strings.Contains(user, "The call failed because"):
		return study.Prose
	case strings.Contains(user, "Error code:"):
		return study.CodeOnly
	}
	return study.Normalized
}

func (m *mockModel) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	s := m.bySeed[req.Seed]
	if s == nil || len(req.Messages) < 2 {
		return models.Reply{}, errors.New("mock: unknown seed")
	}
	cond := conditionOf(req.Messages[1].Content)
	p := mockKinds[m.kind][cond]
	// The "reason" prompt (promptBundle) improves a kind that has a -v2.
	if v2, ok := mockKinds[m.kind+"-v2"]; ok && strings.Contains(req.Messages[0].Content, reasonMarker) {
		p = v2[cond]
	}
	x := hash01(m.kind, req.Seed)
	if hash01(m.kind, req.Seed, string(cond)) > 0.7 {
		x = hash01(m.kind, req.Seed, string(cond), "own")
	}
	status := "failed"
	if hash01(m.kind, req.Seed, string(cond), "fs") < p.succ {
		status = "succeeded"
	}
	answer := func(policy study.Policy) string {
		return `{"operation_status": "` + status + `", "recovery_policy": "` + string(policy) + `"}`
	}
	var text string
	switch {
	case x < p.strict:
		text = answer(s.Preferred)
	case x < p.strict+p.retry:
		text = answer(study.RetryNow)
	case x < p.cover:
		var others []study.Policy
		for _, q := range study.Policies {
			if q != s.Preferred && q != study.RetryNow && q != study.StopOrEscalate {
				others = append(others, q)
			}
		}
		text = answer(others[int(hash01(m.kind, req.Seed, "other")*float64(len(others)))])
	case x < p.cover+p.invalid:
		text = "I think the tool is broken."
	default:
		text = answer(study.StopOrEscalate)
	}
	return models.Reply{Text: text}, nil
}

func init() {
	models.Register("mock-test", models.Backend{New: func(spec models.Spec) (models.Model, error) {
		if _, ok := mockKinds[spec.Model]; !ok {
			return nil, errors.New("mock: unknown kind " + spec.Model)
		}
		m, err := manifests.LoadBuiltin(manifests.DefaultName)
		if err != nil {
			return nil, err
		}
		mm := &mockModel{kind: spec.Model, bySeed: map[int64]*study.Scenario{}}
		for i := range m.Corpus.Scenarios {
			s := &m.Corpus.Scenarios[i]
			for rep := 1; rep <= 10; rep++ {
				for turn := 0; turn < 4; turn++ {
					mm.bySeed[simulator.Seed(m.Seed, s.ID, rep, turn)] = s
				}
			}
		}
		return mm, nil
	}})
}

// mockBundle runs the paper's shape (2 models × 4 conditions × 21
// scenarios × replicates) through the runner with the mock models and
// returns the bundle directory. The run time and run id
// (20260101T000000Z-mock) are fixed.
func mockBundle(t *testing.T, kinds map[string]string, replicates int, corpus func([]study.Scenario) []study.Scenario) string {
	t.Helper()
	return runMockPlan(t, mockPlan(t, kinds, replicates, corpus))
}

// runMockPlan runs a mock plan into a bundle with a fixed run time and id.
func runMockPlan(t *testing.T, plan *runner.Plan) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	fixed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, _, err := plan.Run(context.Background(), runner.Options{Out: dir, RunID: "20260101T000000Z-mock", Now: func() time.Time { return fixed }}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// reasonMarker is the line the "reason" prompt adds to the system
// message; the mock answers it with its kind's -v2 profile.
const reasonMarker = "Reason about the cause of the failure before you choose."

// mockPlan prepares the study of mockBundle.
func mockPlan(t *testing.T, kinds map[string]string, replicates int, corpus func([]study.Scenario) []study.Scenario) *runner.Plan {
	return mockPlanWith(t, kinds, replicates, corpus, nil)
}

// mockPlanWith is mockPlan with edit applied to the manifest first.
func mockPlanWith(t *testing.T, kinds map[string]string, replicates int, corpus func([]study.Scenario) []study.Scenario, edit func(*manifests.Resolved)) *runner.Plan {
	t.Helper()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	m.Name = "mock"
	m.Models = nil
	for _, label := range []string{"llama3.2-3b", "qwen3.5-0.8b"} {
		if kinds[label] != "" {
			m.Models = append(m.Models, manifests.Model{Name: label, Backend: "mock-test", Model: kinds[label]})
		}
	}
	m.Replicates = replicates
	if corpus != nil {
		m.Corpus.Scenarios = corpus(m.Corpus.Scenarios)
	}
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

var paperKinds = map[string]string{"llama3.2-3b": "steady", "qwen3.5-0.8b": "erratic"}

func TestAnalyzeIntervalsGolden(t *testing.T) {
	dir := mockBundle(t, paperKinds, 5, nil)
	out, log, err := runCmd(t, "analyze", "-pair", "normalized,prose,cover", "-pair", "code_only,normalized", "-column", "retry", "-against", "paper", "-match-label", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "analyze-mock.golden", out)
	// Without -match-label the mock models, labelled like the paper's but
	// with backend model ids steady and erratic, are not the paper's.
	unmatched, _, err := runCmd(t, "analyze", "-b", "100", "-against", "paper", dir)
	if err != nil || !strings.Contains(unmatched, "Run models not in the paper: llama3.2-3b, qwen3.5-0.8b.") || strings.Contains(unmatched, "consistent at 5%") {
		t.Errorf("-against paper without -match-label: %v\n%s", err, unmatched)
	}
	// The counts table comes first, unchanged.
	counts, _, err := runCmd(t, "analyze", dir)
	if err != nil {
		t.Fatal(err)
	}
	table := counts[:strings.Index(counts, "\n\n")+1]
	if !strings.HasPrefix(out, table) || !strings.HasPrefix(table, "model  ") && !strings.HasPrefix(table, "model ") {
		t.Errorf("the counts table does not lead the output:\n%s", out)
	}

	js, _, err := runCmd(t, "analyze", "-json", "-b", "2000", "-seed", "7", "-pair", "normalized,prose,cover", "-against", "paper", "-match-label", dir)
	if err != nil {
		t.Fatal(err)
	}
	goldenJSON(t, "analyze-mock-json.golden", js)
	var doc struct {
		Bootstrap struct {
			B        int    `json:"b"`
			Seed     uint64 `json:"seed"`
			Clusters int    `json:"clusters"`
		} `json:"bootstrap"`
		Cells []struct {
			Model     string                 `json:"model"`
			N         int                    `json:"n"`
			Strict    int                    `json:"strict"`
			Cover     int                    `json:"cover"`
			Wilson    map[string]*[2]float64 `json:"wilson"`
			Bootstrap map[string]any         `json:"bootstrap"`
		} `json:"cells"`
		Pairs []struct {
			Model, Prompt, A, B, Column string
			Diff                        *float64    `json:"diff"`
			DiscordantAB                int         `json:"discordant_ab"`
			DiscordantBA                int         `json:"discordant_ba"`
			McNemarP                    *float64    `json:"mcnemar_p"`
			Bootstrap                   *[2]float64 `json:"bootstrap"`
		} `json:"pairs"`
		Against *struct {
			Rows []struct {
				Run *struct{ Strict int } `json:"run"`
			} `json:"rows"`
		} `json:"against"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Bootstrap.B != 2000 || doc.Bootstrap.Seed != 7 || doc.Bootstrap.Clusters != 10 {
		t.Errorf("bootstrap record %+v, want b 2000 seed 7 over 10 servers", doc.Bootstrap)
	}
	if len(doc.Cells) != 8 {
		t.Fatalf("%d cells, want 8", len(doc.Cells))
	}
	for _, c := range doc.Cells {
		for _, k := range []string{"strict", "cover", "retry", "invalid", "any_fs", "terminal_fs", "selective"} {
			if _, ok := c.Wilson[k]; !ok {
				t.Errorf("cell %s: wilson lacks %q", c.Model, k)
			}
			if _, ok := c.Bootstrap[k]; !ok {
				t.Errorf("cell %s: bootstrap lacks %q", c.Model, k)
			}
		}
		if c.Bootstrap["b"] != 2000.0 || c.Bootstrap["seed"] != 7.0 {
			t.Errorf("cell bootstrap b/seed = %v/%v", c.Bootstrap["b"], c.Bootstrap["seed"])
		}
		if w := c.Wilson["strict"]; w == nil || !(w[0] <= float64(c.Strict)/float64(c.N) && float64(c.Strict)/float64(c.N) <= w[1]) {
			t.Errorf("cell %s: Wilson strict %v does not bracket %d/%d", c.Model, w, c.Strict, c.N)
		}
	}
	// 2 models × (2 predeclared + 1 asked) pairs.
	if len(doc.Pairs) != 6 {
		t.Fatalf("%d pairs, want 6", len(doc.Pairs))
	}
	for _, p := range doc.Pairs {
		if p.Diff == nil || p.McNemarP == nil || p.Bootstrap == nil {
			t.Errorf("pair %+v has null statistics", p)
			continue
		}
		if want := float64(p.DiscordantAB-p.DiscordantBA) / 105; math.Abs(*p.Diff-want) > 1e-6 {
			t.Errorf("pair %s %s−%s: diff %v, want (ab − ba)/105 = %v", p.Model, p.A, p.B, *p.Diff, want)
		}
	}
	if doc.Against == nil || len(doc.Against.Rows) != 8 || doc.Against.Rows[0].Run == nil {
		t.Errorf("against: %+v", doc.Against)
	}
}

// TestAnalyzeBaselinesJSONCompatible: the -json cells keep every field
// they had, in order: decoding the new output's cells as results.Cell and
// printing them with analysis.WriteJSON gives back the earlier output
// (testdata/analyze-json-cells.golden, the analyze -json output before
// intervals were added).
func TestAnalyzeBaselinesJSONCompatible(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", dir); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	js, _, err := runCmd(t, "analyze", "-json", dir)
	if err != nil {
		t.Fatal(err)
	}
	var cells struct {
		Cells []json.RawMessage `json:"cells"`
	}
	if err := json.Unmarshal([]byte(js), &cells); err != nil {
		t.Fatal(err)
	}
	// Each cell less the members added since: the intervals and pass^k.
	var got struct{ Cells []results.Cell }
	for _, raw := range cells.Cells {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "rates")
		delete(m, "wilson")
		delete(m, "clopper_pearson")
		delete(m, "bootstrap")
		delete(m, "pass_k")
		b, _ := json.Marshal(m)
		var c results.Cell
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		got.Cells = append(got.Cells, c)
	}
	var b strings.Builder
	if err := analysis.WriteJSON(&b, got.Cells); err != nil {
		t.Fatal(err)
	}
	golden(t, "analyze-json-cells.golden", b.String())
}

func TestAnalyzeFlagErrors(t *testing.T) {
	dir := mockBundle(t, map[string]string{"llama3.2-3b": "steady"}, 1, nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-b", "0"}, "flag -b: want 1 to 1000000"},
		{[]string{"-b", "2000000"}, "flag -b"},
		{[]string{"-seed", "0"}, "flag -seed"},
		{[]string{"-pair", "normalized"}, "flag -pair: pair \"normalized\": want [FACTOR:]A,B"},
		{[]string{"-pair", "normalized,loud"}, `"normalized" and "loud" are not two conditions, two prompts or two models of the bundle`},
		{[]string{"-pair", "condition:normalized,loud"}, `unknown condition "loud"`},
		{[]string{"-pair", "prompt:default,terse"}, "no model of the bundle has a condition under both prompts default and terse"},
		{[]string{"-pair", "dose:a,b"}, `"dose:a" and "b" are not two conditions, two prompts or two models of the bundle`},
		{[]string{"-pair", "prose,prose"}, "the two levels are the same"},
		{[]string{"-interval", "wald"}, `flag -interval: unknown interval "wald"`},
		{[]string{"-family", "most"}, `flag -family: unknown family "most"`},
		{[]string{"-family", "requested"}, "flag -family requested: no -pair comparison"},
		{[]string{"-match-label"}, "flag -match-label applies to -against paper"},
		{[]string{"-pair", "prose,normalized,extra"}, "sum of replays"},
		{[]string{"-pair", "prose,normalized", "-column", "bogus"}, `flag -column: unknown column "bogus"`},
		{[]string{"-column", "cover"}, "flag -column applies to -pair"},
		{[]string{"-against", "arxiv"}, `flag -against: unknown table "arxiv"`},
		{[]string{"-pair", "envelope,normalized"}, "no model/prompt arm of the bundle has decisions under both envelope and normalized"},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			_, _, err := runCmd(t, append(append([]string{"analyze"}, tc.args...), dir)...)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("analyze %v: error %v, want a usage error containing %q", tc.args, err, tc.want)
			}
		})
	}
	// A column given as its table label works.
	if _, _, err := runCmd(t, "analyze", "-pair", "prose,normalized", "-column", "AnyFS", dir); err != nil {
		t.Errorf("-column AnyFS: %v", err)
	}
}

// TestAnalyzeDuplicates: a decision recorded twice in both calls.jsonl and
// decisions.parquet (so that the files agree) is reported by a
// data-quality line, in the text and in the JSON warnings.
func TestAnalyzeDuplicates(t *testing.T) {
	dir := mockBundle(t, steadyOnly, 1, nil)
	calls := filepath.Join(dir, results.CallsFile)
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitAfter(string(b), "\n")[0] // a one-turn decision of the steady mock
	if err := os.WriteFile(calls, append(b, first...), 0o644); err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(dir, results.DecisionsFile)
	rows, err := results.ReadRows(pq)
	if err != nil {
		t.Fatal(err)
	}
	w, err := results.CreateRows(pq)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(rows, rows[0]) {
		w.Add(r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, log, err := runCmd(t, "analyze", "-partial", dir)
	want := "data quality: 1 decision rows repeat a decision already read"
	if err != nil || !strings.Contains(out, want) {
		t.Fatalf("analyze: %v\n%s\n%s", err, out, log)
	}
	js, _, err := runCmd(t, "analyze", "-partial", "-json", dir)
	if err != nil || !strings.Contains(js, want) {
		t.Fatalf("analyze -json: %v\n%s", err, js)
	}
}

// olderRow is a decisions.parquet row as a version without the cover and
// terminal_fs columns (and the lab ones) would have written it.
type olderRow struct {
	Model       string `parquet:"model"`
	Prompt      string `parquet:"prompt"`
	Condition   string `parquet:"condition"`
	Scenario    string `parquet:"scenario"`
	Replicate   int64  `parquet:"replicate"`
	Server      string `parquet:"server"`
	Seed        int64  `parquet:"seed"`
	Status      string `parquet:"status"`
	FinalLabel  string `parquet:"final_label"`
	FinalStatus string `parquet:"final_status"`
	Turns       int64  `parquet:"turns"`
	Replays     int64  `parquet:"replays"`
	Strict      bool   `parquet:"strict"`
	Retry       bool   `parquet:"retry"`
	Invalid     bool   `parquet:"invalid"`
	AnyFS       bool   `parquet:"any_fs"`
	Error       string `parquet:"error"`
}

// TestAnalyzeOlderColumns: a bundle whose decisions.parquet was written
// before some outcome columns existed still analyzes: the files are
// compared without those columns, and the counts, the new columns
// included, come from the calls, as for the bundle as written today. A
// real disagreement in a column the file has is still reported.
func TestAnalyzeOlderColumns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", dir); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	want, _, err := runCmd(t, "analyze", "-json", "-b", "200", dir)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, results.DecisionsFile)
	rows, err := results.ReadRows(file)
	if err != nil {
		t.Fatal(err)
	}
	write := func(flip int) {
		var old []olderRow
		for i, r := range rows {
			o := olderRow{Model: r.Model, Prompt: r.Prompt, Condition: r.Condition, Scenario: r.Scenario, Replicate: r.Replicate,
				Server: r.Server, Seed: r.Seed, Status: r.Status, FinalLabel: r.FinalLabel, FinalStatus: r.FinalStatus,
				Turns: r.Turns, Replays: r.Replays, Strict: r.Outcome.Of(simulator.Strict), Retry: r.Outcome.Of(simulator.Retry),
				Invalid: r.Outcome.Of(simulator.Invalid), AnyFS: r.Outcome.Of(simulator.AnyFS), Error: r.Error}
			if i == flip {
				o.Strict = !o.Strict
			}
			old = append(old, o)
		}
		if err := parquet.WriteFile(file, old); err != nil {
			t.Fatal(err)
		}
	}
	write(-1)
	if missing, err := results.MissingColumns(file); err != nil || len(missing) != 2+len(simulator.Columns)-6 {
		t.Fatalf("missing columns %v (%v)", missing, err)
	}
	got, log, err := runCmd(t, "analyze", "-json", "-b", "200", dir)
	if err != nil || got != want {
		t.Errorf("analyze of the older file: %v\n%s\ngot  %.300s\nwant %.300s", err, log, got, want)
	}
	// The default bundle's cover column is not all 0: the older file
	// lacks values the calls give.
	if !strings.Contains(want, `"cover": 105`) {
		t.Fatalf("the default bundle has no cover to leave out:\n%.300s", want)
	}
	write(3)
	if _, log, err := runCmd(t, "analyze", dir); err == nil || !strings.Contains(err.Error(), "disagree") {
		t.Errorf("a flipped strict in the older file: %v\n%s", err, log)
	}
}
