// Package report writes a bundle's analysis as a report: report.md, a
// self-contained report.html (tables and figures inline, no network) and
// the figures as PNG and SVG files, drawn with gonum.org/v1/plot.
package report

import (
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// profile is the actionability profile table of the bundle's corpus.
type profile struct {
	N       int // scenarios
	Control study.ViewSummary
	Content study.ViewSummary
}

// ProfileOf summarizes the scenarios' profile coding.
func ProfileOf(scenarios []study.Scenario) *profile {
	return &profile{N: len(scenarios), Control: study.Summarize(scenarios, study.ControlView), Content: study.Summarize(scenarios, study.ContentView)}
}

// Input is everything a report shows.
type Input struct {
	Info     *analysis.BundleInfo // manifest.json facts; nil if unreadable
	Analysis *analysis.Analysis
	Paper    *analysis.PaperTable      // with Against: the published table, or nil
	Against  *analysis.PaperComparison // nil: no comparison section
	Power    *analysis.Power           // nil: no power section
	Profile  *profile                  // nil: ProfileNote says why
	// ProfileNote explains a missing profile table.
	ProfileNote string
	// Partial, when not "", says how the bundle falls short of complete
	// (analysis.BundleInfo.Partial): the report's title and first
	// paragraph then say that it is partial.
	Partial string
	// Warnings are printed first, one paragraph each (e.g. a run on
	// unconfirmed coding, results.Record.ProposedWarning).
	Warnings []string
}

// Files written by Write, inside the output directory.
const (
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
	PowerFile    = "power.md" // what WritePower writes beside its figure
	FigureDir    = "figures"
)

// Write renders the figures and writes report.md, report.html and
// figures/NAME.png and .svg into dir (created if needed). The files of a
// figure that is empty or absent this time are removed, so that a figure
// of an earlier report does not stand beside this one.
func Write(dir string, in *Input) ([]string, error) {
	figs, err := figures(in.Analysis, in.Profile)
	if err != nil {
		return nil, err
	}
	pk, err := passKFigure(in.Analysis)
	if err != nil {
		return nil, fmt.Errorf("figure %s: %w", passKFigureName, err)
	}
	figs = append(figs, pk)
	if in.Power != nil {
		f, err := powerFigure(in.Power)
		if err != nil {
			return nil, fmt.Errorf("figure power: %w", err)
		}
		figs = append(figs, f)
	}
	if err := os.MkdirAll(filepath.Join(dir, FigureDir), 0o755); err != nil {
		return nil, err
	}
	out := &outDir{dir: dir}
	drawn := map[string]bool{}
	for _, f := range figs {
		drawn[f.Name] = f.Empty == ""
		if err := out.figure(FigureDir, &f); err != nil {
			return out.written, err
		}
	}
	for _, name := range append(slices.Clone(figureNames), passKFigureName, PowerFigureName) {
		if drawn[name] {
			continue
		}
		for _, ext := range []string{".png", ".svg"} {
			if err := os.Remove(filepath.Join(dir, FigureDir, name+ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return out.written, err
			}
		}
	}
	doc := build(in, figs)
	var md, ht strings.Builder
	if err := doc.Markdown(&md); err != nil {
		return out.written, err
	}
	if err := doc.HTML(&ht); err != nil {
		return out.written, err
	}
	if err := out.put(MarkdownFile, []byte(md.String())); err != nil {
		return out.written, err
	}
	err = out.put(HTMLFile, []byte(ht.String()))
	return out.written, err
}

// document is a report as a sequence of blocks, rendered to Markdown or HTML.
type document struct {
	Title  string
	Blocks []block
}

// block is one element of a Doc: *Heading, *Para, *Table or *figureRef.
type block interface{ block() }

// heading is a section title (level 2) or subsection (level 3).
type heading struct {
	Level int
	Text  string
}

// para is a paragraph; `code` spans are kept.
type para struct{ Text string }

// table is a table with a header row; Right marks right-aligned columns.
type table struct {
	Header []string
	Rows   [][]string
	Right  []bool
}

// figureRef places a figure.
type figureRef struct{ Fig *figure }

// rightFrom is an empty table with header whose columns from the k-th
// (from 0) on are right-aligned.
func rightFrom(k int, header ...string) *table {
	t := &table{Header: header}
	for i := range header {
		t.Right = append(t.Right, i >= k)
	}
	return t
}

func (*heading) block()   {}
func (*para) block()      {}
func (*table) block()     {}
func (*figureRef) block() {}

func (d *document) h2(s string) { d.Blocks = append(d.Blocks, &heading{2, s}) }
func (d *document) h3(s string) { d.Blocks = append(d.Blocks, &heading{3, s}) }
func (d *document) p(format string, a ...any) {
	d.Blocks = append(d.Blocks, &para{fmt.Sprintf(format, a...)})
}
func (d *document) table(t *table) { d.Blocks = append(d.Blocks, t) }

// fig places a figure, or the sentence that stands for an empty one.
func (d *document) fig(f *figure) {
	switch {
	case f == nil:
	case f.Empty != "":
		d.p("%s", f.Empty)
	default:
		d.Blocks = append(d.Blocks, &figureRef{f})
	}
}

func ival(b analysis.Bounds, f func(float64) string) string {
	if !b.Defined() {
		return "—"
	}
	return f(b.Lo) + " to " + f(b.Hi)
}

// build assembles the report from its input and rendered figures.
func build(in *Input, figs []figure) *document {
	an := in.Analysis
	fig := func(name string) *figure {
		if i := slices.IndexFunc(figs, func(f figure) bool { return f.Name == name }); i >= 0 {
			return &figs[i]
		}
		return nil
	}
	d := &document{Title: "Results report"}
	if in.Partial != "" {
		d.Title = "Partial results report"
	}
	if in.Info != nil && in.Info.RunID != "" {
		d.Title += ": " + in.Info.RunID
	}
	for _, w := range in.Warnings {
		d.p("%s", w)
	}
	if in.Partial != "" {
		d.p("Warning: %s. Every count, rate, interval, comparison and figure below covers only the decisions the bundle holds.", in.Partial)
	}
	d.p("Written by `stress report`. Exact counts lead; every interval below is a sensitivity analysis of those counts (docs/specification.md section 4). Nothing is pooled across models, prompts or conditions.")
	d.h2("Study")
	d.study(in)

	d.h2("Counts")
	d.p("One row per model, prompt and condition; each count is out of N counted decisions, except Extra (a sum of replays). Strict: final label is the preferred policy. Proven: final label is one of the scenario's execution-proven preferred policies (Strict's among them; the same as Strict where a scenario declares no other). Cover: final label valid and not `stop_or_escalate`. Retry: chose `retry_now` while it is outside the non-harm set. Invalid: final answer unparseable or outside the vocabulary. AnyFS / TermFS: claimed `succeeded` at any / the final turn (every failure is verified). Errors: transport failures, not counted in N.")
	if lab(an) {
		d.p("Live replay: every policy the model chose (but `stop_or_escalate`) was executed in a fresh lab environment, so the lab columns come from the environment's final state, never from the labels. Recovered: the goal effect is present exactly once (read as the diff of the initial and the final state). Harm: a change that is neither the goal nor tolerated, counted by kind: Dup (the goal effect more than once), WrongV (the task's record with other values), Collat (a change to anything else), Loss (something that was there is gone), Incompl (a goal left half done, where the scenario declares that harm). Calls: tool calls made (a sum). LabMS: lab-clock milliseconds to the final state (a sum). Extra counts the executed policies. AnyFS / TermFS count a `succeeded` claim only in a decision that did not recover. — marks a cell without lab outcomes.")
	}
	d.counts(an)

	if len(an.Coverage) > 0 {
		d.h2("Coverage")
		d.p("%s", analysis.CoverageText)
		t := rightFrom(1, "condition", "expresses", "of", "not expressed")
		for _, c := range an.Coverage {
			t.Rows = append(t.Rows, []string{string(c.Condition), strconv.Itoa(c.Expressed), strconv.Itoa(c.Scenarios), strings.Join(c.Unexpressed, ", ")})
		}
		t.Right[3] = false
		d.table(t)
	}

	d.h2("Rates and intervals")
	ciText := "Wilson: score interval without continuity correction."
	if an.Interval == analysis.IntervalClopperPearson {
		ciText = "Clopper-Pearson: the exact interval from Beta quantiles (R's `binom.test`), at least the nominal coverage for every rate."
	}
	d.p("Rates in %% of N with %g%% intervals. %s Bootstrap: percentile cluster bootstrap resampling the %d servers (the corpus' clusters) with replacement, B = %d, seed %d, the same seed for every interval.",
		100*an.Bootstrap.Conf, ciText, an.Bootstrap.Clusters, an.Bootstrap.B, an.Bootstrap.Seed)
	for _, c := range an.Caveats {
		d.p("Caveat: %s", c)
	}
	if lab(an) {
		d.p("Recovered, Harm and its kinds are in %% of the decisions with lab outcomes; Calls and LabMS are means per such decision (tool calls; lab-clock ms) with a bootstrap interval of the mean and no Wilson interval.")
	}
	d.rates(an)
	d.fig(fig("strict-cover"))

	if ks := analysis.PassKShown(an.Cells); len(ks) > 0 {
		d.h2("Consistency across replicates (pass^k)")
		d.passK(an, ks)
		d.fig(fig(passKFigureName))
	}

	d.h2("Paired comparisons")
	d.p("Differences A − B in percentage points between two levels of a factor (conditions of the same model and prompt; prompts of the same model and condition; models under the same prompt and condition), over decisions matched on scenario and replicate (the seeds are paired). %s Predeclared: code_only − normalized (the only answer-free comparison) and structured − prose (two disclosures of the answer), on Strict. One subsection per contrast.", analysis.PairsLegend)
	if slices.ContainsFunc(an.Pairs, func(p analysis.Pair) bool { return p.Predeclared && p.Column == simulator.Proven }) {
		d.p("Some scenario of the study declares more than one execution-proven preferred policy, so each predeclared comparison on Strict is made on Proven too, right after it, and both are in the family.")
	}
	if slices.ContainsFunc(an.Pairs, func(p analysis.Pair) bool { return p.Isolates != "" }) {
		d.p("The conditions of the format × wording × failure-statement factorial and the category contract's delivery channels add predeclared comparisons on Strict, each named with what it isolates: format (JSON − one sentence) at a fixed wording and statement, wording (the exact label − a fixed paraphrase) at a fixed format and statement, the failure statement (with − without) at a fixed format and wording, and a dropped channel (structuredContent only or the text copy only − both).")
	}
	family := fmt.Sprintf("Family for the adjusted p-values: %s; %d comparisons with a p-value, adjusted together.", familyText(an.Family.Declared), an.Family.Size)
	switch n := an.Family.Untestable; {
	case n == 1:
		family += " 1 untestable comparison is left out of it, named below the tables."
	case n > 1:
		family += fmt.Sprintf(" %d untestable comparisons are left out of it, named below the tables.", n)
	}
	d.p("%s", family)
	d.pairs(an)
	var untestable []string
	for _, p := range an.Pairs {
		if p.Untestable {
			untestable = append(untestable, p.Name())
		}
	}
	if note := analysis.UntestableNote(untestable); note != "" {
		d.p("%s", note)
	}

	d.h2("Selective accuracy and stopping")
	d.selective(an)

	if lab(an) {
		d.h2("Label against action")
		d.p("The same decisions judged twice: by the label (Strict: the final label is the preferred policy) and by the state (Recovered: the goal effect is present exactly once). S+R+ right label and recovered; S+R− right label but not recovered (under task `act`: the call the model wrote did not do it); S−R+ another label yet recovered; S−R− neither. Percentages are of LabN, the decisions with lab outcomes.")
		d.labelAction(an)
		d.fig(fig("label-action"))
	}

	d.h2("Replays")
	d.p("Needless identical replays: Retry counts decisions that chose `retry_now` at least once although it is not in the non-harm set; Extra counts the replays that followed (at most 3 per decision).")
	d.fig(fig("extra"))

	if in.Against != nil && in.Paper != nil {
		d.h2("Against the paper")
		d.against(in.Paper, in.Against)
	}

	if in.Power != nil {
		d.h2("Power and design")
		powerSection(d, in.Power, fig(PowerFigureName))
	}

	d.h2("Actionability profile (Table I)")
	if in.Profile != nil {
		d.profile(in.Profile)
		d.fig(fig("profile"))
	} else {
		d.p("%s", in.ProfileNote)
	}

	d.h2("Methods")
	d.p("Wilson (1927) score interval: the p whose score test |p̂ − p| / sqrt(p(1 − p)/n) ≤ z does not reject, z = Φ⁻¹(0.975) for 95%%; equal to R's `prop.test(k, n, correct = FALSE)`. Selective accuracy uses k = Strict, n = Cover.")
	d.p("Cluster bootstrap: each of B resamples draws as many servers as the cell has, uniformly with replacement, keeping each server's decisions together, and computes the ratio of the drawn servers' summed counts to their summed denominators, from per-server sufficient statistics (O(servers) per resample); the interval is the %g%% percentile interval with Hyndman–Fan type-7 quantiles (Efron & Tibshirani 1993; Davison & Hinkley 1997, §3.8). Warnings travel with the values: fewer than 5 servers, every resample equal (degenerate), resamples with an empty denominator skipped.", 100*an.Bootstrap.Conf)
	d.p("Studentized cluster bootstrap (boot-t): each resample's difference is standardized by its own cluster-robust (CR1) standard error, and the interval is the estimate minus the resampled t quantiles times the sample's standard error (Efron & Tibshirani 1993, ch. 12), clipped to ±100 points. In 1,000 simulated studies of the paper's design (10 servers, 21 scenarios, 5 replicates, known effect and within-scenario correlation) the percentile interval covered 89–92%% and the studentized one 93.5–96%% for a nominal 95%% (`go test ./analysis/stats -run Coverage -stats.coverage`).")
	d.p("Sign-flip randomization test: per cluster (scenario or server) the sum of the pairs' differences; under H₀ each cluster's sign is a fair coin whatever the correlation inside it (Fisher 1935; Good 2005), so p = P(|Σ±dᵢ| ≥ |Σdᵢ|), exact by convolution of the integer sums (Monte Carlo, p = (1 + hits)/(1 + draws), only beyond 5·10⁷ steps). With m clusters that differ no p is below 2^(1−m): `coarse` marks tests that cannot reach the level. With one pair per cluster it is McNemar's test.")
	if len(analysis.PassKShown(an.Cells)) > 0 {
		d.p("pass^k (Yao et al. 2024, τ-bench): for a scenario run n times with c successes, C(c, k)/C(n, k) is the unbiased estimator of the chance that k independent replicates all succeed (the share of the k-subsets of its replicates that all succeeded; its expectation is p^k for Bernoulli(p) replicates); a cell's pass^k is its mean over the scenarios with at least k replicates, each weighing the same, and its interval the percentile cluster bootstrap of that mean with each server's scenarios kept together.")
	}
	d.p("Multiplicity: Holm (1979) step-down and Benjamini–Hochberg (1995) step-up adjustments of the scenario-level sign-flip p-values over the declared family, equal to R's `p.adjust(p, \"holm\")` and `p.adjust(p, \"BH\")`.")
	d.p("McNemar (1947) exact test: under H₀ the discordant pairs split as Binomial(b + c, 1/2); p = min(1, 2·P(X ≤ min(b, c))), equal to R's `binom.test(min(b, c), b + c)`. It takes the pairs as independent, which the replicates of a scenario are not. The tables round; the JSON output of `stress analyze -json` and `stress compare -json` prints every number at full precision (the shortest decimal that reads back as the same float64).")
	return d
}

func (d *document) study(in *Input) {
	an := in.Analysis
	decisions, errs := 0, 0
	for _, c := range an.Cells {
		decisions += c.N + c.Errors
		errs += c.Errors
	}
	if in.Info == nil {
		d.p("manifest.json could not be read; %d decisions (%d transport errors) on %d servers.", decisions, errs, an.Bootstrap.Clusters)
		return
	}
	bi := in.Info
	var models []string
	for _, m := range bi.Manifest.Models {
		models = append(models, fmt.Sprintf("`%s` (%s `%s`)", m.Name, m.Backend, m.Model))
	}
	var conds []string
	for _, c := range bi.Manifest.Conditions {
		conds = append(conds, "`"+string(c)+"`")
	}
	var prompts []string
	for _, p := range bi.Prompts {
		prompts = append(prompts, fmt.Sprintf("`%s` (sha256 %.12s…)", p.Name, p.SHA256))
	}
	held := fmt.Sprintf("%d (%d transport errors, not counted)", decisions, errs)
	if decisions != bi.Decisions {
		held = fmt.Sprintf("%d of the %d the bundle holds when complete (%d transport errors, not counted)", decisions, bi.Decisions, errs)
	}
	rows := [][]string{
		{"run", "`" + bi.RunID + "`"},
		{"study", fmt.Sprintf("`%s` from `%s`", bi.Manifest.Name, bi.Source)},
		{"models", strings.Join(models, ", ")},
		{"prompts", strings.Join(prompts, ", ")},
		{"conditions", strings.Join(conds, ", ")},
		{"replicates, study seed", fmt.Sprintf("%d, %d", bi.Manifest.Replicates, bi.Manifest.Seed)},
		{"corpus", fmt.Sprintf("%d files, %d servers", len(bi.CorpusFiles), an.Bootstrap.Clusters)},
		{"decisions", held},
	}
	if bi.Manifest.Live() {
		rows = append(rows, []string{"replay", "live: each policy the model chose was executed in a fresh, seeded environment"})
	}
	d.table(&table{Header: []string{"item", "value"}, Rows: rows})
}

// lab reports whether some cell has decisions with lab outcomes (live
// replay): the lab columns are shown only then.
func lab(an *analysis.Analysis) bool {
	return slices.ContainsFunc(an.Cells, func(c analysis.CellStats) bool { return c.LabN > 0 })
}

func (d *document) counts(an *analysis.Analysis) {
	lab := lab(an)
	t := rightFrom(3, analysis.CountsHeader(lab)...) // the counts
	for _, c := range an.Cells {
		t.Rows = append(t.Rows, analysis.CountsRow(&c.Cell, lab))
	}
	d.table(t)
}

func (d *document) rates(an *analysis.Analysis) {
	header := []string{"model", "prompt", "condition", "interval"}
	right := []bool{false, false, false, false}
	keys := analysis.RateKeysOf(an.Cells)
	for _, k := range keys {
		header = append(header, analysis.RateLabel(k))
		right = append(right, true)
	}
	t := &table{Header: header, Right: right}
	notes := map[string]bool{}
	for _, c := range an.Cells {
		est := []string{c.Model, c.Prompt, string(c.Condition), "estimate"}
		wil := []string{"", "", "", analysis.IntervalName(an.Interval)}
		boot := []string{"", "", "", "bootstrap"}
		for _, k := range keys {
			format := func(x float64) string { return analysis.FormatRate(k, x) }
			if c.Rates.At(k) == nil {
				est, wil, boot = append(est, "—"), append(wil, "—"), append(boot, "—")
				continue
			}
			est = append(est, format(float64(*c.Rates.At(k))))
			w := "—"
			if b := c.CI.At(k); b != nil {
				w = ival(*b, format)
			}
			wil = append(wil, w)
			boot = append(boot, tagged(ival(*c.Bootstrap.At(k), format), c.Bootstrap.Warnings[k], notes))
		}
		t.Rows = append(t.Rows, est, wil, boot)
	}
	d.table(t)
	d.notes(notes)
}

// notes explains the warning tags used.
func (d *document) notes(seen map[string]bool) {
	var parts []string
	for _, t := range []struct {
		tag  stats.WarningKind
		text string
	}{
		{stats.Degenerate, "intervals of zero width (such as 0.0 to 0.0) are degenerate: every resample gave the same value, e.g. the cell is 0 or 100% on every server"},
		{stats.FewClusters, "fewer than 5 servers, so the percentile interval is unreliable"},
		{stats.Skipped, "some resamples drew only servers with an empty denominator and were skipped"},
		{stats.SmallB, "too few resamples for the confidence level"},
		{stats.Undefined, "no estimate (empty denominator)"},
		{stats.NoPairs, "no matched pairs"},
		{stats.Dropped, "scenarios with fewer replicates than k are left out of pass^k"},
	} {
		if seen[string(t.tag)] {
			parts = append(parts, "`"+string(t.tag)+"`: "+t.text)
		}
	}
	if len(parts) > 0 {
		d.p("Bootstrap notes. %s.", strings.Join(parts, "; "))
	}
}

// tagged appends to interval b (unless "—") the distinct tags of
// warnings, but degenerate (visible: zero width), and marks every tag in
// notes.
func tagged(b string, warnings []stats.Warning, notes map[string]bool) string {
	var tags []string
	for _, w := range warnings {
		tg := analysis.Tag(w)
		notes[tg] = true
		if !slices.Contains(tags, tg) && tg != string(stats.Degenerate) {
			tags = append(tags, tg)
		}
	}
	if len(tags) > 0 && b != "—" {
		b += " (" + strings.Join(tags, ", ") + ")"
	}
	return b
}

func (d *document) pairs(an *analysis.Analysis) {
	if len(an.Pairs) == 0 {
		d.p("No combination of the other factors has both levels of any comparison.")
		return
	}
	var specs []string
	for _, p := range an.Pairs {
		if !slices.Contains(specs, p.Spec) {
			specs = append(specs, p.Spec)
		}
	}
	notes := map[string]bool{}
	for _, spec := range specs {
		var rows []analysis.Pair
		for _, p := range an.Pairs {
			if p.Spec == spec {
				rows = append(rows, p)
			}
		}
		first := rows[0]
		title := fmt.Sprintf("%s: %s − %s on %s", first.Factor, first.A, first.B, first.Column.Column().Label)
		switch {
		case first.Isolates != "":
			title += " (predeclared: " + first.Isolates + ")"
		case first.Predeclared:
			title += " (predeclared)"
		}
		d.h3(title)
		if first.LikeForLike {
			d.p("%s", leftOutText(rows))
		}
		t := rightFrom(1, "within", "pairs", "A", "B", "diff (pp)", "A+B−", "A−B+", "McNemar p", "flip p (scenario)", "flip p (server)", "Holm p", "BH p", "bootstrap (pp)", "boot-t (pp)", "unpaired")
		for _, p := range rows {
			b := tagged(ival(p.Bootstrap, analysis.SignedPct), p.Warnings, notes)
			t.Rows = append(t.Rows, []string{p.Within(), strconv.Itoa(p.N), strconv.Itoa(p.CountA), strconv.Itoa(p.CountB),
				analysis.SignedPct(float64(p.Diff)), strconv.Itoa(p.DiscordantAB), strconv.Itoa(p.DiscordantBA), analysis.PValue(float64(p.McNemarP)),
				analysis.PValue(float64(p.FlipScenario.P)), analysis.PValue(float64(p.FlipServer.P)),
				analysis.PValue(float64(p.Holm)), analysis.PValue(float64(p.BH)), b, ival(p.BootstrapT, analysis.SignedPct), strconv.Itoa(p.Unpaired)})
		}
		d.table(t)
	}
	d.notes(notes)
}

// leftOutText says what the rows of one like-for-like contrast paired
// and left out: the scenarios one of its conditions does not express,
// named, and their pairs in each arm.
func leftOutText(rows []analysis.Pair) string {
	first := rows[0]
	text := fmt.Sprintf("Like-for-like: only the scenarios both `%s` and `%s` express are paired (see Coverage).", first.A, first.B)
	lo := analysis.LeftOutOf(rows)
	if len(lo) == 0 {
		return text + " None was left out."
	}
	var counts []string
	same := true
	for _, p := range rows {
		n := 0
		if p.Excluded != nil {
			n = p.Excluded.Pairs
		}
		same = same && (rows[0].Excluded != nil && n == rows[0].Excluded.Pairs)
		counts = append(counts, fmt.Sprintf("%d in %s", n, p.Within()))
	}
	pairs := strings.Join(counts, ", ")
	if same {
		pairs = fmt.Sprintf("%d in each arm", rows[0].Excluded.Pairs)
	}
	return fmt.Sprintf("%s Left out, their decisions neither paired nor unpaired: %s (%d scenarios; pairs: %s).",
		text, strings.Join(lo[0].Scenarios, ", "), len(lo[0].Scenarios), pairs)
}

// familyText says which comparisons a declared family holds.
func familyText(f string) string {
	switch f {
	case analysis.FamilyPredeclared:
		return "the predeclared comparisons"
	case analysis.FamilyRequested:
		return "the requested (-pair) comparisons"
	}
	return "every comparison below (predeclared and requested)"
}

// powerSection adds the power table, the contrasts' models and the
// figure f (may be nil) to d.
func powerSection(d *document, pw *analysis.Power, f *figure) {
	d.p("%s", analysis.PowerText(pw))
	for _, n := range analysis.PowerNotes(pw) {
		d.p("%s.", n)
	}
	t := rightFrom(1, analysis.PowerHeader...)
	t.Rows = analysis.PowerRows(pw)
	d.table(t)
	for _, s := range analysis.SmallestDesign(pw, 0.8) {
		d.p("%s", s)
	}
	d.fig(f)
}

func (d *document) selective(an *analysis.Analysis) {
	d.p("Selective accuracy is Strict / Cover: how often a committed (non-stop, valid) answer is the preferred policy. Its Wilson interval takes k = Strict and n = Cover; its bootstrap resamples servers with per-server N = Cover and Sum = Strict.")
	t := rightFrom(3, "model", "prompt", "condition", "Strict/Cover", "%", "Wilson", "bootstrap")
	for _, c := range an.Cells {
		t.Rows = append(t.Rows, []string{c.Model, c.Prompt, string(c.Condition), fmt.Sprintf("%d/%d", c.Count(simulator.Strict), c.Count(simulator.Cover)),
			analysis.Pct(float64(c.Rates.Selective)), ival(c.CI.Selective, analysis.Pct), ival(c.Bootstrap.Selective, analysis.Pct)})
	}
	d.table(t)
	d.p("%s", analysis.Reading)
	if note := analysis.StopsNote(an.Cells); note != "" {
		d.p("%s", note)
	}
}

func (d *document) against(t *analysis.PaperTable, pc *analysis.PaperComparison) {
	d.p("Source: %s", t.Citation)
	d.p("Published setup: %s %s", t.Setup, t.Note)
	for _, m := range pc.Matches {
		d.p("Run model %s is %s by its %s `%s`.", m.Model, m.PaperModel, m.By, m.Value)
	}
	d.p("p: Fisher's exact test of the run's count against the paper's (two-sided); verdict at %g%% after Holm over the cell's six columns. Caveat: %s", 100*pc.Level, pc.Caveat)
	tb := &table{Header: []string{"paper model", "condition", "source", "N", "Strict", "Cover", "Retry", "Invalid", "AnyFS", "TermFS", "Extra", "verdict"},
		Right: []bool{false, false, false, true, true, true, true, true, true, true, true, false}}
	row := func(a, b, c string, n analysis.Counts, signed bool) []string {
		r := []string{a, b, c}
		for _, x := range []int{n.N, n.Strict, n.Cover, n.Retry, n.Invalid, n.AnyFS, n.TerminalFS, n.Extra} {
			if signed && x != 0 {
				r = append(r, fmt.Sprintf("%+d", x))
			} else {
				r = append(r, strconv.Itoa(x))
			}
		}
		return append(r, "")
	}
	for _, l := range pc.Rows {
		tb.Rows = append(tb.Rows, row(l.PaperModel, l.Condition, "paper", l.Paper, false))
		if l.Run == nil {
			tb.Rows = append(tb.Rows, []string{"", "", "run: no such cell", "—", "—", "—", "—", "—", "—", "—", "—", ""})
			continue
		}
		tb.Rows = append(tb.Rows, row("", "", "run "+l.Model+"/"+l.Prompt, *l.Run, false))
		tb.Rows = append(tb.Rows, row("", "", "diff (run − paper)", *l.Diff, true))
		if len(l.Tests) > 0 {
			r := []string{"", "", "p (Fisher)", ""}
			for _, ct := range l.Tests {
				r = append(r, analysis.PValue(float64(ct.P)))
			}
			tb.Rows = append(tb.Rows, append(r, "", analysis.Verdict(l.Consistent, pc.Level)))
		}
	}
	d.table(tb)
	if len(pc.Unmatched) > 0 {
		d.p("Run models not in the paper: %s.", strings.Join(pc.Unmatched, ", "))
	}
}

var coordinateNames = map[string]string{
	"D": "failure detection", "P": "coarse policy", "C": "cause/subtype",
	"T": "repair target", "E": "executable repair", "R": "replay constraints",
}

func (d *document) profile(pr *profile) {
	d.p("Separately coded capabilities for %d observations of the bundle's corpus (coordinates are not cumulative).", pr.N)
	t := rightFrom(1, "Capability", "Control", "Content-assisted")
	for _, c := range study.Coordinates {
		t.Rows = append(t.Rows, []string{c + " " + coordinateNames[c], strconv.Itoa(pr.Control.Counts[c]), strconv.Itoa(pr.Content.Counts[c])})
	}
	d.table(t)
	prof := func(s study.ViewSummary) string {
		var parts []string
		for _, p := range s.SortedProfiles() {
			parts = append(parts, fmt.Sprintf("%s ×%d", p, s.Profiles[p]))
		}
		return strings.Join(parts, ", ")
	}
	d.p("Profiles (bits D/P/C/T/E/R): control %s; content-assisted %s. Incomparable pairs: control %d, content-assisted %d.",
		prof(pr.Control), prof(pr.Content), pr.Control.Incomparable, pr.Content.Incomparable)
}

// Markdown writes the document as GitHub-flavoured Markdown; figures are
// linked as figures/NAME.png (with the SVG next to it). Text is written as
// HTML shows it (mdInline): a bundle path or name with Markdown or HTML
// in it reads as itself.
func (d *document) Markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# " + mdInline(d.Title, false) + "\n")
	for _, bl := range d.Blocks {
		b.WriteString("\n")
		switch x := bl.(type) {
		case *heading:
			b.WriteString(strings.Repeat("#", x.Level) + " " + mdInline(x.Text, false) + "\n")
		case *para:
			b.WriteString(mdInline(x.Text, true) + "\n")
		case *table:
			cell := func(s string) string { return strings.ReplaceAll(mdInline(s, false), "|", `\|`) }
			b.WriteString("|")
			for _, h := range x.Header {
				b.WriteString(" " + cell(h) + " |")
			}
			b.WriteString("\n|")
			for i := range x.Header {
				if i < len(x.Right) && x.Right[i] {
					b.WriteString("---:|")
				} else {
					b.WriteString("---|")
				}
			}
			b.WriteString("\n")
			for _, r := range x.Rows {
				b.WriteString("|")
				for _, c := range r {
					b.WriteString(" " + cell(c) + " |")
				}
				b.WriteString("\n")
			}
		case *figureRef:
			f := x.Fig
			fmt.Fprintf(&b, "![%s](%s/%s.png)\n\n*%s* %s ([SVG](%s/%s.svg))\n", mdInline(f.Title, false), FigureDir, f.Name, mdInline(f.Title, false), mdInline(f.Caption, false), FigureDir, f.Name)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdInline writes a block's text as Markdown that means what inline
// makes of it in HTML: backticks pair into `code` spans in order (an
// unmatched one is literal), and everything else is literal text. Outside
// code spans every character that could start Markdown or HTML is
// backslash-escaped (\ * [ ] < > # ~, & before a name or #, _ but
// inside a word, and, when para says the text is a paragraph, a leading -
// or list number); line breaks become
// spaces, so no text starts a block of its own; code spans take their
// text as it is, an empty one is dropped and adjacent ones are joined (as
// they look in HTML), so that no run of backticks pairs otherwise than in
// inline. A table cell escapes | besides.
//
// Note: report.html escapes every text through inline; report.md used to
// take the text raw, so a bundle path holding <img src=x onerror=…>,
// [link](javascript:…) or a line "# heading" was markup in report.md.
func mdInline(s string, para bool) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	s = strings.TrimLeft(s, " \t")
	parts := strings.Split(s, "`")
	var b strings.Builder
	open := false // a code span is written up to its content, not closed
	for i, p := range parts {
		switch {
		case i%2 == 1 && i < len(parts)-1: // a code span
			if p == "" {
				continue
			}
			if !open {
				b.WriteString("`")
				open = true
			}
			b.WriteString(p)
		default:
			if open && p == "" && i < len(parts)-1 {
				continue // between two code spans: join them
			}
			if open {
				b.WriteString("`")
				open = false
			}
			if i%2 == 1 { // an unmatched backtick
				b.WriteString("\\`")
			}
			mdEscape(&b, p, para && b.Len() == 0)
		}
	}
	if open {
		b.WriteString("`")
	}
	return b.String()
}

// mdEscape writes plain text s to b with Markdown's special characters
// backslash-escaped (mdInline); first says s starts a paragraph.
func mdEscape(b *strings.Builder, s string, first bool) {
	alnum := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	rs := []rune(s)
	if first {
		n := 0
		for n < len(rs) && rs[n] >= '0' && rs[n] <= '9' {
			n++
		}
		switch {
		case len(rs) > 0 && (rs[0] == '-' || rs[0] == '+'):
			b.WriteByte('\\')
		case n > 0 && n < len(rs) && (rs[n] == '.' || rs[n] == ')') && (n+1 == len(rs) || rs[n+1] == ' '):
			b.WriteString(string(rs[:n]) + "\\")
			rs = rs[n:]
		}
	}
	for i, r := range rs {
		esc := false
		switch r {
		case '\\', '*', '[', ']', '<', '>', '#', '~':
			esc = true
		case '&':
			esc = i+1 < len(rs) && (alnum(rs[i+1]) || rs[i+1] == '#')
		case '_':
			esc = i == 0 || i+1 == len(rs) || !alnum(rs[i-1]) || !alnum(rs[i+1])
		}
		if esc {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}

// inline escapes text for HTML and turns `code` spans into elements.
func inline(s string) string {
	var b strings.Builder
	parts := strings.Split(s, "`")
	for i, p := range parts {
		switch {
		case i%2 == 1 && i < len(parts)-1:
			b.WriteString("<code>" + html.EscapeString(p) + "</code>")
		case i%2 == 1: // an unmatched backtick
			b.WriteString("`" + html.EscapeString(p))
		default:
			b.WriteString(html.EscapeString(p))
		}
	}
	return b.String()
}

// slug makes an HTML id of a heading: lower case, runs of other
// characters as one hyphen.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}

// wideColumns is the number of columns from which a table is set small
// (class wide): the paired comparisons have 15, the counts 13 and the
// rates of a stored-replay study 12 (with Proven beside Strict: 1231 px
// at full size in a 1200 px body), as the comparison with the paper.
const wideColumns = 12

// css is the page's style. Note: tables fit the body (1200 px at most)
// without a scrollbar: headers wrap, cells do not (a number or a label
// broken at its hyphen reads badly), and a wide table is set small. In a
// window narrower than the body at full width, cells wrap too; only a
// phone-sized one still scrolls a table sideways.
const css = `body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:1em 0;font-size:.88em;display:block;overflow-x:auto}
th,td{border:1px solid #ccc;padding:.25em .55em}td{white-space:nowrap}th{background:#f3f3f3;vertical-align:bottom}
td.r{text-align:right;font-variant-numeric:tabular-nums}
table.wide{font-size:.8em}table.wide th,table.wide td{padding:.25em .4em}
@media (max-width:1150px){td{white-space:normal}}
code{background:#f3f3f3;padding:0 .2em;border-radius:3px}
figure{margin:1.5em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}figcaption{font-size:.9em;color:#444}`

// HTML writes the document as one self-contained HTML page: the figures
// are embedded as data: URIs (PNG), the style is inline, nothing is
// fetched.
func (d *document) HTML(w io.Writer) error {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	b.WriteString("<title>" + html.EscapeString(d.Title) + "</title>\n<style>\n" + css + "\n</style>\n</head>\n<body>\n")
	b.WriteString("<h1>" + inline(d.Title) + "</h1>\n")
	for _, bl := range d.Blocks {
		switch x := bl.(type) {
		case *heading:
			fmt.Fprintf(&b, "<h%d id=\"%s\">%s</h%d>\n", x.Level, slug(x.Text), inline(x.Text), x.Level)
		case *para:
			b.WriteString("<p>" + inline(x.Text) + "</p>\n")
		case *table:
			if len(x.Header) >= wideColumns {
				b.WriteString("<table class=\"wide\">\n<thead><tr>")
			} else {
				b.WriteString("<table>\n<thead><tr>")
			}
			for _, h := range x.Header {
				b.WriteString("<th>" + inline(h) + "</th>")
			}
			b.WriteString("</tr></thead>\n<tbody>\n")
			for _, r := range x.Rows {
				b.WriteString("<tr>")
				for i, c := range r {
					if i < len(x.Right) && x.Right[i] {
						b.WriteString(`<td class="r">` + inline(c) + "</td>")
					} else {
						b.WriteString("<td>" + inline(c) + "</td>")
					}
				}
				b.WriteString("</tr>\n")
			}
			b.WriteString("</tbody>\n</table>\n")
		case *figureRef:
			f := x.Fig
			fmt.Fprintf(&b, "<figure>\n<img src=\"data:image/png;base64,%s\" width=\"%d\" height=\"%d\" alt=\"%s\">\n<figcaption><strong>%s.</strong> %s</figcaption>\n</figure>\n",
				base64.StdEncoding.EncodeToString(f.PNG), f.Width, f.Height, html.EscapeString(f.Title), html.EscapeString(f.Title), inline(f.Caption))
		}
	}
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// labelAction is the label-versus-action table of the cells with lab
// outcomes.
func (d *document) labelAction(an *analysis.Analysis) {
	t := rightFrom(3, analysis.LabelActionHeader...)
	for i := range an.Cells {
		if row := analysis.LabelActionRow(&an.Cells[i].Cell); row != nil {
			t.Rows = append(t.Rows, row)
		}
	}
	d.table(t)
}

// outDir writes files into dir and lists the paths written, in order.
type outDir struct {
	dir     string
	written []string
}

// put writes dir/name.
func (o *outDir) put(name string, data []byte) error {
	p := filepath.Join(o.dir, name)
	o.written = append(o.written, p)
	return os.WriteFile(p, data, 0o644)
}

// figure writes sub/NAME.png and sub/NAME.svg of f, unless it is empty.
func (o *outDir) figure(sub string, f *figure) error {
	if f.Empty != "" {
		return nil
	}
	if err := o.put(filepath.Join(sub, f.Name+".png"), f.PNG); err != nil {
		return err
	}
	return o.put(filepath.Join(sub, f.Name+".svg"), f.SVG)
}

// WritePower writes dir/power.md (the power section alone) and, unless
// it is empty, the power figure beside it (power.png, power.svg); it
// returns the paths written.
func WritePower(dir string, pw *analysis.Power) ([]string, error) {
	f, err := powerFigure(pw)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := &outDir{dir: dir}
	var md strings.Builder
	d := &document{Title: "Power and design"}
	powerSection(d, pw, &f)
	if err := d.Markdown(&md); err != nil {
		return nil, err
	}
	if err := out.figure("", &f); err != nil {
		return out.written, err
	}
	err = out.put(PowerFile, []byte(strings.ReplaceAll(md.String(), FigureDir+"/", "")))
	return out.written, err
}
