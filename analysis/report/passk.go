package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/simulator"
)

// passKFigureName is the file name (without extension) of the pass^k
// figure.
const passKFigureName = "pass-k"

// passKGlyphs is the most ks whose points the pass^k figure marks; with
// more, the lines go without glyphs.
const passKGlyphs = 20

// passKColumns lists the columns some cell has a pass^k series of, in
// the order of analysis.PassKColumns.
func passKColumns(cells []analysis.CellStats) []simulator.Col {
	var out []simulator.Col
	for _, c := range cells {
		for _, sr := range c.PassK {
			if !slices.Contains(out, sr.Column) {
				out = append(out, sr.Column)
			}
		}
	}
	order := func(c simulator.Col) int {
		return slices.IndexFunc(analysis.PassKColumns, func(x simulator.Col) bool { return x == c })
	}
	slices.SortStableFunc(out, func(a, b simulator.Col) int { return order(a) - order(b) })
	return out
}

// passKFigure draws pass^k (%) against k: one panel per condition, one
// line per model (arm, by colour), one dash pattern per column (Strict
// solid), and a tile with the legend. A study whose scenarios ran once
// has nothing to draw: pass^1 is the rate.
func passKFigure(an *analysis.Analysis) (figure, error) {
	f := figure{Name: passKFigureName, Title: "Consistency across replicates (pass^k)"}
	kmax := analysis.PassKMax(an.Cells)
	if kmax < 2 {
		f.Empty = "No scenario ran more than once: pass^k is pass^1, the rate; no figure."
		return f, nil
	}
	arms, by := armCells(an.Cells)
	conds := conditionsOf(an.Cells)
	cols := passKColumns(an.Cells)
	var styles []string
	for i, c := range cols {
		styles = append(styles, fmt.Sprintf("%s %s", c.Column().Label, []string{"solid", "dashed", "dotted", "dash-dotted"}[min(i, 3)]))
	}
	f.Caption = fmt.Sprintf("pass^k in %%, the chance that k replicates of a scenario all succeed (per scenario C(c, k)/C(n, k), averaged over the cell's scenarios), against k = 1..%d; one panel per condition, one line per model; %s.",
		kmax, strings.Join(styles, ", "))
	n := len(conds) + 1 // the legend's tile
	f.Width, f.Height = StrictCoverSize(n)
	var ticks []plot.Tick
	if kmax <= 10 {
		for k := 1; k <= kmax; k++ {
			ticks = append(ticks, plot.Tick{Value: float64(k), Label: strconv.Itoa(k)})
		}
	}
	var plots []*plot.Plot
	for _, cond := range conds {
		p := plot.New()
		p.Title.Text = cond
		p.X.Label.Text = "k (replicates that must all succeed)"
		p.Y.Label.Text = "pass^k (%)"
		p.X.Min, p.X.Max = 1, float64(kmax)
		p.Y.Min, p.Y.Max = 0, 100
		p.Y.Tick.Marker = percentTicks
		if ticks != nil {
			p.X.Tick.Marker = plot.ConstantTicks(ticks)
		}
		p.Add(plotter.NewGrid())
		for ai, arm := range arms {
			i := slices.IndexFunc(by[arm], func(c analysis.CellStats) bool { return string(c.Condition) == cond })
			if i < 0 {
				continue
			}
			cell := by[arm][i]
			for ci, col := range cols {
				sr := cell.PassK.Of(col)
				if sr == nil {
					continue
				}
				var xys plotter.XYs
				for _, v := range sr.Values {
					if y := float64(v.Estimate); !math.IsNaN(y) && !math.IsInf(y, 0) {
						xys = append(xys, plotter.XY{X: float64(v.K), Y: 100 * y})
					}
				}
				if len(xys) == 0 {
					continue
				}
				l, err := plotter.NewLine(xys)
				if err != nil {
					return f, err
				}
				l.Color = plotutil.Color(ai)
				l.Width = vg.Points(1.5)
				l.Dashes = plotutil.Dashes(ci)
				p.Add(l)
				if kmax <= passKGlyphs {
					sc, err := plotter.NewScatter(xys)
					if err != nil {
						return f, err
					}
					sc.GlyphStyle.Color = plotutil.Color(ai)
					sc.GlyphStyle.Shape = plotutil.Shape(ai)
					sc.GlyphStyle.Radius = vg.Points(2.5)
					p.Add(sc)
				}
			}
		}
		plots = append(plots, p)
	}
	// The legend's tile: the models by colour, the columns by dashes.
	leg := plot.New()
	leg.HideAxes()
	leg.Legend.Top, leg.Legend.Left = true, true
	for ai, arm := range arms {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}})
		if err != nil {
			return f, err
		}
		l.Color, l.Width = plotutil.Color(ai), vg.Points(2)
		leg.Legend.Add(armTitle(arm, arms), l)
	}
	if len(cols) > 1 {
		for ci, col := range cols {
			l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}})
			if err != nil {
				return f, err
			}
			l.Width, l.Dashes = vg.Points(1.5), plotutil.Dashes(ci)
			leg.Legend.Add(col.Column().Label, l)
		}
	}
	plots = append(plots, leg)
	return f, f.render(func(c draw.Canvas) { drawPanels(c, plots, n) })
}

// passK adds the pass^k table: per cell and column, a row of estimates
// and a row of bootstrap intervals, for the ks analysis.PassKShown picks.
func (d *document) passK(an *analysis.Analysis, ks []int) {
	text := analysis.PassKText
	if analysis.PassKLab(an.Cells) {
		text += " " + analysis.PassKLabText
	}
	d.p("%s Intervals: %g%% percentile cluster bootstrap resampling the %d servers, B = %d, seed %d, drawn with the rates' intervals.",
		text, 100*an.Bootstrap.Conf, an.Bootstrap.Clusters, an.Bootstrap.B, an.Bootstrap.Seed)
	if kmax := analysis.PassKMax(an.Cells); kmax > len(ks) {
		shown := make([]string, len(ks))
		for i, k := range ks {
			shown[i] = strconv.Itoa(k)
		}
		d.p("k runs up to %d; the table shows k = %s (`stress analyze -json` has every k).", kmax, strings.Join(shown, ", "))
	}
	header := []string{"model", "prompt", "condition", "column", "scenarios", "interval"}
	right := []bool{false, false, false, false, true, false}
	for _, k := range ks {
		header = append(header, "k="+strconv.Itoa(k))
		right = append(right, true)
	}
	t := &table{Header: header, Right: right}
	notes := map[string]bool{}
	for _, c := range an.Cells {
		for _, sr := range c.PassK {
			scen := 0
			if len(sr.Values) > 0 {
				scen = sr.Values[0].Scenarios + sr.Values[0].Dropped
			}
			est := []string{c.Model, c.Prompt, string(c.Condition), sr.Column.Column().Label, strconv.Itoa(scen), "estimate"}
			boot := []string{"", "", "", "", "", "bootstrap"}
			for _, k := range ks {
				if k > len(sr.Values) {
					est, boot = append(est, "—"), append(boot, "—")
					continue
				}
				v := sr.Values[k-1]
				est = append(est, analysis.Pct(float64(v.Estimate)))
				boot = append(boot, tagged(ival(v.Bootstrap, analysis.Pct), v.Warnings, notes))
			}
			t.Rows = append(t.Rows, est, boot)
		}
	}
	d.table(t)
	d.notes(notes)
}
