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
	if sum.Errors != 0 || sum.Decisions != len(m.Models)*len(study.ShapeConditions)*len(m.Corpus.Scenarios)*m.Replicates {
		t.Fatalf("%d decisions, %d errors", sum.Decisions, sum.Errors)
	}
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
