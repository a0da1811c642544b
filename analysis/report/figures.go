package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// figure is one rendered figure, as PNG and SVG.
type figure struct {
	Name    string // file name without extension, e.g. "strict-cover"
	Title   string
	Caption string
	Width   int // pixels of the PNG (the SVG has the same size at 96 dpi)
	Height  int
	PNG     []byte
	SVG     []byte
	// Empty, when not "", is the sentence the report shows instead of a
	// figure that would have nothing to plot (e.g. "No replays were
	// issued; no figure."); PNG and SVG are then nil and no file is
	// written.
	Empty string
}

// figureNames are the names of every figure Figures may return.
var figureNames = []string{"strict-cover", "extra", "profile", "label-action"}

// Figure sizes in pixels at DPI.
const (
	dpi         = 96  // resolution of the PNG figures
	panelWidth  = 400 // one (model, prompt) panel of the Strict/Cover figure
	panelHeight = 340
	panelCols   = 3 // panels per row
	WideWidth   = 720
	WideHeight  = 400
)

// Crowded is the most conditions a figure names side by side on its
// x axis; with more, the names are set vertically and each row of panels
// gets VerticalLabels more pixels of height.
const (
	crowded        = 6
	VerticalLabels = 150
)

// conditionAxis sets the condition names of p's x axis vertically when
// there are more than Crowded.
func conditionAxis(p *plot.Plot, names []string) {
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	if len(names) > crowded {
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
}

// StrictCoverSize returns the pixel size of the Strict/Cover figure for n
// panels (of at most Crowded conditions each).
func StrictCoverSize(n int) (w, h int) {
	cols := min(n, panelCols)
	rows := (n + panelCols - 1) / panelCols
	return max(cols, 1) * panelWidth, max(rows, 1) * panelHeight
}

// render draws fn on a PNG and an SVG canvas of f's size, into f.PNG
// and f.SVG.
func (f *figure) render(fn func(draw.Canvas)) error {
	wl := vg.Length(f.Width) * vg.Inch / dpi
	hl := vg.Length(f.Height) * vg.Inch / dpi
	img := vgimg.NewWith(vgimg.UseWH(wl, hl), vgimg.UseDPI(dpi))
	fn(draw.New(img))
	var pb bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&pb); err != nil {
		return err
	}
	sc := vgsvg.New(wl, hl)
	fn(draw.New(sc))
	var sb bytes.Buffer
	if _, err := sc.WriteTo(&sb); err != nil {
		return err
	}
	f.PNG, f.SVG = pb.Bytes(), sb.Bytes()
	return nil
}

// addBars adds to p a bar chart of vals, bars width wide in colour c,
// offset by offset widths from their ticks, named in the legend.
func addBars(p *plot.Plot, vals plotter.Values, width vg.Length, offset float64, c color.Color, name string) error {
	bc, err := plotter.NewBarChart(vals, width)
	if err != nil {
		return err
	}
	bc.Color = c
	bc.LineStyle.Width = 0
	bc.Offset = vg.Length(offset) * width
	p.Add(bc)
	p.Legend.Add(name, bc)
	return nil
}

// margin leaves a few points of white around a single plot.
func margin(c draw.Canvas) draw.Canvas {
	return draw.Crop(c, vg.Points(4), -vg.Points(10), vg.Points(4), -vg.Points(8))
}

// errPoints are points with asymmetric vertical error bars.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// percentTicks marks 0 to 100 % every 20.
var percentTicks = plot.ConstantTicks([]plot.Tick{
	{Value: 0, Label: "0"}, {Value: 20, Label: "20"}, {Value: 40, Label: "40"},
	{Value: 60, Label: "60"}, {Value: 80, Label: "80"}, {Value: 100, Label: "100"},
})

// armCells groups the cells by arm, in first-seen order.
func armCells(cells []analysis.CellStats) ([]analysis.Arm, map[analysis.Arm][]analysis.CellStats) {
	var arms []analysis.Arm
	by := map[analysis.Arm][]analysis.CellStats{}
	for _, c := range cells {
		a := analysis.Arm{Model: c.Model, Prompt: c.Prompt}
		if _, ok := by[a]; !ok {
			arms = append(arms, a)
		}
		by[a] = append(by[a], c)
	}
	return arms, by
}

// armTitle names an arm by its model, and its prompt when the bundle has
// several.
func armTitle(a analysis.Arm, arms []analysis.Arm) string {
	if slices.ContainsFunc(arms, func(b analysis.Arm) bool { return b.Model == a.Model && b.Prompt != a.Prompt }) {
		return a.String()
	}
	return a.Model
}

// strictCover draws one panel per arm: Strict and Cover (%) per condition
// with Wilson 95% interval bars.
func strictCover(an *analysis.Analysis) (figure, error) {
	arms, by := armCells(an.Cells)
	f := figure{Name: "strict-cover", Title: "Strict and Cover per model and condition",
		Caption: fmt.Sprintf("Strict (circles) and Cover (squares) in %% of N decisions per condition, with %s %g%% intervals; one panel per model.", analysis.IntervalName(an.Interval), 100*an.Bootstrap.Conf)}
	if !slices.ContainsFunc(an.Cells, func(c analysis.CellStats) bool { return c.N > 0 }) {
		f.Empty = "No decision was counted (the bundle holds none, or every call failed); no figure."
		return f, nil
	}
	f.Width, f.Height = StrictCoverSize(len(arms))
	cols := min(max(len(arms), 1), panelCols)
	rows := (max(len(arms), 1) + panelCols - 1) / panelCols
	if slices.ContainsFunc(arms, func(a analysis.Arm) bool { return len(by[a]) > crowded }) {
		f.Height += rows * VerticalLabels
	}
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
	}
	for i, a := range arms {
		p := plot.New()
		p.Title.Text = armTitle(a, arms)
		p.Y.Label.Text = "% of N"
		p.Y.Min, p.Y.Max = 0, 118
		p.Y.Tick.Marker = percentTicks
		cells := by[a]
		var names []string
		for _, c := range cells {
			names = append(names, string(c.Condition))
		}
		conditionAxis(p, names)
		p.Add(plotter.NewGrid())
		for s, key := range []string{simulator.Strict.String(), simulator.Cover.String()} {
			pts := errPoints{XYs: make(plotter.XYs, 0, len(cells)), YErrors: make(plotter.YErrors, 0, len(cells))}
			for x, c := range cells {
				est := float64(*c.Rates.At(key))
				b := *c.CI.At(key)
				if !b.Defined() {
					continue
				}
				pts.XYs = append(pts.XYs, plotter.XY{X: float64(x) + 0.14*float64(2*s-1), Y: 100 * est})
				pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{100 * (est - b.Lo), 100 * (b.Hi - est)})
			}
			if len(pts.XYs) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(pts.XYs)
			if err != nil {
				return f, err
			}
			sc.GlyphStyle.Color = plotutil.Color(s)
			sc.GlyphStyle.Radius = vg.Points(3.5)
			sc.GlyphStyle.Shape = plotutil.Shape(s)
			eb, err := plotter.NewYErrorBars(pts)
			if err != nil {
				return f, err
			}
			eb.LineStyle.Color = plotutil.Color(s)
			eb.LineStyle.Width = vg.Points(1.2)
			p.Add(eb, sc)
			p.Legend.Add(analysis.RateLabel(key), sc)
		}
		p.Legend.Top = true
		grid[i/panelCols][i%panelCols] = p
	}
	err := f.render(func(c draw.Canvas) {
		if len(arms) == 0 {
			return
		}
		tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(6), PadY: vg.Points(6),
			PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(6)}
		canvases := plot.Align(grid, tiles, c)
		for r := range grid {
			for k, p := range grid[r] {
				if p != nil {
					p.Draw(canvases[r][k])
				}
			}
		}
	})
	return f, err
}

// conditionsOf lists the conditions of the cells: the known ones in
// canonical order, then any others in first-seen order.
func conditionsOf(cells []analysis.CellStats) []string {
	var out []string
	for _, c := range study.AllConditions {
		if slices.ContainsFunc(cells, func(x analysis.CellStats) bool { return x.Condition == c }) {
			out = append(out, string(c))
		}
	}
	for _, x := range cells {
		if !slices.Contains(out, string(x.Condition)) {
			out = append(out, string(x.Condition))
		}
	}
	return out
}

// extraBars draws the replays (Extra, a sum over N decisions) per
// condition, one bar per arm.
func extraBars(an *analysis.Analysis) (figure, error) {
	arms, by := armCells(an.Cells)
	conds := conditionsOf(an.Cells)
	f := figure{Name: "extra", Title: "Replays per condition", Width: WideWidth, Height: WideHeight,
		Caption: "Extra: replays the simulator issued (identical repeated calls after retry_now), summed over the N decisions of each cell; one bar per model."}
	replays := 0
	for _, c := range an.Cells {
		replays += c.Extra
	}
	if replays == 0 {
		f.Empty = "No replays were issued; no figure."
		return f, nil
	}
	p := plot.New()
	p.Y.Label.Text = "replays (Extra)"
	if len(conds) > 0 { // Note: NominalX panics on no names.
		conditionAxis(p, conds)
	}
	if len(conds) > crowded {
		f.Height += VerticalLabels
	}
	p.Add(plotter.NewGrid())
	n := max(len(arms), 1)
	width := vg.Points(min(60, 360/float64(n*max(len(conds), 1))))
	for i, a := range arms {
		vals := make(plotter.Values, len(conds))
		for _, c := range by[a] {
			if k := slices.Index(conds, string(c.Condition)); k >= 0 {
				vals[k] = float64(c.Extra)
			}
		}
		if err := addBars(p, vals, width, float64(i)-float64(n-1)/2, plotutil.Color(i), armTitle(a, arms)); err != nil {
			return f, err
		}
	}
	p.Legend.Top = true
	p.Y.Min = 0
	if p.Y.Max < 1 {
		p.Y.Max = 1
	}
	p.Y.Max *= 1.25 // room for the legend
	err := f.render(func(c draw.Canvas) { p.Draw(margin(c)) })
	return f, err
}

// profileBars draws the actionability profile table (paper Table I):
// scenarios with each capability bit, control and content-assisted views.
func profileBars(pr *profile) (figure, error) {
	f := figure{Name: "profile", Title: "Actionability profile (Table I)", Width: WideWidth, Height: WideHeight,
		Caption: fmt.Sprintf("Scenarios (of %d) with each capability coded, in the control view (typed fields only) and the content-assisted view (text may be read). Coordinates are not cumulative.", pr.N)}
	coded := 0
	for _, c := range study.Coordinates {
		coded += pr.Control.Counts[c] + pr.Content.Counts[c]
	}
	if coded == 0 {
		f.Empty = "No scenario has any capability coded, in either view; no figure."
		return f, nil
	}
	p := plot.New()
	p.Y.Label.Text = "scenarios"
	p.NominalX(study.Coordinates...)
	p.X.Min, p.X.Max = -0.5, float64(len(study.Coordinates))-0.5
	p.Add(plotter.NewGrid())
	width := vg.Points(28)
	for i, v := range []struct {
		name string
		s    study.ViewSummary
	}{{"Control", pr.Control}, {"Content-assisted", pr.Content}} {
		vals := make(plotter.Values, len(study.Coordinates))
		for k, c := range study.Coordinates {
			vals[k] = float64(v.s.Counts[c])
		}
		if err := addBars(p, vals, width, float64(i)-0.5, []color.Color{color.RGBA{0x4c, 0x72, 0xb0, 0xff}, color.RGBA{0xdd, 0x84, 0x52, 0xff}}[i], v.name); err != nil {
			return f, err
		}
	}
	p.Legend.Top = true
	p.Y.Min, p.Y.Max = 0, float64(pr.N)*1.3
	var ticks []plot.Tick
	step := max(1, pr.N/5)
	for t := 0; t <= pr.N; t += step {
		ticks = append(ticks, plot.Tick{Value: float64(t), Label: strconv.Itoa(t)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	err := f.render(func(c draw.Canvas) { p.Draw(margin(c)) })
	return f, err
}

// figures renders the report's figures: Strict/Cover with interval bars,
// replays per condition, and (when pr is not nil) the profile table. A
// figure that would have nothing to plot (no counted decision, no replay,
// no capability coded) is returned with Empty set instead of an empty
// plot.
func figures(an *analysis.Analysis, pr *profile) ([]figure, error) {
	var figs []figure
	f, err := strictCover(an)
	if err != nil {
		return nil, fmt.Errorf("figure strict-cover: %w", err)
	}
	figs = append(figs, f)
	if f, err = extraBars(an); err != nil {
		return nil, fmt.Errorf("figure extra: %w", err)
	}
	figs = append(figs, f)
	if lab(an) {
		if f, err = labelAction(an); err != nil {
			return nil, fmt.Errorf("figure label-action: %w", err)
		}
		figs = append(figs, f)
	}
	if pr != nil {
		if f, err = profileBars(pr); err != nil {
			return nil, fmt.Errorf("figure profile: %w", err)
		}
		figs = append(figs, f)
	}
	return figs, nil
}

// labelAction draws, per condition, the label accuracy (Strict out of
// the decisions with lab outcomes) next to the actual recovery
// (Recovered out of the same decisions), one pair of bars per arm: solid
// for the label, hatched-light for the recovery.
func labelAction(an *analysis.Analysis) (figure, error) {
	arms, by := armCells(an.Cells)
	conds := conditionsOf(an.Cells)
	f := figure{Name: "label-action", Title: "Label accuracy against actual recovery", Width: WideWidth, Height: WideHeight,
		Caption: "Per condition and model, on the same decisions (those with lab outcomes): the share whose final label is the preferred policy (Strict, dark) and the share whose final state recovered (Recovered, light). A gap is a label that did not become a recovery, or a recovery without the label."}
	p := plot.New()
	p.Y.Label.Text = "% of decisions with lab outcomes"
	if len(conds) > 0 { // Note: NominalX panics on no names.
		p.NominalX(conds...)
		p.X.Min, p.X.Max = -0.5, float64(len(conds))-0.5
	}
	p.Add(plotter.NewGrid())
	n := max(2*len(arms), 1)
	width := vg.Points(min(40, 360/float64(n*max(len(conds), 1))))
	for i, a := range arms {
		label := make(plotter.Values, len(conds))
		rec := make(plotter.Values, len(conds))
		for _, c := range by[a] {
			if c.LabN == 0 {
				continue
			}
			if k := slices.Index(conds, string(c.Condition)); k >= 0 {
				la := c.LabelAction
				label[k] = 100 * float64(la.StrictRecovered+la.StrictUnrecovered) / float64(c.LabN)
				rec[k] = 100 * float64(la.StrictRecovered+la.OtherRecovered) / float64(c.LabN)
			}
		}
		base := plotutil.Color(i)
		r, g, b, _ := base.RGBA()
		light := color.RGBA{uint8((r>>8 + 2*255) / 3), uint8((g>>8 + 2*255) / 3), uint8((b>>8 + 2*255) / 3), 0xff}
		for j, v := range []struct {
			vals plotter.Values
			c    color.Color
			name string
		}{{label, base, "Strict"}, {rec, light, "Recovered"}} {
			if err := addBars(p, v.vals, width, float64(2*i+j)-float64(n-1)/2, v.c, armTitle(a, arms)+" "+v.name); err != nil {
				return f, err
			}
		}
	}
	p.Legend.Top = true
	p.Y.Min, p.Y.Max = 0, 130 // room for the legend
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}})
	err := f.render(func(c draw.Canvas) { p.Draw(margin(c)) })
	return f, err
}
