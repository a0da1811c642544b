package main

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis/report"
)

// checkPNG decodes a PNG and checks its size and that something was drawn.
func checkPNG(t *testing.T, name string, data []byte, w, h int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s: not a PNG: %v", name, err)
		return
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("%s: %d×%d pixels, want %d×%d", name, b.Dx(), b.Dy(), w, h)
	}
	colors := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			colors[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colors) < 4 {
		t.Errorf("%s: only %d colours: a blank figure?", name, len(colors))
	}
}

// checkSVG parses an SVG and checks its size (points at 96 dpi: px × 3/4).
func checkSVG(t *testing.T, name string, data []byte, w, h int) {
	t.Helper()
	var root struct {
		XMLName xml.Name
		Width   string `xml:"width,attr"`
		Height  string `xml:"height,attr"`
	}
	if err := xml.Unmarshal(data, &root); err != nil {
		t.Errorf("%s: not XML: %v", name, err)
		return
	}
	wantW, wantH := strconv.FormatFloat(float64(w)*0.75, 'g', -1, 64)+"pt", strconv.FormatFloat(float64(h)*0.75, 'g', -1, 64)+"pt"
	if root.XMLName.Local != "svg" || root.Width != wantW || root.Height != wantH {
		t.Errorf("%s: <%s width=%q height=%q>, want <svg width=%q height=%q>", name, root.XMLName.Local, root.Width, root.Height, wantW, wantH)
	}
	if !bytes.Contains(data, []byte("<path")) || !bytes.Contains(data, []byte("<text")) {
		t.Errorf("%s: no paths or text drawn", name)
	}
}

var (
	dataURI  = regexp.MustCompile(`data:image/png;base64,([A-Za-z0-9+/=]+)`)
	sha12    = regexp.MustCompile(`sha256 [0-9a-f]{12}…`)
	external = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|\b(src|href)="(?:[^d#"]|d[^a])`)
)

func TestReport(t *testing.T) {
	dir := mockBundle(t, paperKinds, 5, nil)
	out, log, err := runCmd(t, "report", "-against", "paper", "-match-label", "-pair", "normalized,prose,cover", "-b", "4000", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	rdir := filepath.Join(dir, "report")
	type fig struct {
		name string
		w, h int
	}
	w, h := report.StrictCoverSize(2)
	pw, ph := report.StrictCoverSize(4 + 1) // pass^k: 4 conditions and the legend
	figs := []fig{{"strict-cover", w, h}, {"pass-k", pw, ph}, {"extra", report.WideWidth, report.WideHeight}, {"profile", report.WideWidth, report.WideHeight}}
	if w != 800 || h != 340 || pw != 1200 || ph != 680 {
		t.Errorf("StrictCoverSize(2) = %d×%d, want 800×340; StrictCoverSize(5) = %d×%d, want 1200×680", w, h, pw, ph)
	}
	for _, f := range append([]string{"report.md", "report.html"}, "figures/strict-cover.png", "figures/pass-k.svg", "figures/extra.svg", "figures/profile.png") {
		if !strings.Contains(out, filepath.Join(rdir, f)) {
			t.Errorf("output does not list %s:\n%s", f, out)
		}
	}
	for _, f := range figs {
		p, err := os.ReadFile(filepath.Join(rdir, "figures", f.name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		checkPNG(t, f.name+".png", p, f.w, f.h)
		s, err := os.ReadFile(filepath.Join(rdir, "figures", f.name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		checkSVG(t, f.name+".svg", s, f.w, f.h)
	}

	md, err := os.ReadFile(filepath.Join(rdir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report-mock.md.golden", sha12.ReplaceAllString(string(md), "sha256 …"))
	for _, s := range []string{"## Counts", "| llama3.2-3b | default | normalized | 105 | 46 |", "## Paired comparisons",
		"### condition: code_only − normalized on Strict (predeclared)", "## Selective accuracy and stopping", "stopping is always safe but is not progress",
		"## Against the paper", "| D failure detection | 18 | 21 |", "![Strict and Cover per model and condition](figures/strict-cover.png)",
		"## Consistency across replicates (pass^k)", "![Consistency across replicates (pass^k)](figures/pass-k.png)"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}

	page, err := os.ReadFile(filepath.Join(rdir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	// Self-contained: every image is a data: URI of a valid PNG, nothing
	// refers to the network or to other files.
	imgs := dataURI.FindAllStringSubmatch(html, -1)
	if len(imgs) != len(figs) {
		t.Errorf("%d embedded images, want %d", len(imgs), len(figs))
	}
	for i, m := range imgs {
		data, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil {
			t.Fatalf("image %d: %v", i, err)
		}
		if i < len(figs) {
			checkPNG(t, "embedded "+figs[i].name, data, figs[i].w, figs[i].h)
		}
	}
	stripped := dataURI.ReplaceAllString(html, "data:image/png;base64,…")
	if loc := external.FindStringIndex(stripped); loc != nil {
		t.Errorf("report.html refers to something outside itself: %q", stripped[max(0, loc[0]-60):min(len(stripped), loc[1]+60)])
	}
	for _, tag := range []string{"<link", "<script", "@import", "url("} {
		if strings.Contains(stripped, tag) {
			t.Errorf("report.html contains %s", tag)
		}
	}
	golden(t, "report-mock.html.golden", sha12.ReplaceAllString(stripped, "sha256 …"))

	// Without -against the paper section is left out; a second report
	// into the same directory overwrites the first.
	if _, _, err := runCmd(t, "report", "-b", "1000", dir); err != nil {
		t.Fatal(err)
	}
	md2, _ := os.ReadFile(filepath.Join(rdir, "report.md"))
	if strings.Contains(string(md2), "Against the paper") || !strings.Contains(string(md2), "B = 1000") {
		t.Errorf("report without -against:\n%s", md2)
	}
}

func TestReportProfileSource(t *testing.T) {
	dir := mockBundle(t, map[string]string{"qwen3.5-0.8b": "erratic"}, 1, nil)
	out := filepath.Join(t.TempDir(), "r")
	// The recorded manifest is the built-in one: the profile is shown.
	if _, _, err := runCmd(t, "report", "-out", out, "-b", "1000", dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "| C cause/subtype | 0 | 19 |") {
		t.Errorf("profile table missing:\n%s", md)
	}
	// A manifest whose corpus is not the bundle's is refused.
	alt := filepath.Join(t.TempDir(), "m")
	os.MkdirAll(filepath.Join(alt, "corpus"), 0o755)
	os.MkdirAll(filepath.Join(alt, "prompts"), 0o755)
	src, _ := os.ReadFile("../../manifests/corpus/paper/P01.json")
	os.WriteFile(filepath.Join(alt, "corpus", "P01.json"), src, 0o644)
	tmpl, _ := os.ReadFile("../../manifests/prompts/default.tmpl")
	os.WriteFile(filepath.Join(alt, "prompts", "default.tmpl"), tmpl, 0o644)
	os.WriteFile(filepath.Join(alt, "m.yaml"), []byte("name: one\ncorpus: corpus\nprompts: [{name: default, path: prompts/default.tmpl}]\nconditions: [normalized]\nreplicates: 1\nseed: 1\ntemperature: 0\nmodels: [{name: s, backend: baseline, model: always_stop}]\n"), 0o644)
	_, _, err := runCmd(t, "report", "-out", out, "-manifest", filepath.Join(alt, "m.yaml"), dir)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "flag -manifest: the corpus of") {
		t.Errorf("report -manifest with another corpus: %v", err)
	}
	// A bundle whose recorded manifest is not at hand: the report says so.
	mf := filepath.Join(dir, "manifest.json")
	b, _ := os.ReadFile(mf)
	os.WriteFile(mf, bytes.Replace(b, []byte(`"source": "builtin:baselines.yaml"`), []byte(`"source": "/nonexistent/study.yaml"`), 1), 0o644)
	_, log, err := runCmd(t, "report", "-out", out, "-b", "1000", dir)
	if err != nil {
		t.Fatal(err)
	}
	md, _ = os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "No profile table: the bundle's manifest /nonexistent/study.yaml is not at hand; pass -manifest") ||
		!strings.Contains(log, "warning:") {
		t.Errorf("missing manifest: log %q\n%s", log, md)
	}
	// The first report's profile figure is removed: it does not stand
	// beside a report without a profile.
	if _, err := os.Stat(filepath.Join(out, "figures", "profile.png")); err == nil || strings.Contains(string(md), "figures/profile.png") {
		t.Error("a profile figure is left beside a report without a profile")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "one bundle directory"},
		{[]string{"report", "-against", "x", dir}, "flag -against"},
		{[]string{"report", "-pair", "a,b", dir}, "flag -pair"},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			if _, _, err := runCmd(t, tc.args...); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestReportNoReplays: the baselines never replay, so the report has no
// replay figure (it would be an empty plot) but says why in its place.
func TestReportNoReplays(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", dir); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	out, log, err := runCmd(t, "report", "-b", "1000", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	rdir := filepath.Join(dir, "report")
	if strings.Contains(out, "extra.") {
		t.Errorf("report wrote a replay figure:\n%s", out)
	}
	for _, f := range []string{"extra.png", "extra.svg"} {
		if _, err := os.Stat(filepath.Join(rdir, "figures", f)); err == nil {
			t.Errorf("figures/%s exists", f)
		}
	}
	const note = "No replays were issued; no figure."
	md, _ := os.ReadFile(filepath.Join(rdir, "report.md"))
	if !strings.Contains(string(md), "## Replays\n\nNeedless identical replays") || !strings.Contains(string(md), "\n"+note+"\n") || strings.Contains(string(md), "figures/extra") {
		t.Errorf("report.md does not say there is no replay figure:\n%s", md)
	}
	page, _ := os.ReadFile(filepath.Join(rdir, "report.html"))
	if !strings.Contains(string(page), "<p>"+note+"</p>") || strings.Count(string(page), "<img") != 3 { // strict-cover, pass-k, profile
		t.Errorf("report.html: %d images, note present: %v", strings.Count(string(page), "<img"), strings.Contains(string(page), note))
	}
}

// TestReportHostilePath: a bundle path holding HTML, Markdown and a line
// break, which the partial warning quotes, is text in report.md as it is
// in report.html (escaped there): no tag, link, emphasis or heading of its
// own. report.md took it raw.
func TestReportHostilePath(t *testing.T) {
	dir, _ := interruptedBundle(t)
	hostile := filepath.Join(filepath.Dir(dir), "run <img src=x onerror=alert(1)> [x](javascript:alert(2)) *em* `tick` &amp;\n# Injected")
	if err := os.Rename(dir, hostile); err != nil {
		t.Fatal(err)
	}
	if _, log, err := runCmd(t, "report", "-partial", "-b", "1000", hostile); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	md := string(mustRead(t, filepath.Join(hostile, "report", "report.md")))
	page := string(mustRead(t, filepath.Join(hostile, "report", "report.html")))
	if !strings.Contains(page, "run &lt;img src=x onerror=alert(1)&gt; [x](javascript:alert(2)) *em* <code>tick</code> &amp;amp;\n# Injected") {
		t.Errorf("report.html does not escape the path:\n%.1500s", page)
	}
	if want := "run \\<img src=x onerror=alert(1)\\> \\[x\\](javascript:alert(2)) \\*em\\* `tick` \\&amp; \\# Injected"; !strings.Contains(md, want) {
		t.Errorf("report.md lacks the escaped path %q:\n%.1500s", want, md)
	}
	for _, bad := range []string{`(^|[^\\])<img`, `\[x\]\(`, `\*em\*`, `\n# Injected`, ` &amp;`} {
		if regexp.MustCompile(bad).MatchString(md) {
			t.Errorf("report.md holds %s of the path as markup", bad)
		}
	}
}
