package report

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

func TestStrictCoverSize(t *testing.T) {
	for n, want := range map[int][2]int{0: {400, 340}, 1: {400, 340}, 2: {800, 340}, 3: {1200, 340}, 4: {1200, 680}, 7: {1200, 1020}} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			if w, h := StrictCoverSize(n); w != want[0] || h != want[1] {
				t.Errorf("StrictCoverSize(%d) = %d×%d, want %d×%d", n, w, h, want[0], want[1])
			}
		})
	}
}

// TestFiguresGrid: four arms make a 3 + 1 panel grid.
func TestFiguresGrid(t *testing.T) {
	acc := analysis.NewAccumulator()
	for m := range 4 {
		for _, c := range study.Conditions[:2] {
			for s := range 12 {
				r := results.Row{Model: fmt.Sprintf("m%d", m), Prompt: "p", Condition: string(c), Scenario: fmt.Sprint(s), Replicate: 1, Server: fmt.Sprint(s % 6), Status: results.StatusOK, Replays: int64(s % 2), Outcome: simulator.Values{}.WithFlag(simulator.Strict, s%3 == 0).WithFlag(simulator.Cover, s%2 == 0 || s%3 == 0)}
				acc.Add(&r)
			}
		}
	}
	an, err := acc.Analyze(context.Background(), analysis.Options{B: 200})
	if err != nil {
		t.Fatal(err)
	}
	figs, err := figures(an, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 2 || figs[0].Name != "strict-cover" || figs[1].Name != "extra" {
		t.Fatalf("figures %v", figs)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(figs[0].PNG))
	if err != nil || cfg.Width != 1200 || cfg.Height != 680 || figs[0].Width != 1200 || figs[0].Height != 680 {
		t.Errorf("strict-cover PNG %+v (%v), want 1200×680", cfg, err)
	}
	if !bytes.HasPrefix(figs[1].SVG, []byte("<?xml")) || figs[1].Empty != "" {
		t.Errorf("extra SVG starts %q (empty: %q)", figs[1].SVG[:min(20, len(figs[1].SVG))], figs[1].Empty)
	}
}

// TestEmptyFigures: a figure with nothing to plot (no replays; no counted
// decision; no capability coded) is not drawn: the report says so in its
// place, writes no file for it and removes the file an earlier report left.
func TestEmptyFigures(t *testing.T) {
	acc := analysis.NewAccumulator()
	for s := range 12 {
		r := results.Row{Model: "m", Prompt: "p", Condition: string(study.Normalized), Scenario: fmt.Sprint(s), Replicate: 1, Server: fmt.Sprint(s % 6), Status: results.StatusOK, Outcome: simulator.Values{}.WithFlag(simulator.Strict, s%3 == 0).WithFlag(simulator.Cover, s%2 == 0)}
		acc.Add(&r)
	}
	an, err := acc.Analyze(context.Background(), analysis.Options{B: 200})
	if err != nil {
		t.Fatal(err)
	}
	uncoded := &profile{N: 21, Control: study.ViewSummary{Counts: map[string]int{}}, Content: study.ViewSummary{Counts: map[string]int{}}}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, FigureDir), 0o755)
	for _, f := range []string{"extra.png", "extra.svg", "profile.png"} {
		os.WriteFile(filepath.Join(dir, FigureDir, f), []byte("stale"), 0o644)
	}
	written, err := Write(dir, &Input{Analysis: an, Profile: uncoded})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 4 { // strict-cover.png and .svg, report.md, report.html
		t.Errorf("wrote %v", written)
	}
	for _, f := range []string{"extra.png", "extra.svg", "profile.png"} {
		t.Run(f, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, FigureDir, f)); err == nil {
				t.Errorf("%s is left", f)
			}
		})
	}
	md, _ := os.ReadFile(filepath.Join(dir, MarkdownFile))
	page, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	for _, s := range []string{"No replays were issued; no figure.", "No scenario has any capability coded, in either view; no figure."} {
		t.Run(s, func(t *testing.T) {
			if !strings.Contains(string(md), "\n"+s+"\n") || !strings.Contains(string(page), "<p>"+s+"</p>") {
				t.Errorf("the report lacks %q", s)
			}
		})
	}
	if strings.Contains(string(md), "figures/extra") || strings.Contains(string(md), "figures/profile") ||
		strings.Count(string(page), "<img") != 1 || !strings.Contains(string(md), "figures/strict-cover.png") {
		t.Errorf("the report shows other figures than strict-cover:\n%s", md)
	}

	// An analysis with no decisions, or only failed ones, has no figure.
	failed := analysis.NewAccumulator()
	failed.Add(&results.Row{Model: "m", Prompt: "p", Condition: "prose", Scenario: "S1", Server: "A", Status: results.StatusError})
	for _, tc := range []struct {
		name string
		acc  *analysis.Accumulator
	}{{"no decision", analysis.NewAccumulator()}, {"only failed decisions", failed}} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.acc
			an, err := a.Analyze(context.Background(), analysis.Options{B: 200})
			if err != nil {
				t.Fatal(err)
			}
			figs, err := figures(an, nil)
			if err != nil || len(figs) != 2 {
				t.Fatalf("Figures: %v, %d figures", err, len(figs))
			}
			if figs[0].Empty != "No decision was counted (the bundle holds none, or every call failed); no figure." || figs[0].PNG != nil ||
				figs[1].Empty != "No replays were issued; no figure." || figs[1].PNG != nil {
				t.Errorf("figures of %d decisions: %q, %q", a.Decisions(), figs[0].Empty, figs[1].Empty)
			}
		})
	}
}

func TestRendering(t *testing.T) {
	if got := slug("Actionability profile (Table I)"); got != "actionability-profile-table-i" {
		t.Errorf("slug = %q", got)
	}
	if got := inline("a <b> & `x<y` and `open"); got != "a &lt;b&gt; &amp; <code>x&lt;y</code> and `open" {
		t.Errorf("inline = %q", got)
	}
	d := &document{Title: "T <1>", Blocks: []block{
		&heading{2, "Sec"}, &para{"p | q"},
		&table{Header: []string{"a", "b|c"}, Rows: [][]string{{"1", "x|y"}}, Right: []bool{false, true}},
	}}
	var md, ht strings.Builder
	if err := d.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	want := "# T \\<1\\>\n\n## Sec\n\np | q\n\n| a | b\\|c |\n|---|---:|\n| 1 | x\\|y |\n"
	if md.String() != want {
		t.Errorf("Markdown:\n%s\nwant\n%s", md.String(), want)
	}
	if err := d.HTML(&ht); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<title>T &lt;1&gt;</title>", `<h2 id="sec">Sec</h2>`, "<p>p | q</p>", `<td class="r">x|y</td>`} {
		t.Run(s, func(t *testing.T) {
			if !strings.Contains(ht.String(), s) {
				t.Errorf("HTML lacks %q:\n%s", s, ht.String())
			}
		})
	}
}

// TestMarkdownEscapes: report.md says what report.html says. Text outside
// code spans is literal (HTML and Markdown markup backslash-escaped, line
// breaks flattened so no text opens a block), and backticks pair into code
// spans as inline pairs them, whatever runs of them the text holds.
func TestMarkdownEscapes(t *testing.T) {
	for _, c := range []struct {
		in   string
		para bool
		want string
	}{
		{"partial bundle /tmp/<img src=x onerror=alert(1)>: done", true, `partial bundle /tmp/\<img src=x onerror=alert(1)\>: done`},
		{"[x](javascript:alert(2)) and ![i](u)", true, `\[x\](javascript:alert(2)) and !\[i\](u)`},
		{"a\n\n# Injected\r\n| t |", true, `a  \# Injected | t |`},
		{"*em* _em_ snake_case __b__ ~~s~~ a\\b", true, `\*em\* \_em\_ snake_case \_\_b\_\_ \~\~s\~\~ a\\b`},
		{"&lt; &#60; Efron & Tibshirani", true, `\&lt; \&\#60; Efron & Tibshirani`},
		{"- item", true, `\- item`},
		{"- item", false, `- item`},
		{"1. item, 2.5 and 3) x", true, `1\. item, 2.5 and 3) x`},
		{"  indented", true, `indented`},
		{"run `a<b>` x", true, "run `a<b>` x"},
		{"open ` <i>", true, "open \\` \\<i\\>"},
		{"empty `` code", true, "empty  code"},
		{"`a``b` c", true, "`ab` c"},
		{"``<img>`", true, "\\<img\\>\\`"},
	} {
		t.Run(c.want, func(t *testing.T) {
			if got := mdInline(c.in, c.para); got != c.want {
				t.Errorf("mdInline(%q, %v) = %q, want %q", c.in, c.para, got, c.want)
			}
		})
	}
}

// TestFiguresOddInput: a condition outside the vocabulary and a cell with
// only failed decisions still draw (no panic, no error).
func TestFiguresOddInput(t *testing.T) {
	acc := analysis.NewAccumulator()
	for s := range 6 {
		for _, r := range []results.Row{
			{Model: "m", Prompt: "p", Condition: "weird", Scenario: fmt.Sprint(s), Server: fmt.Sprint(s), Status: results.StatusOK, Outcome: simulator.Values{}.WithFlag(simulator.Cover, true)},
			{Model: "m", Prompt: "p", Condition: "prose", Scenario: fmt.Sprint(s), Server: fmt.Sprint(s), Status: results.StatusError},
		} {
			acc.Add(&r)
		}
	}
	an, err := acc.Analyze(context.Background(), analysis.Options{B: 100})
	if err != nil {
		t.Fatal(err)
	}
	figs, err := figures(an, nil)
	if err != nil || len(figs) != 2 || len(figs[0].PNG) == 0 || figs[1].Empty == "" {
		t.Fatalf("Figures: %v, %d figures", err, len(figs))
	}
	doc := build(&Input{Analysis: an, ProfileNote: "none"}, figs)
	var b strings.Builder
	if err := doc.HTML(&b); err != nil || !strings.Contains(b.String(), "weird") {
		t.Errorf("HTML: %v", err)
	}
}

// TestLabelActionFigure: an analysis with lab outcomes gets the
// label-versus-action figure and section; one without has neither.
func TestLabelActionFigure(t *testing.T) {
	tr, f := true, false
	acc := analysis.NewAccumulator()
	for _, c := range study.Conditions[:2] {
		for s := range 12 {
			calls, ms := int64(2), int64(0)
			rec := &f
			if s%2 == 0 {
				rec = &tr
			}
			r := results.Row{Model: "m", Prompt: "act", Condition: string(c), Scenario: fmt.Sprint(s), Replicate: 1, Server: fmt.Sprint(s % 6), Status: results.StatusOK, Outcome: simulator.Values{}.WithFlag(simulator.Strict, s%3 == 0).WithFlag(simulator.Cover, true).WithFlag(simulator.Recovered, *rec).WithFlag(simulator.Harm, f).WithFlag(simulator.InvalidAction, f).With(simulator.Calls, calls).With(simulator.LabMS, ms)}
			acc.Add(&r)
		}
	}
	an, err := acc.Analyze(context.Background(), analysis.Options{B: 200})
	if err != nil {
		t.Fatal(err)
	}
	figs, err := figures(an, nil)
	if err != nil {
		t.Fatal(err)
	}
	var la *figure
	for i := range figs {
		if figs[i].Name == "label-action" {
			la = &figs[i]
		}
	}
	if la == nil || la.Empty != "" || !bytes.HasPrefix(la.SVG, []byte("<?xml")) {
		t.Fatalf("figures %v", figs)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(la.PNG)); err != nil || cfg.Width != WideWidth {
		t.Errorf("label-action PNG %+v %v", cfg, err)
	}
	var b bytes.Buffer
	if err := build(&Input{Analysis: an}, figs).Markdown(&b); err != nil {
		t.Fatal(err)
	}
	// 12 decisions per condition: Strict at s = 0, 3, 6, 9; recovered at even s.
	if !strings.Contains(b.String(), "## Label against action") || !strings.Contains(b.String(), "| m | act | normalized | 12 | 33.3 | 50.0 | 2 | 2 | 4 | 4 |") {
		t.Errorf("report:\n%s", b.String())
	}
}
