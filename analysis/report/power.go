package report

import (
	"cmp"
	"fmt"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/mcpstress/stress/analysis"
)

// PowerFigureName is the file name (without extension) of the power
// figure.
const PowerFigureName = "power"

// powerFigure draws the power of each contrast (one panel each) against
// the replicates per scenario, one line per number of scenarios, at the
// grid's first number of servers, with the 80% line dashed.
func powerFigure(pw *analysis.Power) (figure, error) {
	n := len(pw.Curves)
	w, h := StrictCoverSize(n)
	f := figure{Name: PowerFigureName, Title: "Power by design", Width: w, Height: h}
	if n == 0 || len(pw.Curves[0].Points) == 0 {
		f.Empty = "No contrast to estimate the power of; no figure."
		return f, nil
	}
	servers := pw.Curves[0].Points[0].Servers
	f.Caption = fmt.Sprintf("Estimated power (%%) of the scenario-level sign-flip test at %g%% to detect %s percentage points, against replicates per scenario, one line per number of scenarios, %d servers; %d simulated studies per point; dashed: 80%%.",
		100*pw.Level, analysis.SignedPct(pw.Diff), servers, pw.Studies)
	var plots []*plot.Plot
	for _, c := range pw.Curves {
		p := plot.New()
		p.Title.Text = c.Name
		p.X.Label.Text = "replicates per scenario"
		p.Y.Label.Text = "power (%)"
		p.Y.Min, p.Y.Max = 0, 100
		p.Y.Tick.Marker = percentTicks
		p.Add(plotter.NewGrid())
		var scen []int
		xmax := 1.0
		for _, pt := range c.Points {
			if !slices.Contains(scen, pt.Scenarios) {
				scen = append(scen, pt.Scenarios)
			}
			xmax = max(xmax, float64(pt.Replicates))
		}
		for i, s := range scen {
			var xys plotter.XYs
			for _, pt := range c.Points {
				if pt.Scenarios == s && pt.Servers == servers {
					xys = append(xys, plotter.XY{X: float64(pt.Replicates), Y: 100 * pt.Power})
				}
			}
			slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
			l, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return f, err
			}
			l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
			pts.Shape = plotutil.Shape(i)
			p.Add(l, pts)
			p.Legend.Add(fmt.Sprintf("%d scenarios", s), l, pts)
		}
		ref, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 80}, {X: xmax + 1, Y: 80}})
		if err != nil {
			return f, err
		}
		ref.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(ref)
		p.X.Min, p.X.Max = 0, xmax+1
		p.Legend.Top, p.Legend.Left = false, false // bottom right: power is high on the right
		plots = append(plots, p)
	}
	return f, f.render(func(c draw.Canvas) { drawPanels(c, plots, n) })
}

// drawPanels draws the first n of plots on c in a grid of panelCols
// columns, row by row.
func drawPanels(c draw.Canvas, plots []*plot.Plot, n int) {
	cols := min(n, panelCols)
	rows := (n + panelCols - 1) / panelCols
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(6), PadY: vg.Points(6)}
	for i, p := range plots {
		p.Draw(margin(tiles.At(c, i%cols, i/cols)))
	}
}
