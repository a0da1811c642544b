package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/manifests"
)

// promptBundle runs a two-prompt study: the built-in prompt "default" and
// "reason", the same template with reasonMarker added to the system
// message, with one mock model of kind steady (which the mock answers as
// steady-v2 under "reason"), 3 replicates.
func promptBundle(t *testing.T, comparisons ...string) string {
	t.Helper()
	edit := func(m *manifests.Resolved) {
		m.Comparisons = comparisons
		def := m.Prompts[0]
		text := strings.Replace(def.Text, `{{define "system" -}}`+"\n", `{{define "system" -}}`+"\n"+reasonMarker+"\n", 1)
		if text == def.Text {
			t.Fatal("the default prompt has no system template to extend")
		}
		sum := sha256.Sum256([]byte(text))
		m.Prompts = append(m.Prompts, manifests.PromptFile{Name: "reason", Path: "prompts/reason.tmpl", SHA256: hex.EncodeToString(sum[:]), Text: text})
		m.Manifest.Prompts = append(m.Manifest.Prompts, manifests.Prompt{Name: "reason", Path: "prompts/reason.tmpl"})
	}
	return runMockPlan(t, mockPlanWith(t, map[string]string{"llama3.2-3b": "steady"}, 3, nil, edit))
}

// TestPromptComparison is issue 15's "done when": a prompt comparison on
// a two-prompt study prints one table with raw and adjusted p-values, the
// randomization tests and the bootstrap intervals per contrast
// (testdata/analyze-prompts.golden); the JSON agrees with compare -pair
// on the same bundle taken twice; report has a section per contrast;
// power answers the design question from it as a pilot, with a figure.
func TestPromptComparison(t *testing.T) {
	dir := promptBundle(t)
	out, log, err := runCmd(t, "analyze", "-b", "2000", "-pair", "prompt:reason,default", "-family", "requested", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "analyze-prompts.golden", out)
	for _, s := range []string{"McNemar p", "flip p (scenario)", "flip p (server)", "Holm p", "BH p", "bootstrap", "boot-t",
		"Family for the adjusted p-values: the requested (-pair) comparisons (3 comparisons with a p-value; 1",
		"Left out of the family as untestable"} {
		if !strings.Contains(out, s) {
			t.Errorf("analyze output lacks %q", s)
		}
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[0] == "prompt" && strings.HasPrefix(f[1], "llama3.2-3b/") && strings.Join(f[2:5], " ") == "reason − default" {
			rows++
		}
	}
	if rows != 4 {
		t.Errorf("%d prompt rows in the table, want one per condition (4)", rows)
	}
	// Unprefixed, the prompts resolve; the JSON carries the same pairs.
	js, _, err := runCmd(t, "analyze", "-json", "-b", "500", "-pair", "reason,default", dir)
	if err != nil {
		t.Fatal(err)
	}
	type pairJSON struct {
		Factor, Model, Prompt, Condition, A, B string
		Diff                                   float64  `json:"diff"`
		N                                      int      `json:"n"`
		InFamily                               bool     `json:"in_family"`
		Untestable                             bool     `json:"untestable"`
		Holm                                   *float64 `json:"holm_p"`
		Flip                                   struct {
			Informative int     `json:"informative"`
			P           float64 `json:"p"`
			Exact       bool    `json:"exact"`
		} `json:"sign_flip_scenario"`
	}
	var doc struct {
		Family struct {
			Size       int `json:"size"`
			Untestable int `json:"untestable"`
		} `json:"family"`
		Pairs []pairJSON `json:"pairs"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	byCond := map[string]pairJSON{}
	for _, p := range doc.Pairs {
		if p.Factor == "prompt" {
			byCond[p.Condition] = p
			// A pair whose scenarios never differ (prose) is untestable:
			// left out of the family, without adjusted p-values.
			untestable := p.Flip.Informative == 0
			if p.A != "reason" || p.B != "default" || p.Model != "llama3.2-3b" || p.N != 63 || !p.Flip.Exact ||
				p.InFamily == untestable || p.Untestable != untestable || (p.Holm == nil) != untestable {
				t.Errorf("prompt pair %+v", p)
			}
		}
	}
	// 2 prompts × 2 predeclared + 4 conditions of the prompt pair, the
	// untestable ones left out.
	if len(byCond) != 4 || doc.Family.Size+doc.Family.Untestable != 8 || doc.Family.Untestable == 0 {
		t.Errorf("%d prompt pairs, family %d + %d untestable; want 4 and 8 in all", len(byCond), doc.Family.Size, doc.Family.Untestable)
	}
	cjs, log, err := runCmd(t, "compare", "-json", "-b", "500", "-column", "strict", "-pair", "prompt:reason,default", dir, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	var cdoc struct {
		Pairs []struct {
			Condition string  `json:"condition"`
			Diff      float64 `json:"diff"`
			Flip      struct {
				P float64 `json:"p"`
			} `json:"sign_flip_scenario"`
		} `json:"pairs"`
	}
	if err := json.Unmarshal([]byte(cjs), &cdoc); err != nil {
		t.Fatal(err)
	}
	if len(cdoc.Pairs) != 4 {
		t.Fatalf("compare: %d rows, want 4", len(cdoc.Pairs))
	}
	for _, r := range cdoc.Pairs {
		a := byCond[r.Condition]
		if math.Abs(r.Diff-a.Diff) > 1e-15 || r.Flip.P != a.Flip.P {
			t.Errorf("%s: compare diff %v p %v, analyze diff %v p %v", r.Condition, r.Diff, r.Flip.P, a.Diff, a.Flip.P)
		}
	}
	if _, _, err := runCmd(t, "compare", "-pair", "prompt:reason,default", "-arm-a", "llama3.2-3b", dir, dir); !errors.Is(err, errUsage) {
		t.Errorf("-pair with -arm-a: %v, want a usage error", err)
	}

	rep := filepath.Join(t.TempDir(), "report")
	if _, log, err := runCmd(t, "report", "-b", "500", "-pair", "prompt:reason,default", "-power-diff", "0.15", "-out", rep, dir); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	md, err := os.ReadFile(filepath.Join(rep, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"### condition: code_only − normalized on Strict (predeclared)", "### prompt: reason − default on Strict",
		"## Power and design", "![Power by design](figures/power.png)", "| llama3.2-3b/normalized |"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
	if fi, err := os.Stat(filepath.Join(rep, "figures", "power.svg")); err != nil || fi.Size() == 0 {
		t.Errorf("power figure: %v", err)
	}

	pdir := filepath.Join(t.TempDir(), "power")
	pout, log, err := runCmd(t, "power", "-pilot", dir, "-pair", "prompt:reason,default", "-diff", "0.1", "-studies", "200",
		"-scenarios", "21,42", "-replicates", "1,5", "-servers", "10", "-out", pdir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	for _, s := range []string{"power (scenario flip)", "llama3.2-3b/code_only reason − default (Strict): rate of B", "pilot prompt:reason,default"} {
		if !strings.Contains(pout, s) {
			t.Errorf("power output lacks %q:\n%s", s, pout)
		}
	}
	for _, f := range []string{"power.md", "power.png", "power.svg"} {
		if fi, err := os.Stat(filepath.Join(pdir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("power -out: %s: %v", f, err)
		}
	}
}

// TestPowerAssumed checks stress power on an assumed design: the table
// is pinned (testdata/power-assumed.golden), the JSON reads back, and
// the flag errors name the flag.
func TestPowerAssumed(t *testing.T) {
	args := []string{"power", "-rate", "0.4", "-icc", "0.3", "-arm-corr", "0.7", "-diff", "0.15", "-scenarios", "21,42", "-replicates", "1,5", "-servers", "10", "-studies", "300"}
	out, log, err := runCmd(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "power-assumed.golden", out)
	js, _, err := runCmd(t, append(args, "-json")...)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Diff      float64 `json:"diff"`
		Contrasts []struct {
			Points []struct {
				Power float64 `json:"power"`
			} `json:"points"`
		} `json:"contrasts"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || doc.Diff != 0.15 || len(doc.Contrasts) != 1 || len(doc.Contrasts[0].Points) != 4 {
		t.Errorf("JSON %v: %+v", err, doc)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"power", "-rate", "0.4", "-icc", "0.3"}, "flag -diff is required"},
		{[]string{"power", "-diff", "0.1"}, "without -pilot, give the assumed -rate and -icc"},
		{[]string{"power", "-diff", "0.1", "-rate", "0.4", "-icc", "0.3", "-scenarios", "a,b"}, "flag -scenarios"},
		{[]string{"power", "-diff", "0.7", "-rate", "0.4", "-icc", "0.3"}, "is not a rate"},
		{[]string{"power", "-diff", "0.1", "-rate", "0.4", "-icc", "0.3", "-pair", "a,b"}, "flag -pair needs -pilot"},
		{[]string{"power", "-diff", "0.1", "-rate", "0.4", "-icc", "0.3", "extra"}, "takes no arguments"},
		{[]string{"power", "-diff", "0.1", "-rate", "0.4", "-icc", "0.3", "-studies", "0"}, "flag -studies"},
		{[]string{"power", "-diff", "0.1", "-rate", "0.4", "-icc", "0.3", "-level", "0"}, "flag -level"},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			if _, _, err := runCmd(t, tc.args...); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
			}
		})
	}
	if _, _, err := runCmd(t, "power", "-diff", "0.1", "-pilot", "/nonexistent/bundle"); err == nil || !strings.Contains(err.Error(), "/nonexistent/bundle is not a results bundle") {
		t.Errorf("missing pilot: %v, want an error naming it", err)
	}
}

// TestDeclaredComparisons checks a comparison the manifest declares
// (comparisons: recorded in manifest.json): analyze computes it without
// -pair, marks it predeclared, counts it in the predeclared family, and
// a -pair asking for it again does not duplicate it.
func TestDeclaredComparisons(t *testing.T) {
	dir := promptBundle(t, "prompt:reason,default")
	js, log, err := runCmd(t, "analyze", "-json", "-b", "200", "-family", "predeclared", "-pair", "prompt:reason,default", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	var doc struct {
		Family struct {
			Size       int `json:"size"`
			Untestable int `json:"untestable"`
		} `json:"family"`
		Pairs []struct {
			Factor      string `json:"factor"`
			Predeclared bool   `json:"predeclared"`
			InFamily    bool   `json:"in_family"`
			Untestable  bool   `json:"untestable"`
		} `json:"pairs"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	prompts := 0
	for _, p := range doc.Pairs {
		if p.Factor == "prompt" {
			prompts++
			if !p.Predeclared || p.InFamily == p.Untestable {
				t.Errorf("declared prompt pair %+v, want predeclared and in the family unless untestable", p)
			}
		}
	}
	// 4 conditions, once; the family: 2 prompts × 2 pairs
	// (docs/specification.md section 4.6) + 4, less the untestable ones (no
	// scenario differs), left out.
	if prompts != 4 || doc.Family.Size+doc.Family.Untestable != 8 || doc.Family.Untestable == 0 {
		t.Errorf("%d prompt pairs, family %d + %d untestable; want 4 and 8 in all, some untestable", prompts, doc.Family.Size, doc.Family.Untestable)
	}
	out, _, err := runCmd(t, "analyze", "-b", "200", dir)
	if err != nil || !strings.Contains(out, "reason − default *") {
		t.Errorf("text output does not mark the declared comparison: %v", err)
	}
}
