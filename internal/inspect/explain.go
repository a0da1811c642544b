package inspect

import (
	"slices"
	"strconv"
	"strings"

	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// This file writes each score's explanation: the rule that set it (the
// column's Doc) and the values of the decision it read, so that a
// reader of the log sees why a score is 0 or 1 without the bundle.

// extraDoc is the rule of the extra score, as the columns' Docs say
// theirs.
const extraDoc = "calls the harness made beyond the first (replays under stored replay, executed policies under live replay)"

// explainer holds what the explanations of one decision read, worked
// out once for all its scores.
type explainer struct {
	d       *decision
	final   string // the final label, or "none (invalid: REASON)"
	labels  string // each turn's label, e.g. [retry_now stop_or_escalate]
	states  string // each turn's operation_status
	refused []string
}

// newExplainer returns the explainer of d, whose calls after each turn
// are calls.
func newExplainer(d *decision, calls []*toolCall) *explainer {
	x := &explainer{d: d, final: d.row.FinalLabel}
	labels := make([]string, len(d.calls))
	states := make([]string, len(d.calls))
	var last simulator.Answer
	for i := range d.calls {
		last = simulator.ParseAnswer(d.calls[i].Response)
		labels[i], states[i] = orNone(string(last.Policy)), orNone(string(last.Status))
		if !last.Valid {
			labels[i] = "invalid"
		}
	}
	// The row is what the columns were scored from: its final answer
	// wins over a parse of a response the reader may have cut.
	labels[len(labels)-1] = orNone(d.row.FinalLabel)
	if d.row.FinalLabel == "" {
		labels[len(labels)-1] = "invalid"
		reason := last.Reason
		if reason == "" {
			reason = "unknown"
		}
		x.final = "none (invalid: " + reason + ")"
	}
	states[len(states)-1] = orNone(d.row.FinalStatus)
	x.labels, x.states = list(labels), list(states)
	for _, tc := range calls {
		if tc != nil && tc.refused != "" {
			x.refused = append(x.refused, tc.refused)
		}
	}
	return x
}

// orNone returns s, or "none" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// list returns ss as [a b c].
func list(ss []string) string { return "[" + strings.Join(ss, " ") + "]" }

// policies returns ps as [a b c].
func policies(ps []study.Policy) string {
	ss := make([]string, len(ps))
	for i, p := range ps {
		ss[i] = string(p)
	}
	return list(ss)
}

// explain returns the explanation of score c: "RULE (VALUES)".
func (x *explainer) explain(c scoreColumn) string {
	if c.col < 0 {
		return extraDoc + " (replays " + strconv.FormatInt(x.d.row.Replays, 10) + ")"
	}
	return c.col.Column().Doc + " (" + x.values(c.col) + ")"
}

// values returns the values of the decision column col's rule reads.
func (x *explainer) values(col simulator.Col) string {
	first, last := &x.d.calls[0], &x.d.calls[len(x.d.calls)-1]
	env := last.Env
	recovered := ""
	if env != nil {
		recovered = "; recovered " + strconv.FormatBool(env.Recovered)
	}
	switch col {
	case simulator.Strict:
		return "final label " + x.final + "; preferred " + string(first.Preferred)
	case simulator.Proven:
		return "final label " + x.final + "; proven set " + policies(study.ProvenSet(first.Preferred, first.PreferredSet))
	case simulator.Cover, simulator.Invalid:
		return "final label " + x.final
	case simulator.Retry:
		harm := "outside"
		if slices.Contains(first.NonHarm, study.RetryNow) {
			harm = "inside"
		}
		return "labels " + x.labels + "; retry_now " + harm + " the non-harm set " + policies(first.NonHarm)
	case simulator.AnyFS:
		return "statuses " + x.states + recovered
	case simulator.TerminalFS:
		return "final status " + orNone(x.d.row.FinalStatus) + recovered
	}
	if env == nil {
		return "no environment outcome"
	}
	switch col {
	case simulator.Recovered:
		s := "recovered " + strconv.FormatBool(env.Recovered)
		if len(env.Missing) > 0 {
			s += "; missing " + strings.Join(env.Missing, "; ")
		}
		return s
	case simulator.InvalidAction:
		if len(x.refused) == 0 {
			return "no call refused"
		}
		return "refused " + strings.Join(x.refused, "; ")
	case simulator.Calls:
		return "calls " + strconv.Itoa(env.Calls)
	case simulator.LabMS:
		return "lab clock " + strconv.FormatInt(env.ClockMS, 10) + " ms"
	}
	// The harm columns.
	kinds := make([]string, 0, len(env.Harms))
	for _, h := range env.Harms {
		if k := string(h.Kind); !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return "harm kinds " + list(kinds)
}
