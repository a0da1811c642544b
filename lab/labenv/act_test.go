package labenv

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/baseline"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// actPrompt loads the shipped action prompt.
func actPrompt(t testing.TB) *conditions.Prompt {
	t.Helper()
	text, err := fs.ReadFile(manifests.Builtin, "prompts/act.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	p, err := conditions.ParsePrompt("act", "act.tmpl", string(text))
	if err != nil {
		t.Fatal(err)
	}
	if !p.ShowsTools() {
		t.Fatal("act.tmpl does not show .Tools and .Call")
	}
	return p
}

// studyScenario is the corpus record of lab scenario sc that the
// simulator needs: its observation is the first call's, from a lab.
func studyScenario(t testing.TB, sc *lab.Scenario) *study.Scenario {
	t.Helper()
	e := New(sc, 1)
	obs, err := e.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &study.Scenario{ID: sc.ID, Server: sc.Server, Observation: obs, Preferred: sc.Preferred, NonHarm: sc.NonHarm}
}

// actCounts runs baseline kind on every scenario of the core set under
// task act and returns per class "recovered/harm/invalid_action/calls".
func actCounts(t *testing.T, kind string) (map[lab.Class]string, []simulator.Decision) {
	t.Helper()
	set, err := lab.BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Factory("")
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.New(models.Spec{Name: kind, Backend: baseline.Backend, Model: kind})
	if err != nil {
		t.Fatal(err)
	}
	p := actPrompt(t)
	type agg struct{ rec, harm, inv, calls int }
	per := map[lab.Class]*agg{}
	var ds []simulator.Decision
	for _, sc := range set.Scenarios {
		s := studyScenario(t, sc)
		key := simulator.Key{Model: kind, Prompt: "act", Condition: study.Normalized, Scenario: sc.ID, Replicate: 1}
		d := simulator.Run(context.Background(), m, p, s, key, simulator.Config{StudySeed: 7, ReplayCap: replayCap, Env: f, Act: true})
		if d.Err != nil {
			t.Fatalf("%s: %v", sc.ID, d.Err)
		}
		a := per[sc.Class]
		if a == nil {
			a = &agg{}
			per[sc.Class] = a
		}
		o := d.Outcome
		a.rec += b2i(o.Recovered)
		a.harm += b2i(o.Harm)
		a.inv += b2i(o.InvalidAction)
		a.calls += o.Calls
		ds = append(ds, d)
	}
	out := map[lab.Class]string{}
	for c, a := range per {
		out[c] = fmt.Sprintf("%d/%d/%d/%d", a.rec, a.harm, a.inv, a.calls)
	}
	return out, ds
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func format(m map[lab.Class]string) string {
	var ks []string
	for k, v := range m {
		ks = append(ks, string(k)+"="+v)
	}
	sort.Strings(ks)
	return strings.Join(ks, " ")
}

func TestActBaselinesDraft(t *testing.T) {
	for _, kind := range []string{baseline.AlwaysStop, baseline.ReplaySame, baseline.SchemaRepair} {
		c, _ := actCounts(t, kind)
		t.Logf("%s: %s", kind, format(c))
	}
}

func TestActDetailDraft(t *testing.T) {
	_, ds := actCounts(t, baseline.SchemaRepair)
	for _, d := range ds {
		for _, tu := range d.Turns {
			if tu.Action != nil {
				t.Logf("%s t%d %s %s %s %s inv=%s %s -> rec=%v harm=%v", d.Key.Scenario, tu.Index, tu.Answer.Policy, tu.Action.Channel, tu.Action.Tool, tu.Action.Arguments, tu.Action.Invalid, tu.Action.Detail, d.Outcome.Recovered, d.Outcome.Harm)
			}
		}
	}
}
