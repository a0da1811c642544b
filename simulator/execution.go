package simulator

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// Execution is what one policy's canonical recovery did in a fresh
// environment: Environment.Execute after Start, again while its call
// fails, at most replayCap times (as live replay carries out a model that
// keeps choosing it); stop_or_escalate executes nothing.
type Execution struct {
	Policy  study.Policy
	Outcome EnvOutcome
}

// Executions executes every policy's canonical recovery of scenario, each
// in its own fresh environment of f seeded with seed, in study.Policies
// order. An error is a failure of an environment, not of a call.
func Executions(ctx context.Context, f EnvFactory, scenario string, seed int64, replayCap int) ([]Execution, error) {
	out := make([]Execution, 0, len(study.Policies))
	for _, p := range study.Policies {
		o, err := execute(ctx, f, scenario, seed, replayCap, p)
		if err != nil {
			return nil, fmt.Errorf("scenario %s, %s: %w", scenario, p, err)
		}
		out = append(out, Execution{Policy: p, Outcome: o})
	}
	return out, nil
}

func execute(ctx context.Context, f EnvFactory, scenario string, seed int64, replayCap int, p study.Policy) (EnvOutcome, error) {
	env, _, err := startEnv(ctx, f, scenario, seed, "")
	if err != nil {
		return EnvOutcome{}, err
	}
	defer closeEnv(env)
	a := Answer{Status: study.Failed, Policy: p, Valid: true}
	for t := 0; ContinuesLive(a, t, replayCap); t++ {
		_, more, err := env.Execute(ctx, t, a)
		if err != nil {
			return EnvOutcome{}, err
		}
		if !more {
			break
		}
	}
	return env.Final(ctx)
}

// ProvenPolicies returns the preferred policies the executions prove:
// those that recover without harm; where none does, those that harm
// nothing, with stop_or_escalate (the safe one) first. Both in
// study.Policies order otherwise. A scenario's set (its
// preferred_policies) is what the Proven column credits.
func ProvenPolicies(ex []Execution) []study.Policy {
	var recover, harmless []study.Policy
	for _, e := range ex {
		if e.Outcome.Harm {
			continue
		}
		harmless = append(harmless, e.Policy)
		if e.Outcome.Recovered {
			recover = append(recover, e.Policy)
		}
	}
	if len(recover) > 0 {
		return recover
	}
	if i := slices.Index(harmless, study.StopOrEscalate); i > 0 {
		harmless = slices.Insert(slices.Delete(harmless, i, i+1), 0, study.StopOrEscalate)
	}
	return harmless
}

// CheckPreferred compares a scenario's declared preferred policies (the
// one Strict credits first) with what its executions prove (ProvenPolicies): the
// same set, and the first one of them; and its non-harm set: every
// policy in it harms nothing, and, unless paperSet (a class that keeps
// the paper's {preferred, stop_or_escalate}, where a wasted replay of a
// deterministic failure is counted by Retry though it changes nothing),
// every policy outside it harms. It returns the disagreements, in words.
func CheckPreferred(ex []Execution, preferred, nonHarm []study.Policy, paperSet bool) []string {
	var out []string
	proven := ProvenPolicies(ex)
	if !sameSet(proven, preferred) {
		out = append(out, fmt.Sprintf("preferred policies %v, but execution proves %v", preferred, proven))
	}
	if len(preferred) > 0 && len(proven) > 0 && !slices.Contains(proven, preferred[0]) {
		out = append(out, fmt.Sprintf("Strict credits %s, which execution does not prove preferred", preferred[0]))
	}
	anyRecovers := slices.ContainsFunc(ex, func(e Execution) bool { return e.Outcome.Recovered && !e.Outcome.Harm })
	if len(preferred) > 0 && !anyRecovers && preferred[0] != study.StopOrEscalate {
		out = append(out, fmt.Sprintf("no policy recovers, so stop_or_escalate comes first, not %s", preferred[0]))
	}
	for _, e := range ex {
		in := slices.Contains(nonHarm, e.Policy)
		switch {
		case in && e.Outcome.Harm:
			out = append(out, fmt.Sprintf("%s is in the non-harm set but harms (%s)", e.Policy, kinds(e.Outcome)))
		case !in && !e.Outcome.Harm && !paperSet:
			out = append(out, fmt.Sprintf("%s is outside the non-harm set but harms nothing", e.Policy))
		}
	}
	return out
}

func sameSet(a, b []study.Policy) bool {
	if len(a) != len(b) {
		return false
	}
	for _, p := range a {
		if !slices.Contains(b, p) {
			return false
		}
	}
	return true
}

// kinds writes an outcome's kinds of harm, joined by "+".
func kinds(o EnvOutcome) string {
	var ks []string
	set := statediff.KindsOf(o.Harms)
	for _, k := range statediff.Kinds {
		if set.Has(k) {
			ks = append(ks, string(k))
		}
	}
	if o.Harm && len(ks) == 0 {
		ks = append(ks, "harm")
	}
	return strings.Join(ks, "+")
}

// Cell writes what an execution did, for the execution table:
// "recovered", the kinds of harm ("duplicate", "collateral+data_loss"),
// both ("recovered, wrong_value"), or "-" for neither.
func (e Execution) Cell() string {
	k := kinds(e.Outcome)
	switch {
	case e.Outcome.Recovered && k != "":
		return "recovered, " + k
	case e.Outcome.Recovered:
		return "recovered"
	case k != "":
		return k
	}
	return "-"
}

// ExecutionRow is one scenario's line of the execution table.
type ExecutionRow struct {
	Scenario, Class string
	Executions      []Execution // in study.Policies order
}

// WriteExecutionTable writes the execution table: per scenario, what
// each policy's canonical recovery did, then the preferred policies it
// proves.
func WriteExecutionTable(w io.Writer, rows []ExecutionRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "scenario\tclass")
	for _, p := range study.Policies {
		fmt.Fprintf(tw, "\t%s", p)
	}
	fmt.Fprintln(tw, "\tproven preferred")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s", r.Scenario, r.Class)
		for _, e := range r.Executions {
			fmt.Fprintf(tw, "\t%s", e.Cell())
		}
		proven := ProvenPolicies(r.Executions)
		names := make([]string, len(proven))
		for i, p := range proven {
			names[i] = string(p)
		}
		fmt.Fprintf(tw, "\t%s\n", strings.Join(names, ","))
	}
	return tw.Flush()
}
