package inspect

import (
	"slices"
	"strconv"

	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// This file writes each score's explanation: the rule that set it (the
// column's Doc) and the values of the decision it read, so that a
// reader of the log sees why a score is 0 or 1 without the bundle. The
// explanations are appended to the sample as JSON strings: the rules
// escaped once, the values as they are read.

// extraDoc is the rule of the extra score, as the columns' Docs say
// theirs.
const extraDoc = "calls the harness made beyond the first (replays under stored replay, executed policies under live replay)"

// docs are the rules of the scores (scoreColumns), escaped as the inside
// of a JSON string, by column; extra's last.
var docs, extraDocEsc = func() ([][]byte, []byte) {
	out := make([][]byte, len(simulator.Columns))
	for i := range simulator.Columns {
		out[i] = appendEscaped(nil, simulator.Columns[i].Doc)
	}
	return out, appendEscaped(nil, extraDoc)
}()

// explainer holds what the explanations of one decision read, worked
// out once for all its scores (the texts escaped for a JSON string).
type explainer struct {
	d       *decision
	final   []byte // the final label, or "none (invalid: REASON)"
	labels  []byte // each turn's label, e.g. [retry_now stop_or_escalate]
	states  []byte // each turn's operation_status
	refused []string
}

// reset sets x to the explainer of d, whose calls after each turn
// are calls; last is the parse of d's last response when d has no final
// label (the reason it is invalid), unused otherwise.
func (x *explainer) reset(d *decision, calls []*toolCall, last *simulator.Answer) {
	x.d = d
	x.final = x.final[:0]
	if d.row.FinalLabel == "" {
		reason := last.Reason
		if reason == "" {
			reason = "unknown"
		}
		x.final = appendEscaped(append(x.final, "none (invalid: "...), reason)
		x.final = append(x.final, ')')
	} else {
		x.final = appendEscaped(x.final, d.row.FinalLabel)
	}
	// The row is what the columns were scored from: its final answer
	// wins over a parse of a response the reader may have cut, so the
	// last response is not parsed again here.
	x.labels, x.states = append(x.labels[:0], '['), append(x.states[:0], '[')
	for i := range d.calls {
		if i > 0 {
			x.labels, x.states = append(x.labels, ' '), append(x.states, ' ')
		}
		var label, status string
		if i < len(d.calls)-1 {
			a := simulator.ParseAnswer(d.calls[i].Response)
			label, status = orNone(string(a.Policy)), orNone(string(a.Status))
			if !a.Valid {
				label = "invalid"
			}
		} else {
			label, status = orNone(d.row.FinalLabel), orNone(d.row.FinalStatus)
			if d.row.FinalLabel == "" {
				label = "invalid"
			}
		}
		x.labels, x.states = appendEscaped(x.labels, label), appendEscaped(x.states, status)
	}
	x.labels, x.states = append(x.labels, ']'), append(x.states, ']')
	x.refused = x.refused[:0]
	for _, tc := range calls {
		if tc != nil && tc.refused != "" {
			x.refused = append(x.refused, tc.refused)
		}
	}
}

// orNone returns s, or "none" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// appendWords appends ss as [a b c], escaped.
func appendWords(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendEscaped(b, s)
	}
	return append(b, ']')
}

// appendPolicies appends ps as [a b c], escaped.
func appendPolicies(b []byte, ps []study.Policy) []byte {
	b = append(b, '[')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendEscaped(b, string(p))
	}
	return append(b, ']')
}

// appendJoined appends ss joined by "; ", escaped.
func appendJoined(b []byte, ss []string) []byte {
	for i, s := range ss {
		if i > 0 {
			b = append(b, "; "...)
		}
		b = appendEscaped(b, s)
	}
	return b
}

// appendExplanation appends the explanation of score c as a JSON
// string: "RULE (VALUES)".
func (x *explainer) appendExplanation(b []byte, c scoreColumn) []byte {
	b = append(b, '"')
	if c.col < 0 {
		b = append(b, extraDocEsc...)
		b = append(b, " (replays "...)
		b = strconv.AppendInt(b, x.d.row.Replays, 10)
	} else {
		b = append(b, docs[c.col]...)
		b = append(b, " ("...)
		b = x.appendValues(b, c.col)
	}
	return append(b, `)"`...)
}

// appendValues appends the values of the decision column col's rule
// reads, escaped.
func (x *explainer) appendValues(b []byte, col simulator.Col) []byte {
	first, last := &x.d.calls[0], &x.d.calls[len(x.d.calls)-1]
	env := last.Env
	recovered := func(b []byte) []byte {
		if env != nil {
			b = append(b, "; recovered "...)
			b = strconv.AppendBool(b, env.Recovered)
		}
		return b
	}
	switch col {
	case simulator.Strict:
		b = append(b, "final label "...)
		b = append(b, x.final...)
		b = append(b, "; preferred "...)
		return appendEscaped(b, string(first.Preferred))
	case simulator.Proven:
		b = append(b, "final label "...)
		b = append(b, x.final...)
		b = append(b, "; proven set "...)
		return appendPolicies(b, study.ProvenSet(first.Preferred, first.PreferredSet))
	case simulator.Cover, simulator.Invalid:
		b = append(b, "final label "...)
		return append(b, x.final...)
	case simulator.Retry:
		harm := "outside"
		if slices.Contains(first.NonHarm, study.RetryNow) {
			harm = "inside"
		}
		b = append(b, "labels "...)
		b = append(b, x.labels...)
		b = append(b, "; retry_now "...)
		b = append(b, harm...)
		b = append(b, " the non-harm set "...)
		return appendPolicies(b, first.NonHarm)
	case simulator.AnyFS:
		b = append(b, "statuses "...)
		b = append(b, x.states...)
		return recovered(b)
	case simulator.TerminalFS:
		b = append(b, "final status "...)
		b = appendEscaped(b, orNone(x.d.row.FinalStatus))
		return recovered(b)
	}
	if env == nil {
		return append(b, "no environment outcome"...)
	}
	switch col {
	case simulator.Recovered:
		b = append(b, "recovered "...)
		b = strconv.AppendBool(b, env.Recovered)
		if len(env.Missing) > 0 {
			b = append(b, "; missing "...)
			b = appendJoined(b, env.Missing)
		}
		return b
	case simulator.InvalidAction:
		if len(x.refused) == 0 {
			return append(b, "no call refused"...)
		}
		b = append(b, "refused "...)
		return appendJoined(b, x.refused)
	case simulator.Calls:
		b = append(b, "calls "...)
		return strconv.AppendInt(b, int64(env.Calls), 10)
	case simulator.LabMS:
		b = append(b, "lab clock "...)
		b = strconv.AppendInt(b, env.ClockMS, 10)
		return append(b, " ms"...)
	}
	// The harm columns.
	kinds := make([]string, 0, len(env.Harms))
	for _, h := range env.Harms {
		if k := string(h.Kind); !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	b = append(b, "harm kinds "...)
	return appendWords(b, kinds)
}
