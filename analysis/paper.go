package analysis

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
)

//go:embed paper/table2.json
var paperTable2 []byte

// PaperTable is a published counts table: the paper's Table II with its
// citation, in analysis/paper/table2.json.
type PaperTable struct {
	Table    string         `json:"table"`    // name for -against
	Citation string         `json:"citation"` // where the figures come from
	Setup    string         `json:"setup"`    // models and settings that produced them
	Note     string         `json:"note"`     // how the data file departs from the printed table
	Models   []paperModel   `json:"models"`
	Rows     []results.Cell `json:"rows"` // one per (paper model, condition); prompt and errors unused
}

// paperModel is a model of the paper and what identifies a run's model
// as it: a pinned digest (none is published), a backend model id (the
// Ollama tags of the published quantization), or, only with
// againstOptions.MatchLabel, a run label.
type paperModel struct {
	Name     string   `json:"name"`
	ModelIDs []string `json:"model_ids"` // backend model ids, case-insensitive
	Digests  []string `json:"digests"`   // pinned weight digests (sha256 hex); empty: unpublished
	Labels   []string `json:"labels"`    // run labels, matched only with MatchLabel
}

// RunModel is what a bundle records about one of its models
// (manifest.json): its label, backend, backend model id and pinned digest.
type RunModel struct {
	Label, Backend, ModelID, Digest string
}

// againstOptions tunes PaperTable.Against.
type againstOptions struct {
	// MatchLabel also matches a run model to a paper model by its label
	// alone (a label says nothing about the weights behind it).
	MatchLabel bool
	// Level is the significance level of the consistency verdicts; 0
	// means 0.05.
	Level float64
}

// paperMatch records why a run model was taken to be a paper model.
type paperMatch struct {
	Model      string `json:"model"`       // run label
	PaperModel string `json:"paper_model"` // paper model name
	By         string `json:"by"`          // "digest", "model id" or "label"
	Value      string `json:"value"`       // the digest, model id or label that matched
}

// AgainstPaper sets cells next to the paper's Table II, matching the
// models of the run info describes by the pinned digest or backend model
// id its manifest.json records, and by label when matchLabel is set.
func AgainstPaper(cells []results.Cell, info *BundleInfo, matchLabel bool) (*PaperTable, *PaperComparison, error) {
	t, err := loadPaper()
	if err != nil {
		return nil, nil, err
	}
	return t, t.Against(cells, info.RunModels(), againstOptions{MatchLabel: matchLabel}), nil
}

// loadPaper returns the paper's Table II (embedded).
func loadPaper() (*PaperTable, error) {
	dec := json.NewDecoder(bytes.NewReader(paperTable2))
	dec.DisallowUnknownFields()
	var t PaperTable
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("analysis/paper/table2.json: %w", err)
	}
	return &t, nil
}

// Counts are the exact counts of a cell, without its key.
type Counts struct {
	N          int `json:"n"`
	Strict     int `json:"strict"`
	Cover      int `json:"cover"`
	Retry      int `json:"retry"`
	Invalid    int `json:"invalid"`
	AnyFS      int `json:"any_fs"`
	TerminalFS int `json:"terminal_fs"`
	Extra      int `json:"extra"`
}

func countsOf(c *results.Cell) Counts {
	k := &c.Counts
	return Counts{c.N, k[simulator.Strict], k[simulator.Cover], k[simulator.Retry], k[simulator.Invalid], k[simulator.AnyFS], k[simulator.TerminalFS], c.Extra}
}

func (a Counts) minus(b Counts) Counts {
	return Counts{a.N - b.N, a.Strict - b.Strict, a.Cover - b.Cover, a.Retry - b.Retry, a.Invalid - b.Invalid,
		a.AnyFS - b.AnyFS, a.TerminalFS - b.TerminalFS, a.Extra - b.Extra}
}

func (a Counts) fields() []int {
	return []int{a.N, a.Strict, a.Cover, a.Retry, a.Invalid, a.AnyFS, a.TerminalFS, a.Extra}
}

// PaperComparison sets a run's counts next to a published table.
type PaperComparison struct {
	Table     string       `json:"table"`
	Citation  string       `json:"citation"`
	Matches   []paperMatch `json:"matches"`
	Level     float64      `json:"level"` // significance level of the verdicts
	Rows      []paperLine  `json:"rows"`
	Unmatched []string     `json:"unmatched_models,omitempty"` // run models that match no paper model
	Caveat    string       `json:"caveat"`
}

// paperCaveat qualifies every consistency verdict against the paper.
//
// Note: the direction of the caveat comes from TestAgainstCaveatSize,
// which simulates the paper's design (21 scenarios × 5 replicates, each
// scenario's rate uniform on (0, 1)) under H₀: with the same scenarios in
// both runs, as a rerun of the paper's corpus has, the replicates' shared
// rates make the counts vary less than binomially and Fisher's size is
// about 1.3% at 5% (conservative); only with a fresh draw of scenarios
// does the between-scenario variance add and the size rise to about
// 16.6% (anticonservative).
const paperCaveat = "The paper's prompt text, model digests and run seeds are unpublished, so a rerun cannot be matched to it " +
	"decision by decision: each count is tested against the published one as two independent binomial samples " +
	"(Fisher's exact test, two-sided), and a cell is \"consistent\" when no column's Holm-adjusted p-value (over the " +
	"cell's six columns) is below the level. The test takes decisions as independent, which the replicates of a " +
	"scenario are not. A rerun of the paper's scenarios shares their rates with it, so the test is conservative: " +
	"\"not consistent\" comes less readily than the level says (size about 1.3% at 5% in simulation of the paper's " +
	"design); only against a fresh draw of scenarios would it come more readily (about 16.6%). \"Consistent\" means " +
	"only that the counts could come from the same rates, not that the setup was reproduced."

// paperTestColumns are the columns tested against the paper: every count
// of decisions (Extra, a sum of replays, is not a count of decisions).
var paperTestColumns = []simulator.Col{simulator.Strict, simulator.Cover, simulator.Retry, simulator.Invalid, simulator.AnyFS, simulator.TerminalFS}

// columnTest is one column of a cell tested against the paper.
type columnTest struct {
	Column simulator.Col `json:"column"`
	P      Num           `json:"p"`    // Fisher's exact two-sided p-value
	Holm   Num           `json:"holm"` // adjusted over the cell's columns
}

// paperLine is one published cell and, when the run has it, the run's cell
// and the difference run − paper.
type paperLine struct {
	PaperModel string  `json:"paper_model"`
	Condition  string  `json:"condition"`
	Paper      Counts  `json:"paper"`
	Model      string  `json:"model,omitempty"` // run model label
	Prompt     string  `json:"prompt,omitempty"`
	Run        *Counts `json:"run"`  // null when the run has no such cell
	Diff       *Counts `json:"diff"` // run − paper; null when Run is
	// Tests are the per-column consistency tests (null when Run is), and
	// Consistent the verdict: no Holm-adjusted p below the level.
	Tests      []columnTest `json:"tests,omitempty"`
	Consistent *bool        `json:"consistent"`
}

// match returns the paper model run model m is taken to be, and why.
func (t *PaperTable) match(m RunModel, matchLabel bool) (paperMatch, bool) {
	for _, pm := range t.Models {
		for _, d := range pm.Digests {
			if m.Digest != "" && strings.EqualFold(strings.TrimPrefix(d, "sha256:"), strings.TrimPrefix(m.Digest, "sha256:")) {
				return paperMatch{m.Label, pm.Name, "digest", m.Digest}, true
			}
		}
	}
	for _, pm := range t.Models {
		for _, id := range pm.ModelIDs {
			if m.ModelID != "" && strings.EqualFold(id, m.ModelID) {
				return paperMatch{m.Label, pm.Name, "model id", m.ModelID}, true
			}
		}
	}
	if matchLabel {
		for _, pm := range t.Models {
			for _, l := range pm.Labels {
				if strings.EqualFold(l, m.Label) {
					return paperMatch{m.Label, pm.Name, "label", m.Label}, true
				}
			}
		}
	}
	return paperMatch{}, false
}

// Against matches the run's cells to t's rows and tests each matched
// cell's counts against the published ones. A run model is a paper model
// when its pinned digest, or else its backend model id, is one the paper
// model lists; its label counts only with opt.MatchLabel. models maps run
// labels to what the bundle records (a label missing from it has only its
// label). Every paper row is listed, once per matching (model, prompt)
// arm.
func (t *PaperTable) Against(cells []results.Cell, models map[string]RunModel, opt againstOptions) *PaperComparison {
	opt.Level = cmp.Or(opt.Level, 0.05)
	pc := &PaperComparison{Table: t.Table, Citation: t.Citation, Rows: []paperLine{}, Level: opt.Level, Caveat: paperCaveat}
	paperOf := map[string]string{}
	for _, c := range cells {
		if _, done := paperOf[c.Model]; done {
			continue
		}
		m, ok := models[c.Model]
		if !ok {
			m = RunModel{Label: c.Model}
		}
		m.Label = c.Model
		pm, ok := t.match(m, opt.MatchLabel)
		if !ok {
			paperOf[c.Model] = ""
			pc.Unmatched = append(pc.Unmatched, c.Model)
			continue
		}
		paperOf[c.Model] = pm.PaperModel
		pc.Matches = append(pc.Matches, pm)
	}
	// Run arms per paper model, in first-seen order.
	arms := map[string][]Arm{}
	for _, c := range cells {
		pm := paperOf[c.Model]
		if pm == "" {
			continue
		}
		a := Arm{c.Model, c.Prompt}
		if !slices.Contains(arms[pm], a) {
			arms[pm] = append(arms[pm], a)
		}
	}
	for _, row := range t.Rows {
		paper := countsOf(&row)
		if len(arms[row.Model]) == 0 {
			pc.Rows = append(pc.Rows, paperLine{PaperModel: row.Model, Condition: string(row.Condition), Paper: paper})
			continue
		}
		for _, a := range arms[row.Model] {
			line := paperLine{PaperModel: row.Model, Condition: string(row.Condition), Paper: paper, Model: a.Model, Prompt: a.Prompt}
			for i := range cells {
				c := &cells[i]
				if c.Model == a.Model && c.Prompt == a.Prompt && c.Condition == row.Condition {
					run := countsOf(c)
					diff := run.minus(paper)
					line.Run, line.Diff = &run, &diff
					line.Tests, line.Consistent = consistency(c, &row, opt.Level)
				}
			}
			pc.Rows = append(pc.Rows, line)
		}
	}
	return pc
}

// consistency tests each of paperTestColumns of run cell c against paper
// cell p (Fisher's exact test on [[run k, run N − k], [paper k, paper
// N − k]]), Holm-adjusts the p-values over the columns, and returns the
// verdict at level (nil when a cell has no decisions).
func consistency(c, p *results.Cell, level float64) ([]columnTest, *bool) {
	if c.N == 0 || p.N == 0 {
		return nil, nil
	}
	var tests []columnTest
	var ps []float64
	for _, col := range paperTestColumns {
		kr, kp := c.Count(col), p.Count(col)
		pv := stats.FisherExact(kr, c.N-kr, kp, p.N-kp)
		tests = append(tests, columnTest{Column: col, P: Num(pv)})
		ps = append(ps, pv)
	}
	ok := true
	for i, h := range stats.Holm(ps) {
		tests[i].Holm = Num(h)
		ok = ok && !(h < level)
	}
	return tests, &ok
}

// WriteAgainst prints the published table next to the run's counts: per
// cell a "paper" line, the run's line and the difference run − paper.
func WriteAgainst(w io.Writer, t *PaperTable, pc *PaperComparison) error {
	fmt.Fprintln(w, wrap("Against the paper's Table II: "+t.Citation, 100))
	fmt.Fprintln(w, wrap("Published setup: "+t.Setup, 100))
	fmt.Fprintln(w, wrap(t.Note, 100))
	for _, m := range pc.Matches {
		fmt.Fprintf(w, "Run model %s is %s by its %s %s.\n", m.Model, m.PaperModel, m.By, m.Value)
	}
	fmt.Fprintf(w, "Counts out of N decisions (Extra is a sum of replays); diff = run − paper; p = Fisher's exact test of\n")
	fmt.Fprintf(w, "the run's count against the paper's; verdict at %g%% after Holm over the cell's six columns.\n", 100*pc.Level)
	fmt.Fprintln(w, wrap("Caveat: "+pc.Caveat, 100))
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "paper model\tcondition\tsource\tN\tStrict\tCover\tRetry\tInvalid\tAnyFS\tTermFS\tExtra\tverdict")
	line := func(a, b, c string, n []int) {
		fmt.Fprintf(tw, "%s\t%s\t%s", a, b, c)
		for _, x := range n {
			fmt.Fprintf(tw, "\t%d", x)
		}
		fmt.Fprintln(tw)
	}
	nDiffers := false
	for _, r := range pc.Rows {
		line(r.PaperModel, r.Condition, "paper", r.Paper.fields())
		if r.Run == nil {
			src := "run: no such model"
			if r.Model != "" {
				src = "run " + r.Model + "/" + r.Prompt + ": no such cell"
			}
			fmt.Fprintf(tw, "\t\t%s%s\n", src, strings.Repeat("\t—", len(r.Paper.fields())))
			continue
		}
		line("", "", "run "+r.Model+"/"+r.Prompt, r.Run.fields())
		diff := r.Diff.fields()
		fmt.Fprintf(tw, "\t\tdiff")
		for _, x := range diff {
			if x == 0 {
				fmt.Fprintf(tw, "\t0")
			} else {
				fmt.Fprintf(tw, "\t%+d", x)
			}
		}
		fmt.Fprintln(tw)
		if len(r.Tests) > 0 {
			fmt.Fprintf(tw, "\t\tp\t")
			for _, ct := range r.Tests {
				fmt.Fprintf(tw, "\t%s", PValue(float64(ct.P)))
			}
			fmt.Fprintf(tw, "\t\t%s\n", Verdict(r.Consistent, pc.Level))
		}
		nDiffers = nDiffers || r.Diff.N != 0
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if nDiffers {
		fmt.Fprintln(w, "\nN differs from the paper in some cells: compare rates (count / N), not counts.")
	}
	if len(pc.Unmatched) > 0 {
		var names []string
		for _, m := range t.Models {
			names = append(names, m.Name+" = model id "+strings.Join(m.ModelIDs, " | ")+", label "+strings.Join(m.Labels, " | "))
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, wrap(fmt.Sprintf("Run models not in the paper: %s. A run model is matched by its pinned digest or backend model id (by its label only with -match-label): %s.",
			strings.Join(pc.Unmatched, ", "), strings.Join(names, "; ")), 100))
	}
	return nil
}

// Verdict says whether a cell is consistent with the paper at level.
func Verdict(ok *bool, level float64) string {
	switch {
	case ok == nil:
		return "—"
	case *ok:
		return fmt.Sprintf("consistent at %g%%", 100*level)
	}
	return fmt.Sprintf("not consistent at %g%%", 100*level)
}
