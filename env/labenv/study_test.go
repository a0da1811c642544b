package labenv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/mcpstress/stress/env/labenv"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/manifests"
	_ "github.com/mcpstress/stress/models/baseline"
	_ "github.com/mcpstress/stress/models/failclosed"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

var update = flag.Bool("update", false, "rewrite testdata/lab-classes.golden")

// TestCorpusMatchesLab: every record of the lab corpus (recorded through
// the protocol by stress lab record) shows exactly the observation the
// in-process environment's first call produces, for any seed, and the
// corpus covers every fault class on at least 3 servers.
func TestCorpusMatchesLab(t *testing.T) {
	m, err := manifests.LoadBuiltin("lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := lab.BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Corpus.Scenarios) < 30 || len(m.Corpus.Scenarios) != len(set.Scenarios) {
		t.Fatalf("lab corpus has %d records, set %d scenarios", len(m.Corpus.Scenarios), len(set.Scenarios))
	}
	classes, servers := map[study.Cause]bool{}, map[string]bool{}
	for i := range m.Corpus.Scenarios {
		r := &m.Corpus.Scenarios[i]
		sc, ok := set.Scenario(r.ID)
		if !ok {
			t.Fatalf("record %s has no lab scenario", r.ID)
		}
		classes[sc.Class], servers[r.Server] = true, true
		if r.Probe != study.LabCall || r.Capture == nil || r.Coding == nil || r.Coding.Confirmed == nil {
			t.Errorf("%s: probe %s, capture %v, coding %v: want a lab_call recorded and confirmed", r.ID, r.Probe, r.Capture != nil, r.Coding)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, r.Observation); err != nil {
			t.Fatal(err)
		}
		for _, seed := range []int64{1, 20261201, -7} {
			env := labenv.New(sc, seed)
			obs, err := env.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(obs, want.Bytes()) {
				t.Errorf("%s seed %d: the environment's first observation\n%s\ndiffers from the record's\n%s", r.ID, seed, obs, r.Observation)
			}
		}
		frames, err := os.ReadFile(filepath.Join("../../manifests/corpus/lab", r.Capture.Frames))
		if err != nil || !bytes.Contains(frames, []byte(`\"method\":\"tools/call\"`)) {
			t.Errorf("%s: frames file %s: %v, or no tools/call frame", r.ID, r.Capture.Frames, err)
		}
	}
	if len(classes) != len(lab.Classes) || len(servers) < 3 {
		t.Errorf("the corpus covers %d of %d classes on %d servers", len(classes), len(lab.Classes), len(servers))
	}
	if _, err := labenv.ForCorpus("", m.Corpus.Scenarios); err != nil {
		t.Errorf("ForCorpus refuses the lab corpus: %v", err)
	}
}

// TestForCorpusRefuses: a paper record, and a lab record edited to
// disagree with its scenario, are refused, naming record and field.
func TestForCorpusRefuses(t *testing.T) {
	lm, err := manifests.LoadBuiltin("lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pm, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	bad := lm.Corpus.Scenarios[0]
	bad.Preferred = study.StopOrEscalate
	// X01 proves three policies; a record that declares only the first
	// would score Proven as Strict.
	narrow := lm.Corpus.Scenarios[0]
	narrow.ID, narrow.PreferredSet = "X01", nil
	if len(lm.Corpus.Scenarios[0].PreferredSet) < 2 || lm.Corpus.Scenarios[0].ID != "X01" {
		t.Fatalf("the first lab record should be X01 with a proven set of several policies: %+v", lm.Corpus.Scenarios[0].PreferredSet)
	}
	_, err = labenv.ForCorpus("", []study.Scenario{pm.Corpus.Scenarios[0], bad, narrow})
	for _, want := range []string{"record S01: not a scenario of lab set core", "record " + bad.ID + ": field preferred_policy is stop_or_escalate",
		"record X01: field preferred_policies is [retry_now], but lab scenario X01 has [retry_now"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}

// TestLabStudy runs manifests/lab.yaml (the deterministic baselines on the
// lab corpus, live) and pins every count of every fault class per model
// and condition in testdata/lab-classes.golden, then checks the claims
// docs/lab.md makes of it.
func TestLabStudy(t *testing.T) {
	m, plan, env := labStudy(t)
	dir, sum, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "lab"), Env: env, Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(m.Models) * len(m.Conditions) * len(m.Corpus.Scenarios) * m.Replicates; sum.Decisions != want || sum.Errors != 0 {
		t.Fatalf("%d decisions, %d errors", sum.Decisions, sum.Errors)
	}
	rows, err := results.ReadRows(filepath.Join(dir, results.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	cause := map[string]study.Cause{}
	for _, s := range m.Corpus.Scenarios {
		cause[s.ID] = s.Cause
	}
	type key struct {
		model, condition string
		cause            study.Cause
	}
	type tally struct {
		n, strict, proven, cover, retry, recovered, harm, calls, ms int64
		kinds                                                       [5]int64 // duplicate, wrong_value, collateral, data_loss, incomplete
	}
	tallies := map[key]*tally{}
	for _, r := range rows {
		if !r.Lab() || !hasAll(r.Outcome, simulator.Recovered, simulator.Harm, simulator.HarmDuplicate, simulator.Calls, simulator.LabMS) {
			t.Fatalf("row %s/%s/%s lacks the lab columns", r.Model, r.Condition, r.Scenario)
		}
		k := key{r.Model, r.Condition, cause[r.Scenario]}
		x := tallies[k]
		if x == nil {
			x = &tally{}
			tallies[k] = x
		}
		x.n++
		x.strict += b2i(r.Outcome.Of(simulator.Strict))
		x.proven += b2i(r.Outcome.Of(simulator.Proven))
		x.cover += b2i(r.Outcome.Of(simulator.Cover))
		x.retry += b2i(r.Outcome.Of(simulator.Retry))
		x.recovered += b2i(r.Outcome.Of(simulator.Recovered))
		x.harm += b2i(r.Outcome.Of(simulator.Harm))
		for i, c := range []simulator.Col{simulator.HarmDuplicate, simulator.HarmWrongValue, simulator.HarmCollateral, simulator.HarmDataLoss, simulator.HarmIncomplete} {
			x.kinds[i] += b2i(r.Outcome.Of(c))
		}
		x.calls += r.Outcome.Value(simulator.Calls)
		x.ms += r.Outcome.Value(simulator.LabMS)
	}
	keys := make([]key, 0, len(tallies))
	for k := range tallies {
		keys = append(keys, k)
	}
	order := func(c study.Cause) int {
		for i, x := range study.Causes {
			if x == c {
				return i
			}
		}
		return -1
	}
	modelOrder := map[string]int{}
	for i, mo := range m.Models {
		modelOrder[mo.Name] = i
	}
	condOrder := map[string]int{}
	for i, c := range m.Conditions {
		condOrder[string(c)] = i
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.model != b.model {
			return modelOrder[a.model] < modelOrder[b.model]
		}
		if a.condition != b.condition {
			return condOrder[a.condition] < condOrder[b.condition]
		}
		return order(a.cause) < order(b.cause)
	})
	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\tcondition\tcause\tN\tStrict\tProven\tCover\tRetry\tRecovered\tHarm\tDup\tWrongV\tCollat\tLoss\tIncompl\tCalls\tLabMS")
	for _, k := range keys {
		x := tallies[k]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", k.model, k.condition, k.cause, x.n, x.strict, x.proven, x.cover, x.retry, x.recovered, x.harm,
			x.kinds[0], x.kinds[1], x.kinds[2], x.kinds[3], x.kinds[4], x.calls, x.ms)
	}
	tw.Flush()
	golden := filepath.Join("testdata", "lab-classes.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("per-class counts differ from %s (go test ./env/labenv -run TestLabStudy -update rewrites it):\n%s", golden, out.String())
	}
	// docs/lab.md's claims, independent of the golden file.
	wider := false
	for k, x := range tallies {
		wider = wider || x.proven > x.strict
		switch {
		case x.proven < x.strict:
			t.Errorf("%s %s %s: Proven %d below Strict %d", k.model, k.condition, k.cause, x.proven, x.strict)
		case k.model == "always_stop" && (x.harm != 0 || x.calls != x.n):
			t.Errorf("always_stop %s %s: harm %d, calls %d of %d", k.condition, k.cause, x.harm, x.calls, x.n)
		case k.model == "naive_retry" && k.cause == study.Transient && x.recovered == 0:
			t.Errorf("naive_retry does not recover transient under %s", k.condition)
		case k.model == "naive_retry" && k.cause == study.TimeoutCommitted && x.harm == 0:
			t.Errorf("naive_retry does not harm timeout_committed under %s", k.condition)
		case (k.model == "fail_closed" || k.model == "explicit_policy") && x.harm != 0:
			t.Errorf("%s harms %s under %s (%d)", k.model, k.cause, k.condition, x.harm)
		}
	}
	if !wider {
		t.Error("Proven credits no decision beyond Strict, though 15 lab scenarios prove more than one policy")
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// BenchmarkLabStudy runs manifests/lab.yaml in-process: 4,875 live
// decisions of the deterministic baselines on the lab corpus, bundle
// included (the speed target of the lab study is under 5 s).
func BenchmarkLabStudy(b *testing.B) {
	_, plan, env := labStudy(b)
	for i := 0; i < b.N; i++ {
		_, sum, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(b.TempDir(), fmt.Sprint(i)), Env: env, Log: &bytes.Buffer{}})
		if err != nil || sum.Decisions != 4875 {
			b.Fatal(err, sum)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*4875), "µs/decision")
}

// labStudy loads manifests/lab.yaml and prepares its plan and its lab
// environments.
func labStudy(tb testing.TB) (*manifests.Resolved, *runner.Plan, simulator.EnvFactory) {
	tb.Helper()
	m, err := manifests.LoadBuiltin("lab.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	plan, err := runner.Prepare(m, false)
	if err != nil {
		tb.Fatal(err)
	}
	env, err := labenv.ForCorpus("", m.Corpus.Scenarios)
	if err != nil {
		tb.Fatal(err)
	}
	return m, plan, env
}

// hasAll reports whether o has a value in every column of cols.
func hasAll(o simulator.Values, cols ...simulator.Col) bool {
	for _, c := range cols {
		if _, ok := o.Get(c); !ok {
			return false
		}
	}
	return true
}
