package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/study"
)

func TestCompareGolden(t *testing.T) {
	a := mockBundle(t, paperKinds, 5, nil)
	b := mockBundle(t, map[string]string{"llama3.2-3b": "steady-v2", "qwen3.5-0.8b": "erratic"}, 5, nil)
	out, log, err := runCmd(t, "compare", "-column", "strict,cover,retry", "-b", "5000", a, b)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	out = strings.NewReplacer(a, "RUN_A", b, "RUN_B").Replace(out)
	golden(t, "compare-mock.golden", out)

	js, _, err := runCmd(t, "compare", "-json", a, b)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		A     struct{ Dir, RunID string } `json:"a"`
		Arms  []struct{ A, B struct{ Model string } }
		Pairs []struct {
			A, B              struct{ Model string }
			Condition, Column string
			N                 int         `json:"n"`
			DiscordantAB      int         `json:"discordant_ab"`
			DiscordantBA      int         `json:"discordant_ba"`
			McNemarP          *float64    `json:"mcnemar_p"`
			Bootstrap         *[2]float64 `json:"bootstrap"`
		} `json:"pairs"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.A.Dir != a || len(doc.Arms) != 2 || len(doc.Pairs) != 2*4*7 {
		t.Fatalf("compare -json: a %+v, %d arms, %d pairs", doc.A, len(doc.Arms), len(doc.Pairs))
	}
	for _, p := range doc.Pairs {
		if p.A.Model != p.B.Model || p.N != 105 || p.McNemarP == nil || p.Bootstrap == nil {
			t.Errorf("pair %+v", p)
		}
		// The same model and prompt against itself: no discordant pairs.
		if p.A.Model == "qwen3.5-0.8b" && p.DiscordantAB+p.DiscordantBA != 0 {
			t.Errorf("identical arms differ: %+v", p)
		}
	}
}

func TestCompareRefusals(t *testing.T) {
	a := mockBundle(t, paperKinds, 2, nil)
	// Another number of replicates: the decision keys differ.
	b := mockBundle(t, paperKinds, 3, nil)
	_, _, err := runCmd(t, "compare", a, b)
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "compare refuses") ||
		!strings.Contains(err.Error(), "decision keys of A arm llama3.2-3b/default and B arm llama3.2-3b/default do not match: B has decision llama3.2-3b/default/normalized/S01/3, A does not") {
		t.Errorf("different replicates: %v", err)
	}
	// A smaller corpus run (same files, one scenario left out) is refused
	// by its keys too.
	c := mockBundle(t, paperKinds, 2, func(s []study.Scenario) []study.Scenario { return s[1:] })
	if _, _, err := runCmd(t, "compare", a, c); err == nil || !strings.Contains(err.Error(), "A has decision llama3.2-3b/default/normalized/S01/1, B does not") {
		t.Errorf("fewer scenarios: %v", err)
	}
	// Another corpus: refused on the hashes, before any decision is read.
	d := filepath.Join(t.TempDir(), "d")
	os.MkdirAll(d, 0o755)
	m, _ := os.ReadFile(filepath.Join(a, "manifest.json"))
	var rec map[string]any
	json.Unmarshal(m, &rec)
	rec["corpus_files"].([]any)[3].(map[string]any)["sha256"] = strings.Repeat("0", 64)
	m, _ = json.Marshal(rec)
	os.WriteFile(filepath.Join(d, "manifest.json"), m, 0o644)
	_, _, err = runCmd(t, "compare", a, d)
	if err == nil || !strings.Contains(err.Error(), "corpus hashes differ") || !strings.Contains(err.Error(), "corpus/paper/P04.json") {
		t.Errorf("different corpus: %v", err)
	}
	// Usage errors name the flag.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{a}, "two bundle directories"},
		{[]string{"-column", "extra", a, a}, "flag -column"},
		{[]string{"-arm-a", "gpt", a, a}, `flag -arm-a/-arm-b: arm selection: bundle A: no arm "gpt"`},
		{[]string{"-b", "-3", a, a}, "flag -b"},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			if _, _, err := runCmd(t, append([]string{"compare"}, tc.args...)...); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("compare %v: %v, want a usage error with %q", tc.args, err, tc.want)
			}
		})
	}
	if _, _, err := runCmd(t, "compare", a, filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "RUN_B") {
		t.Errorf("missing bundle: %v", err)
	}
}
