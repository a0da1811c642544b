package report_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/analysis/report"
)

// TestPowerFigure checks the power figure: one panel per contrast with
// its name as title, a PNG and an SVG, the caption naming the test, the
// difference and the servers; no contrast gives an Empty figure; and
// PowerSection lays out the text, the pilot estimates it clamped, the
// table with one row per design and the figure.
func TestPowerFigure(t *testing.T) {
	cs := []analysis.PowerContrast{{Name: "first contrast", Base: 0.3, ICC: 0.2, ArmCorr: 1},
		{Name: "second contrast", Base: 0.5, ICC: 0.4, ArmCorr: 0, Clamped: []analysis.PowerClamp{{Field: "arm_corr", Estimate: "-0.2", Value: 0}}}}
	pw, err := analysis.EstimatePower(context.Background(), cs, analysis.PowerOptions{Diff: 0.2, Scenarios: []int{10, 20}, Replicates: []int{1, 3}, Servers: []int{5}, Studies: 50})
	if err != nil {
		t.Fatal(err)
	}
	f, err := report.PowerFigure(pw)
	if err != nil {
		t.Fatal(err)
	}
	if f.Empty != "" || !bytes.HasPrefix(f.PNG, []byte("\x89PNG")) || !bytes.Contains(f.SVG, []byte("first contrast")) || !bytes.Contains(f.SVG, []byte("second contrast")) {
		t.Errorf("figure: empty %q, %d PNG bytes, SVG without the panel titles", f.Empty, len(f.PNG))
	}
	for _, s := range []string{"scenario-level sign-flip test", "+20.0 percentage points", "5 servers", "50 simulated studies"} {
		t.Run(s, func(t *testing.T) {
			if !strings.Contains(f.Caption, s) {
				t.Errorf("caption lacks %q: %s", s, f.Caption)
			}
		})
	}
	d := &report.Doc{Title: "t"}
	report.PowerSection(d, pw, &f)
	var md strings.Builder
	if err := d.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(md.String(), "\n| first contrast |"); n != 4 {
		t.Errorf("%d table rows of the first contrast, want 4:\n%s", n, md.String())
	}
	if !strings.Contains(md.String(), "pilot contrast second contrast: arm correlation -0.2 clamped to 0.") {
		t.Errorf("the clamped estimate is not named:\n%s", md.String())
	}
	if !strings.Contains(md.String(), "![Power by design](figures/power.png)") {
		t.Errorf("no figure in\n%s", md.String())
	}
	empty, err := report.PowerFigure(&analysis.Power{})
	if err != nil || empty.Empty == "" || empty.PNG != nil {
		t.Errorf("no contrast: %+v, %v", empty.Empty, err)
	}
}
