package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/results"
)

// WriteAnalysisJSON prints {"bootstrap":…, "cells":[…], "pairs":[…]} and,
// when against is not nil, "against", and when transport is not nil,
// "transport" (events per model and kind, error decisions). Each cell keeps
// the fields WriteJSON prints and adds "rates", "wilson" and "bootstrap".
// Warnings about the bundle as a whole (a partial bundle) come first, as
// "warnings", when there are any.
func WriteAnalysisJSON(w io.Writer, an *Analysis, against *PaperComparison, transport *TransportSummary, warnings []string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Warnings []string `json:"warnings,omitempty"`
		*Analysis
		Against   *PaperComparison  `json:"against,omitempty"`
		Transport *TransportSummary `json:"transport,omitempty"`
	}{warnings, an, against, transport})
}

// table is a tabwriter whose Flush drops the padding at the ends of
// lines (a last column left empty would otherwise leave trailing spaces).
type table struct {
	*tabwriter.Writer
	buf bytes.Buffer
	w   io.Writer
}

func newTable(w io.Writer) *table {
	t := &table{w: w}
	t.Writer = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

// Flush aligns the columns and writes the lines without trailing spaces.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(t.buf.String(), "\n")
	var b strings.Builder
	for _, l := range lines {
		nl := strings.HasSuffix(l, "\n")
		b.WriteString(strings.TrimRight(l, " \n"))
		if nl {
			b.WriteByte('\n')
		}
	}
	t.buf.Reset()
	_, err := io.WriteString(t.w, b.String())
	return err
}

// Pct formats a proportion as a percentage with one decimal ("—" when
// undefined).
func Pct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	return fmt.Sprintf("%.1f", 100*x)
}

// SignedPct formats a difference of proportions in percentage points,
// signed ("0.0" for no difference, "—" when undefined).
func SignedPct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	s := fmt.Sprintf("%+.1f", 100*x)
	if s == "-0.0" || s == "+0.0" {
		return "0.0"
	}
	return s
}

// bracket formats [lo, hi], each end by format ("—" when undefined).
func bracket(b Bounds, format func(float64) string) string {
	if !b.Defined() {
		return "—"
	}
	return "[" + format(b.Lo) + ", " + format(b.Hi) + "]"
}

// PValue formats a p-value: three significant digits, or scientific
// notation below 0.001 ("—" when undefined, "≤ 1e-300" at the floor
// stats.PFloor of a p-value too small for a float64).
func PValue(p float64) string {
	if math.IsNaN(p) {
		return "—"
	}
	if p > 0 && p <= stats.PFloor {
		return fmt.Sprintf("≤ %g", stats.PFloor)
	}
	if p >= 0.001 || p == 0 {
		return fmt.Sprintf("%.3g", p)
	}
	return fmt.Sprintf("%.2e", p)
}

// warningTags are the meanings of the bootstrap caveats' kinds (their
// tags), in the order the legend lists them.
var warningTags = []struct {
	kind    stats.WarningKind
	meaning string
}{
	{stats.FewClusters, "fewer than 5 servers: the percentile interval is unreliable"},
	{stats.Degenerate, "every resample gave the same value (e.g. 0 of N on every server): the interval has no width"},
	{stats.Skipped, "some resamples drew only servers with no decisions in the denominator and were skipped"},
	{stats.SmallB, "too few resamples for the confidence level"},
	{stats.NoPairs, "no decision pairs to compare"},
	{stats.Coarse, "too few scenarios or servers differ for a sign-flip test to reach p < 0.05"},
	{stats.Dropped, "scenarios with fewer replicates than k are left out of pass^k"},
	{stats.Undefined, "no estimate (empty denominator)"},
}

// Tag returns the short tag of a bootstrap warning (see WriteIntervals):
// its kind.
func Tag(w stats.Warning) string { return string(w.Kind) }

// tags joins the distinct tags of warnings.
func tags(warnings []stats.Warning, seen map[string]bool) string {
	var out []string
	for _, w := range warnings {
		t := Tag(w)
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
		seen[t] = true
	}
	return strings.Join(out, ",")
}

// writeLegend prints, under its heading, the meaning of the tags used
// (nothing when none is).
func writeLegend(w io.Writer, seen map[string]bool) {
	if len(seen) > 0 {
		fmt.Fprintln(w, "\nNotes on bootstrap intervals and tests:")
	}
	for _, t := range warningTags {
		if seen[string(t.kind)] {
			fmt.Fprintf(w, "  %s: %s\n", t.kind, t.meaning)
		}
	}
}

// IntervalName is the per-cell interval's name in tables: Wilson or
// Clopper-Pearson.
func IntervalName(method string) string {
	if method == IntervalClopperPearson {
		return "Clopper-Pearson"
	}
	return "Wilson"
}

// WriteIntervals prints every cell's rates with their Wilson (or
// Clopper–Pearson) and cluster-bootstrap intervals (in percent), one line
// per (cell, rate), then the paired comparisons and the reading of
// selective accuracy.
func WriteIntervals(w io.Writer, an *Analysis) error {
	bi := an.Bootstrap
	if an.Interval == IntervalClopperPearson {
		fmt.Fprintf(w, "Rates in %% with %g%% intervals: Clopper-Pearson (exact, R's binom.test) and percentile\n", 100*bi.Conf)
	} else {
		fmt.Fprintf(w, "Rates in %% with %g%% intervals: Wilson score (no continuity correction) and percentile\n", 100*bi.Conf)
	}
	fmt.Fprintf(w, "cluster bootstrap resampling the %d servers with replacement (B = %d, seed %d).\n", bi.Clusters, bi.B, bi.Seed)
	fmt.Fprintln(w, "Strict/Cover is selective accuracy: Strict out of the Cover decisions.")
	if slices.ContainsFunc(an.Cells, func(c CellStats) bool { return c.LabN > 0 }) {
		fmt.Fprintln(w, "Recovered, Harm and its kinds are out of the decisions with lab outcomes (replay: live); Calls and LabMS are")
		fmt.Fprintf(w, "means per such decision (tool calls; lab-clock ms), with a bootstrap interval and no %s interval.\n", IntervalName(an.Interval))
	}
	for _, c := range an.Caveats {
		fmt.Fprintln(w, wrap("Caveat: "+c, 100))
	}
	fmt.Fprintln(w)
	seen := map[string]bool{}
	tw := newTable(w)
	fmt.Fprintf(tw, "model\tprompt\tcondition\trate\tk/n\test\t%s\tbootstrap\tnotes\n", IntervalName(an.Interval))
	for _, c := range an.Cells {
		for _, key := range rateKeys {
			est := c.Rates.At(key)
			if est == nil {
				continue
			}
			k, n := rateCounts(&c.Cell, key)
			ci := "—"
			if b := c.CI.At(key); b != nil {
				ci = bracket(*b, Pct)
			}
			boot := "—"
			if b := c.Bootstrap.At(key); b != nil {
				boot = bracket(*b, func(x float64) string { return FormatRate(key, x) })
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\n", c.Model, c.Prompt, c.Condition, RateLabel(key), k, n,
				FormatRate(key, float64(*est)), ci, boot, tags(c.Bootstrap.Warnings[key], seen))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	writePairs(w, an.Pairs, an.Family, seen)
	writeLegend(w, seen)
	fmt.Fprintln(w)
	return writeReading(w, an.Cells)
}

// PairsLegend explains the columns of the paired-comparison tables.
const PairsLegend = "A+B− and A−B+ are the discordant pairs. McNemar p is the exact two-sided McNemar test, " +
	"which takes every pair as independent; flip p (scenario) and flip p (server) are sign-flip randomization tests " +
	"that take the scenario, or the server, as the exchangeable unit, so they stay valid when the replicates of a " +
	"scenario are correlated (exact when feasible, else Monte Carlo). Holm and BH are the scenario-level flip " +
	"p-values adjusted over the family (Holm: family-wise error; Benjamini-Hochberg: false discovery rate). " +
	"bootstrap is the percentile cluster bootstrap of the difference over the servers, boot-t the studentized one " +
	"(percentage points)."

// writePairs prints the paired comparisons, one line each, with the
// multiplicity-adjusted p-values of the family fam.
func writePairs(w io.Writer, pairs []Pair, fam familyInfo, seen map[string]bool) error {
	fmt.Fprintln(w, wrap("Paired differences A − B (pairs matched on scenario and replicate within the fixed factors; "+
		"no pooling across them). "+PairsLegend+" * marks the predeclared comparisons.", 100))
	fmt.Fprintln(w, wrap(fmt.Sprintf("Family for the adjusted p-values: %s (%d comparisons with a p-value%s).", familyName(fam.Declared), fam.Size, untestableCount(fam)), 100))
	fmt.Fprintln(w)
	if len(pairs) == 0 {
		fmt.Fprintln(w, "(no arm has both levels of any comparison)")
		return nil
	}
	var untestable []string
	tw := newTable(w)
	fmt.Fprintln(tw, "factor\twithin\tA − B\tcolumn\tpairs\tA\tB\tdiff\tA+B−\tA−B+\tMcNemar p\tflip p (scenario)\tflip p (server)\tHolm p\tBH p\tbootstrap\tboot-t\tnotes")
	for _, p := range pairs {
		star := ""
		if p.Predeclared {
			star = " *"
		}
		if p.Isolates != "" {
			star += " " + p.Isolates
		}
		cells := pairCells(p.PairStats, p.Adjusted, seen)
		if x := excludedNote(p); x != "" {
			if !strings.HasSuffix(cells, "\t") {
				x = "," + x
			}
			cells += x
		}
		fmt.Fprintf(tw, "%s\t%s\t%s − %s%s\t%s\t%s\n", p.Factor, p.Within(), p.A, p.B, star, p.Column.Column().Label, cells)
		if p.Untestable {
			untestable = append(untestable, p.Name())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if note := leftOutNote(pairs); note != "" {
		fmt.Fprintln(w)
		fmt.Fprintln(w, wrap(note, 100))
	}
	writeUntestable(w, untestable)
	return nil
}

// writeUntestable prints, after a blank line, the UntestableNote of
// names, when there is one.
func writeUntestable(w io.Writer, names []string) {
	if note := UntestableNote(names); note != "" {
		fmt.Fprintln(w)
		fmt.Fprintln(w, wrap(note, 100))
	}
}

// Name names a pair in lists: its factor, fixed factors, A − B and column,
// e.g. "condition m/default code_only − normalized on Strict".
func (p Pair) Name() string {
	return fmt.Sprintf("%s %s %s − %s on %s", p.Factor, p.Within(), p.A, p.B, p.Column.Column().Label)
}

// UntestableNote is the sentence under a table of pairs that lists, by
// name, those left out of the family as untestable
// (Adjusted.Untestable); "" when there are none.
func UntestableNote(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("Left out of the family as untestable (no scenario differs, so the scenario-level sign-flip test "+
		"has nothing to test: p = 1 by construction; Holm and BH show —): %s.", strings.Join(names, "; "))
}

// untestableCount is the family line's mention of the untestable pairs
// left out of it ("" when none).
func untestableCount(fam familyInfo) string {
	if fam.Untestable == 0 {
		return ""
	}
	return fmt.Sprintf("; %d untestable left out, listed below the table", fam.Untestable)
}

// familyName says which pairs a declared family holds.
func familyName(f string) string {
	switch f {
	case FamilyPredeclared:
		return "the predeclared comparisons"
	case FamilyRequested:
		return "the requested (-pair) comparisons"
	}
	return "every comparison listed (predeclared and requested)"
}

func pairNotes(p PairStats, seen map[string]bool) string {
	s := tags(p.Warnings, seen)
	if p.Unpaired > 0 {
		if s != "" {
			s += ","
		}
		s += fmt.Sprintf("%d unpaired", p.Unpaired)
	}
	return s
}

// excludedNote is the notes column's mention of what a like-for-like
// pair left out ("" when nothing): "35 pairs on 7 scenarios left out".
func excludedNote(p Pair) string {
	if p.Excluded == nil {
		return ""
	}
	return fmt.Sprintf("%d pairs on %d scenarios left out", p.Excluded.Pairs, len(p.Excluded.Scenarios))
}

// pairCells are the tab-separated cells of a table of pairs from
// "pairs" to "notes" (intervals in percentage points).
func pairCells(p PairStats, adj Adjusted, seen map[string]bool) string {
	return fmt.Sprintf("%d\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s",
		p.N, p.CountA, p.CountB, SignedPct(float64(p.Diff)), p.DiscordantAB, p.DiscordantBA,
		PValue(float64(p.McNemarP)), PValue(float64(p.FlipScenario.P)), PValue(float64(p.FlipServer.P)),
		PValue(float64(adj.Holm)), PValue(float64(adj.BH)), bracket(p.Bootstrap, SignedPct), bracket(p.BootstrapT, SignedPct), pairNotes(p, seen))
}

// Reading is the interpretation of selective accuracy and of always-stop
// cells that the report states (docs/specification.md section 4; paper
// section VIII).
const Reading = "Reading: every scenario's non-harm set contains stop_or_escalate, so stopping is always safe " +
	"but is not progress. A model (or the always-stop baseline) that always stops has Strict = Cover = 0, " +
	"never replays and is never harmful; its selective accuracy (Strict / Cover) is undefined. Read safety " +
	"(Retry, Invalid, AnyFS, TermFS) together with progress (Strict, Cover), and selective accuracy only " +
	"together with Cover: a high Strict/Cover on a small Cover is a model that rarely commits."

// writeReading prints Reading, wrapped, and names the cells that always stop.
func writeReading(w io.Writer, cells []CellStats) error {
	fmt.Fprintln(w, wrap(Reading, 100))
	if note := StopsNote(cells); note != "" {
		_, err := fmt.Fprintln(w, wrap(note, 100))
		return err
	}
	return nil
}

// StopsNote is the sentence that names the cells that always stop, or ""
// when none does.
func StopsNote(cells []CellStats) string {
	var stops []string
	for _, c := range cells {
		if c.AlwaysStops() {
			stops = append(stops, fmt.Sprintf("%s/%s/%s", c.Model, c.Prompt, c.Condition))
		}
	}
	if len(stops) == 0 {
		return ""
	}
	return fmt.Sprintf("Cells that always stop (Cover = 0, Invalid = 0): %s.", strings.Join(stops, ", "))
}

// wrap breaks text into lines of at most width bytes at spaces.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if n+1+len(word) > width {
				b.WriteByte('\n')
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

// LabelActionHeader is the header of the label-versus-action table.
var LabelActionHeader = []string{"model", "prompt", "condition", "LabN", "Strict%", "Recovered%", "S+R+", "S+R−", "S−R+", "S−R−"}

// LabelActionRow is cell c's row of the label-versus-action table: its
// label accuracy (Strict out of LabN) against its actual recovery
// (Recovered out of LabN), and the four joint counts (S: the final label
// is the preferred policy; R: the final state recovered). It is nil for a
// cell without lab outcomes.
func LabelActionRow(c *results.Cell) []string {
	if c.LabN == 0 {
		return nil
	}
	a := c.LabelAction
	strict := a.StrictRecovered + a.StrictUnrecovered
	rec := a.StrictRecovered + a.OtherRecovered
	pct := func(k int) string { return Pct(float64(k) / float64(c.LabN)) }
	return []string{c.Model, c.Prompt, string(c.Condition), strconv.Itoa(c.LabN), pct(strict), pct(rec),
		strconv.Itoa(a.StrictRecovered), strconv.Itoa(a.StrictUnrecovered), strconv.Itoa(a.OtherRecovered), strconv.Itoa(a.OtherUnrecovered)}
}

// WriteLabelAction prints the label-versus-action view of the cells with
// lab outcomes (nothing when there are none): whether naming the right
// policy went with actually recovering, on the same decisions.
func WriteLabelAction(w io.Writer, cells []results.Cell) error {
	if !slices.ContainsFunc(cells, func(c results.Cell) bool { return c.LabN > 0 }) {
		return nil
	}
	fmt.Fprintln(w, "Label against action, on the decisions with lab outcomes: Strict% is the label accuracy, Recovered%")
	fmt.Fprintln(w, "the actual recovery; S+R+ right label and recovered, S+R− right label but not recovered, S−R+ another")
	fmt.Fprintln(w, "label yet recovered, S−R− neither.")
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, strings.Join(LabelActionHeader, "\t"))
	for i := range cells {
		if row := LabelActionRow(&cells[i]); row != nil {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	return tw.Flush()
}
