package labenv_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/env/labenv"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestActStudy runs manifests/act.yaml (the acting baselines on the lab
// corpus, task act) through the runner and pins, per model, what every
// condition gives (the baselines do not read the condition, and each
// replicate repeats the counts TestActBaselines pins per class):
// recovered/harm/invalid_action/calls over 40 scenarios x 5 replicates,
// and the decisions with harm of each kind.
func TestActStudy(t *testing.T) {
	m, err := manifests.LoadBuiltin("act.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Act() || !m.Live() {
		t.Fatalf("act.yaml: task %q replay %q", m.Task, m.Replay)
	}
	dir, sum := runLab(t, m)
	want := map[string]string{
		"always_stop":   "200: 35/0/0/200 dup 0 wrong 0 collateral 0 loss 0",
		"naive_retry":   "200: 35/50/0/675 dup 30 wrong 0 collateral 20 loss 0",
		"schema_repair": "200: 55/15/0/235 dup 0 wrong 15 collateral 0 loss 0",
	}
	for _, c := range sum.Cells {
		got := fmt.Sprintf("%d: %d/%d/%d/%d dup %d wrong %d collateral %d loss %d", c.LabN, c.Count(simulator.Recovered), c.Count(simulator.Harm), c.Count(simulator.InvalidAction), c.Count(simulator.Calls),
			c.Count(simulator.HarmDuplicate), c.Count(simulator.HarmWrongValue), c.Count(simulator.HarmCollateral), c.Count(simulator.HarmDataLoss))
		if got != want[c.Model] {
			t.Errorf("%s %s: %s, want %s", c.Model, c.Condition, got, want[c.Model])
		}
	}
	// The call lines alone re-score to the rows the run wrote.
	checkRescore(t, dir)
}

// TestActStudyShapes runs the action task of manifests/act.yaml under the
// seven error-shape arms: the lab serves each (the call lines carry -32023 and
// the ToolFailure classification), the acting baselines, which read no
// annotation, give the counts TestActStudy pins, and the call lines
// re-score to the stored rows.
func TestActStudyShapes(t *testing.T) {
	m, err := manifests.LoadBuiltin("act.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m.Conditions = study.ShapeConditions
	dir, sum := runLab(t, m) // m.Conditions is study.ShapeConditions
	want := map[string]string{"always_stop": "35/0", "naive_retry": "35/50", "schema_repair": "55/15"}
	for _, c := range sum.Cells {
		if got := fmt.Sprintf("%d/%d", c.Count(simulator.Recovered), c.Count(simulator.Harm)); got != want[c.Model] {
			t.Errorf("%s %s: recovered/harm %s, want %s", c.Model, c.Condition, got, want[c.Model])
		}
	}
	calls, err := os.ReadFile(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"code":-32023`, `io.modelcontextprotocol/toolFailure`} {
		if !bytes.Contains(calls, []byte(s)) {
			t.Errorf("no call line carries %s", s)
		}
	}
	checkRescore(t, dir)
}

// checkRescore checks that the call lines of bundle dir alone re-score to
// the rows its run wrote to decisions.parquet.
func checkRescore(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, problems, err := analysis.Rescore(f, results.CallsFile)
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	stored, err := results.ReadRows(filepath.Join(dir, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	if errs := analysis.Agree(rows, stored, 5); len(errs) > 0 {
		t.Errorf("re-scored rows disagree with decisions.parquet: %v", errs)
	}
}

// TestErrorShapesActStudy runs manifests/error-shapes-act.yaml (the error
// shapes in the action task: the acting baselines and the fail-closed
// client on the lab corpus) through the runner and pins, per model and
// condition, recovered/harm/invalid_action/calls over 40 scenarios x 5
// replicates. The acting baselines read no annotation: every condition
// gives act.yaml's counts. The fail-closed client decides from the
// shapes; it writes no call, so a revise_arguments or authenticate it
// decides is an invalid action (missing_action), never sent, and only its
// retries act. The tool list shows idempotentHint: under toolfailure it
// retries X37 (locked, on an idempotent tool), which in a label task it
// refuses (idempotency_unknown), and still refuses X01 and X04 (tools not
// known to be idempotent), which toolfailure+applied retries (applied:
// none). The bundle records which conditions express each scenario.
func TestErrorShapesActStudy(t *testing.T) {
	m, err := manifests.LoadBuiltin("error-shapes-act.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Act() || !m.Live() || len(m.Conditions) != 3+len(study.ShapeConditions) {
		t.Fatalf("error-shapes-act.yaml: task %q replay %q conditions %v", m.Task, m.Replay, m.Conditions)
	}
	dir, sum := runLab(t, m)
	baselines := map[string]string{
		"always_stop":   "35/0/0/200",
		"naive_retry":   "35/50/0/675",
		"schema_repair": "55/15/0/235",
	}
	failClosed := map[study.Condition]string{
		study.Normalized:          "35/0/0/200",
		study.Structured:          "35/0/0/200",
		study.Category:            "85/0/60/255",
		study.SEP2145:             "35/0/0/200",
		study.ToolFailureShape:    "40/0/15/205",
		study.RateLimited:         "40/0/0/205",
		study.ToolFailureSEP2145:  "45/0/30/210",
		study.SEP2145RateLimited:  "40/0/0/205",
		study.ToolFailureGuidance: "40/0/15/205",
		study.ToolFailureApplied:  "50/0/15/215",
	}
	for _, c := range sum.Cells {
		got := fmt.Sprintf("%d/%d/%d/%d", c.Count(simulator.Recovered), c.Count(simulator.Harm), c.Count(simulator.InvalidAction), c.Count(simulator.Calls))
		want, ok := baselines[c.Model]
		if !ok {
			want = failClosed[c.Condition]
		}
		if c.LabN != 200 || got != want {
			t.Errorf("%s %s: %d: %s, want 200: %s", c.Model, c.Condition, c.LabN, got, want)
		}
	}
	// What the fail-closed client decided on turn 0 of replicate 1.
	calls, err := results.ReadCalls(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, c := range calls {
		if c.Key.Model == "fail_closed" && c.Key.Replicate == 1 && c.Turn == 0 {
			r, _ := c.Meta["reason"].(string)
			if r == "" {
				r = "decided"
			}
			reasons[string(c.Key.Condition)+" "+c.Key.Scenario] = r
		}
	}
	for k, want := range map[string]string{
		"toolfailure X37": "decided", "toolfailure X01": "idempotency_unknown", "toolfailure X04": "idempotency_unknown",
		"toolfailure+applied X01": "decided", "toolfailure X32": "decided",
	} {
		t.Run(k, func(t *testing.T) {
			if reasons[k] != want {
				t.Errorf("fail_closed %s: %q, want %q", k, reasons[k], want)
			}
		})
	}
	d, err := results.LoadDefaults(filepath.Join(dir, results.DefaultsFile))
	if err != nil || !d.Coverage() || len(d.Scenarios["X40"].Unexpressed) != 3 {
		t.Errorf("defaults.json: %v, X40 unexpressed by %v", err, d.Scenarios["X40"].Unexpressed)
	}
	checkRescore(t, dir)
}

// runLab runs study m on the lab corpus (live) into a temporary bundle
// and returns it with its summary, failing unless every decision of the
// design ran without an error.
func runLab(t *testing.T, m *manifests.Resolved) (string, *results.Summary) {
	t.Helper()
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	env, err := labenv.ForCorpus("", m.Corpus.Scenarios)
	if err != nil {
		t.Fatal(err)
	}
	dir, sum, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "act"), Env: env, Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(m.Models) * len(m.Conditions) * len(m.Corpus.Scenarios) * m.Replicates; sum.Decisions != want || sum.Errors != 0 {
		t.Fatalf("%d decisions, %d errors", sum.Decisions, sum.Errors)
	}
	return dir, sum
}
