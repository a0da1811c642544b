package analysis

import (
	"fmt"
	"io"

	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// ParserLenient names the lenient parser (simulator.ParseLenient) in the
// sensitivity analysis; the primary counts always use the strict one.
const ParserLenient = "lenient"

// ParserSensitivity is the parser sensitivity analysis of a bundle: every
// counted decision re-scored with its stored responses re-parsed by the
// lenient parser, paired with its strict score. It never changes the
// primary counts.
type ParserSensitivity struct {
	Parser string            `json:"parser"` // ParserLenient
	Cells  []sensitivityCell `json:"cells"`  // in the order of calls.jsonl
}

// sensitivityCell pairs the strict and the lenient scores of one (model,
// prompt, condition) cell's counted decisions (error decisions excluded).
//
// The lenient parser accepts everything the strict one does, with the same
// labels, so only a final answer the strict parser found invalid can
// change: Invalid can only fall and Strict only rise.
type sensitivityCell struct {
	Model     string          `json:"model"`
	Prompt    string          `json:"prompt"`
	Condition study.Condition `json:"condition"`
	N         int             `json:"n"` // counted decisions
	// InvalidStrict and InvalidLenient count invalid final answers under
	// each parser; InvalidFixed the decisions invalid only under the
	// strict one, InvalidBroken those invalid only under the lenient one
	// (0 by construction).
	InvalidStrict  int `json:"invalid_strict"`
	InvalidLenient int `json:"invalid_lenient"`
	InvalidFixed   int `json:"invalid_fixed"`
	InvalidBroken  int `json:"invalid_broken"`
	// StrictStrict and StrictLenient count decisions whose final label is
	// the preferred policy under each parser; StrictGained and StrictLost
	// the discordant decisions.
	StrictStrict  int `json:"strict_strict"`
	StrictLenient int `json:"strict_lenient"`
	StrictGained  int `json:"strict_gained"`
	StrictLost    int `json:"strict_lost"`
	// InvalidDiff and StrictDiff are the paired differences lenient −
	// strict as proportions of N (−1 to 1; NaN when N is 0).
	InvalidDiff Num `json:"invalid_diff"`
	StrictDiff  Num `json:"strict_diff"`
	// InvalidP and StrictP are the exact two-sided McNemar p-values of the
	// discordant decisions (1 when there are none).
	InvalidP Num `json:"invalid_mcnemar_p"`
	StrictP  Num `json:"strict_mcnemar_p"`
	// ReplayCut counts decisions whose final answer the lenient parser
	// reads as a valid retry_now before the replay cap: the simulator,
	// which parses strictly, did not replay them, so their lenient
	// trajectory ends there and is scored as it stands.
	ReplayCut int `json:"replay_cut"`
}

// Sensitivity reads calls.jsonl (r, named name) once and pairs, per cell,
// the strict score of every counted decision (results.Group.Row, the one
// scoring path) with its score under the lenient parser, with replayCap
// the bundle's replay cap. Damaged lines and broken trajectories are
// skipped here (the primary analysis reports them); err is a read error.
func Sensitivity(r io.Reader, name string, replayCap int) (*ParserSensitivity, error) {
	gr := results.NewGroupReader(r, name)
	gr.Lenient()
	type key struct{ model, prompt, cond string }
	index := map[key]int{}
	ps := &ParserSensitivity{Parser: ParserLenient}
	for gr.Next() {
		g := gr.Group()
		row, err := g.Row()
		if err != nil || row.Status != results.StatusOK {
			continue
		}
		answers := make([]simulator.Answer, len(g.Heads))
		for i := range g.Heads {
			answers[i] = simulator.ParseLenient(g.Heads[i].Response)
			if g.Heads[i].ResponseSize > simulator.MaxAnswerBytes {
				answers[i] = simulator.Answer{Reason: simulator.ReasonTooLarge}
			}
		}
		h0 := &g.Heads[0]
		o := simulator.Score(simulator.Scoring{Answers: answers, Preferred: h0.Preferred, Proven: h0.PreferredSet, NonHarm: h0.NonHarm})
		rowInvalid, rowStrict := row.Outcome.Of(simulator.Invalid), row.Outcome.Of(simulator.Strict)
		oInvalid, oStrict := o.Values.Of(simulator.Invalid), o.Values.Of(simulator.Strict)
		k := key{row.Model, row.Prompt, row.Condition}
		i, ok := index[k]
		if !ok {
			i = len(ps.Cells)
			index[k] = i
			ps.Cells = append(ps.Cells, sensitivityCell{Model: row.Model, Prompt: row.Prompt, Condition: study.Condition(row.Condition)})
		}
		c := &ps.Cells[i]
		c.N++
		c.InvalidStrict += b2i(rowInvalid)
		c.InvalidLenient += b2i(oInvalid)
		c.InvalidFixed += b2i(rowInvalid && !oInvalid)
		c.InvalidBroken += b2i(!rowInvalid && oInvalid)
		c.StrictStrict += b2i(rowStrict)
		c.StrictLenient += b2i(oStrict)
		c.StrictGained += b2i(!rowStrict && oStrict)
		c.StrictLost += b2i(rowStrict && !oStrict)
		last := len(answers) - 1
		c.ReplayCut += b2i(simulator.Continues(answers[last], last, replayCap))
	}
	for i := range ps.Cells {
		c := &ps.Cells[i]
		c.InvalidDiff = Num(float64(c.InvalidLenient-c.InvalidStrict) / float64(c.N))
		c.StrictDiff = Num(float64(c.StrictLenient-c.StrictStrict) / float64(c.N))
		c.InvalidP = Num(stats.McNemarExact(c.InvalidFixed, c.InvalidBroken))
		c.StrictP = Num(stats.McNemarExact(c.StrictGained, c.StrictLost))
	}
	return ps, gr.Err()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteSensitivity prints the parser sensitivity table: per cell, Invalid
// and Strict under both parsers, the paired difference in percentage
// points, the discordant decisions and the McNemar p-value.
func WriteSensitivity(w io.Writer, ps *ParserSensitivity) error {
	fmt.Fprintln(w, "Parser sensitivity: every counted decision re-scored with its stored responses re-parsed by the")
	fmt.Fprintln(w, "lenient parser (text around the JSON object, any code fence, labels in any letter case; see")
	fmt.Fprintln(w, "docs/statistics.md). The counts above are the strict parser's and do not change. diff = lenient − strict")
	fmt.Fprintln(w, "in percentage points, paired by decision; fixed and gained are the discordant decisions (the")
	fmt.Fprintln(w, "lenient parser cannot lose a strict answer), p the exact two-sided McNemar test; cut counts")
	fmt.Fprintln(w, "decisions whose final answer reads as a valid retry_now only leniently (not replayed).")
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "model\tprompt\tcondition\tN\tInvalid strict\tInvalid lenient\tdiff\tfixed\tp\tStrict strict\tStrict lenient\tdiff\tgained\tp\tcut")
	for _, c := range ps.Cells {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%d\t%s\t%d\t%d\t%s\t%d\t%s\t%d\n", c.Model, c.Prompt, c.Condition, c.N,
			c.InvalidStrict, c.InvalidLenient, SignedPct(float64(c.InvalidDiff)), c.InvalidFixed, PValue(float64(c.InvalidP)),
			c.StrictStrict, c.StrictLenient, SignedPct(float64(c.StrictDiff)), c.StrictGained, PValue(float64(c.StrictP)), c.ReplayCut)
	}
	return tw.Flush()
}
