package results_test

import (
	"context"
	"fmt"
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

const (
	selectTool = `{"operation_status": "failed", "recovery_policy": "select_tool"}`
	revise     = `{"operation_status": "failed", "recovery_policy": "revise_arguments"}`
)

// TestProvenRoundTrip writes decisions of a scenario whose proven
// preferred set is {select_tool, stop_or_escalate} (Strict's select_tool)
// as a run does, once with the set in defaults.json (the lines leave it
// out) and once on the lines themselves (the table holds the scenario
// without it), and re-scores them from calls.jsonl: a final
// stop_or_escalate is proven but not strict, a final revise_arguments
// neither, a final select_tool both, exactly as the run scored them.
func TestProvenRoundTrip(t *testing.T) {
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt("default", m.Prompts[0].Path, m.Prompts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	plain := m.Corpus.Scenarios[0] // S01: select_tool, non-harm {select_tool, stop_or_escalate}
	s := plain
	s.PreferredSet = []study.Policy{study.SelectTool, study.StopOrEscalate}
	want := map[string][2]bool{stop: {false, true}, revise: {false, false}, selectTool: {true, true}}
	for _, tc := range []struct {
		name     string
		defaults study.Scenario // the scenario defaults.json holds
		onLines  bool           // the lines carry the scenario's fields
	}{{"set in defaults.json", s, false}, {"set on the lines", plain, true}} {
		t.Run(tc.name, func(t *testing.T) {
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
			d := results.NewDefaults(1, []study.Scenario{tc.defaults}, nil)
			if _, err := results.KeepDefaults(filepath.Join(dir, results.DefaultsFile), d, true); err != nil {
				t.Fatal(err)
			}
			cl.SetDefaults(d)
			ran := map[int]results.Row{}
			rep := 0
			for answer := range want {
				rep++
				key := simulator.Key{Model: "m", Prompt: "default", Condition: study.Normalized, Scenario: s.ID, Replicate: rep}
				dec := simulator.Run(context.Background(), answers{answer}, p, &s, key, simulator.Config{StudySeed: 1, ReplayCap: 3})
				if dec.Err != nil {
					t.Fatal(dec.Err)
				}
				if _, _, err := cl.Append(&dec, &s, ""); err != nil {
					t.Fatal(err)
				}
				ran[rep] = results.RowOf(&dec)
			}
			if err := cl.Close(); err != nil {
				t.Fatal(err)
			}

			b, _ := os.ReadFile(filepath.Join(dir, results.CallsFile))
			if got := strings.Contains(string(b), `"preferred_policies":["select_tool","stop_or_escalate"]`); got != tc.onLines {
				t.Errorf("the lines carry the set: %v, want %v:\n%s", got, tc.onLines, b)
			}
			f, err := os.Open(filepath.Join(dir, results.CallsFile))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			gr := results.NewGroupReader(f, results.CallsFile)
			n := 0
			for gr.Next() {
				r, err := gr.Group().Row()
				if err != nil {
					t.Fatal(err)
				}
				n++
				if r != ran[int(r.Replicate)] {
					t.Errorf("replicate %d: re-scored %+v, the run scored %+v", r.Replicate, r, ran[int(r.Replicate)])
				}
				var w [2]bool
				for answer, v := range want {
					if strings.Contains(answer, `"`+r.FinalLabel+`"`) {
						w = v
					}
				}
				if r.Outcome.Of(simulator.Strict) != w[0] || r.Outcome.Of(simulator.Proven) != w[1] {
					t.Errorf("final %s: strict %v proven %v, want %v %v", r.FinalLabel, r.Outcome.Of(simulator.Strict), r.Outcome.Of(simulator.Proven), w[0], w[1])
				}
			}
			if gr.Err() != nil || n != len(want) {
				t.Fatalf("%d decisions read back (%v)", n, gr.Err())
			}
			calls, err := results.ReadCalls(filepath.Join(dir, results.CallsFile))
			if err != nil || len(calls) != len(want) {
				t.Fatalf("ReadCalls: %d calls (%v)", len(calls), err)
			}
			for _, c := range calls {
				if fmt.Sprint(c.PreferredSet) != fmt.Sprint(s.PreferredSet) {
					t.Errorf("ReadCalls: preferred_policies %v, want %v", c.PreferredSet, s.PreferredSet)
				}
			}
		})
	}
}

// TestProvenFromOldLines: a call line without preferred_policies (every
// line written before the set was recorded, and the paper corpus's)
// scores Proven as Strict; a set that does not start with the preferred
// policy is refused, naming the decision.
func TestProvenFromOldLines(t *testing.T) {
	line := func(answer, extra string) string {
		return fmt.Sprintf(`{"key":{"model":"m","prompt":"p","condition":"normalized","scenario":"S1","replicate":1},"server":"P1","preferred":"select_tool",%s"non_harm":["select_tool","stop_or_escalate"],"turn":0,"seed":5,"response":%q,"response_sha256":%q}`+"\n",
			extra, answer, results.SHA256([]byte(answer)))
	}
	for _, tc := range []struct {
		name           string
		answer, extra  string
		strict, proven bool
		err            string
	}{
		{"no set: the preferred policy is strict and proven", selectTool, "", true, true, ""},
		{"no set: stop is neither", stop, "", false, false, ""},
		{"no set: revise is neither", revise, "", false, false, ""},
		{"stop in the proven set", stop, `"preferred_policies":["select_tool","stop_or_escalate"],`, false, true, ""},
		{"set not starting with the preferred policy is refused", stop, `"preferred_policies":["stop_or_escalate","select_tool"],`, false, false, `decision m/p/normalized/S1/1: preferred_policies [stop_or_escalate select_tool] does not start with the preferred policy "select_tool"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gr := results.NewGroupReader(strings.NewReader(line(tc.answer, tc.extra)), results.CallsFile)
			if !gr.Next() {
				t.Fatalf("%s: %v", tc.extra, gr.Err())
			}
			r, err := gr.Group().Row()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("%s: %v, want %q", tc.extra, err, tc.err)
				}
				return
			}
			if err != nil || r.Outcome.Of(simulator.Strict) != tc.strict || r.Outcome.Of(simulator.Proven) != tc.proven {
				t.Errorf("%s %s: strict %v proven %v (%v), want %v %v", tc.answer, tc.extra, r.Outcome.Of(simulator.Strict), r.Outcome.Of(simulator.Proven), err, tc.strict, tc.proven)
			}
		})
	}
}
