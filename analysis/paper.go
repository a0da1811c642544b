package analysis

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mcpstress/stress/results"
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
	Models   []PaperModel   `json:"models"`
	Rows     []results.Cell `json:"rows"` // one per (paper model, condition); prompt and errors unused
}

// PaperModel is a model of the paper and the run model names (labels or
// backend model ids) taken to be it.
type PaperModel struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases"`
}

// Paper returns the paper's Table II (embedded).
func Paper() (*PaperTable, error) {
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
	return Counts{c.N, c.Strict, c.Cover, c.Retry, c.Invalid, c.AnyFS, c.TerminalFS, c.Extra}
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
	Table     string      `json:"table"`
	Citation  string      `json:"citation"`
	Rows      []PaperLine `json:"rows"`
	Unmatched []string    `json:"unmatched_models,omitempty"` // run models that match no paper model
}

// PaperLine is one published cell and, when the run has it, the run's cell
// and the difference run − paper.
type PaperLine struct {
	PaperModel string  `json:"paper_model"`
	Condition  string  `json:"condition"`
	Paper      Counts  `json:"paper"`
	Model      string  `json:"model,omitempty"` // run model label
	Prompt     string  `json:"prompt,omitempty"`
	Run        *Counts `json:"run"`  // null when the run has no such cell
	Diff       *Counts `json:"diff"` // run − paper; null when Run is
}

// Against matches the run's cells to t's rows: a run model is a paper
// model when its label, or its backend model id in modelIDs (label → id,
// may be nil), is one of the paper model's aliases (case-insensitive).
// Every paper row is listed, once per matching (model, prompt) arm.
func (t *PaperTable) Against(cells []results.Cell, modelIDs map[string]string) *PaperComparison {
	pc := &PaperComparison{Table: t.Table, Citation: t.Citation, Rows: []PaperLine{}}
	paperOf := func(model string) string {
		for _, pm := range t.Models {
			for _, al := range pm.Aliases {
				if strings.EqualFold(al, model) || strings.EqualFold(al, modelIDs[model]) {
					return pm.Name
				}
			}
		}
		return ""
	}
	// Run arms per paper model, in first-seen order.
	arms := map[string][]Arm{}
	for _, c := range cells {
		pm := paperOf(c.Model)
		if pm == "" {
			if !containsStr(pc.Unmatched, c.Model) {
				pc.Unmatched = append(pc.Unmatched, c.Model)
			}
			continue
		}
		a := Arm{c.Model, c.Prompt}
		found := false
		for _, x := range arms[pm] {
			found = found || x == a
		}
		if !found {
			arms[pm] = append(arms[pm], a)
		}
	}
	for _, row := range t.Rows {
		paper := countsOf(&row)
		if len(arms[row.Model]) == 0 {
			pc.Rows = append(pc.Rows, PaperLine{PaperModel: row.Model, Condition: string(row.Condition), Paper: paper})
			continue
		}
		for _, a := range arms[row.Model] {
			line := PaperLine{PaperModel: row.Model, Condition: string(row.Condition), Paper: paper, Model: a.Model, Prompt: a.Prompt}
			for i := range cells {
				c := &cells[i]
				if c.Model == a.Model && c.Prompt == a.Prompt && c.Condition == row.Condition {
					run := countsOf(c)
					diff := run.minus(paper)
					line.Run, line.Diff = &run, &diff
				}
			}
			pc.Rows = append(pc.Rows, line)
		}
	}
	return pc
}

// WriteAgainst prints the published table next to the run's counts: per
// cell a "paper" line, the run's line and the difference run − paper.
func WriteAgainst(w io.Writer, t *PaperTable, pc *PaperComparison) error {
	fmt.Fprintln(w, wrap("Against the paper's Table II: "+t.Citation, 100))
	fmt.Fprintln(w, wrap("Published setup: "+t.Setup, 100))
	fmt.Fprintln(w, wrap(t.Note, 100))
	fmt.Fprintln(w, "Counts out of N decisions (Extra is a sum of replays); diff = run − paper.")
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "paper model\tcondition\tsource\tN\tStrict\tCover\tRetry\tInvalid\tAnyFS\tTermFS\tExtra")
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
			names = append(names, m.Name+" = "+strings.Join(m.Aliases, " | "))
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, wrap(fmt.Sprintf("Run models not in the paper: %s. A run model is matched by its label or backend model id: %s.",
			strings.Join(pc.Unmatched, ", "), strings.Join(names, "; ")), 100))
	}
	return nil
}
