package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/mcpstress/stress/analysis/stats"
)

// jsonNumber matches a number in JSON text (also digits inside strings,
// which then must match as numbers).
var jsonNumber = regexp.MustCompile(`-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?`)

// goldenJSON is golden for JSON output printed at full precision: the
// text must match testdata/name except that a number may differ from the
// file's in its last digits (relative 1e-12).
//
// Note: a float64 printed in full depends in its last bits on the CPU
// (fused multiply-add, the math package's per-architecture code); the
// tolerance keeps the file valid on every platform and still pins 12
// significant digits.
func goldenJSON(t *testing.T, name, got string) {
	t.Helper()
	if *update {
		golden(t, name, got)
		return
	}
	file := filepath.Join("testdata", name)
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/stress -update to create it)", err)
	}
	if got == string(want) || nearJSON(string(want), got, 1e-12) {
		return
	}
	t.Errorf("output differs from %s:\n%s", file, diff(string(want), got))
}

// nearJSON reports whether want and got are the same text once their
// numbers are taken out, and each number of got is within relative
// tolerance tol of want's.
func nearJSON(want, got string, tol float64) bool {
	if jsonNumber.ReplaceAllString(want, "#") != jsonNumber.ReplaceAllString(got, "#") {
		return false
	}
	wn, gn := jsonNumber.FindAllString(want, -1), jsonNumber.FindAllString(got, -1)
	for i := range wn {
		if wn[i] == gn[i] {
			continue
		}
		w, err1 := strconv.ParseFloat(wn[i], 64)
		g, err2 := strconv.ParseFloat(gn[i], 64)
		if err1 != nil || err2 != nil || math.Abs(g-w) > tol*max(math.Abs(w), math.Abs(g)) {
			return false
		}
	}
	return true
}

func TestNearJSON(t *testing.T) {
	for _, tc := range []struct {
		name      string
		want, got string
		ok        bool
	}{
		{"agrees to 1e-12", `{"p": 0.04703102743951592}`, `{"p": 0.04703102743951608}`, true},
		{"rounded to six digits", `{"p": 0.047031}`, `{"p": 0.04703102743951608}`, false},
		{"a tiny value against 0", `{"p": 4.930380657631324e-32}`, `{"p": 0}`, false},
		{"a different integer", `{"n": 105}`, `{"n": 104}`, false},
		{"a different key", `{"p": 1}`, `{"q": 1}`, false},
		{"different spacing", `[0.1, 0.2]`, `[0.1,0.2]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nearJSON(tc.want, tc.got, 1e-12); got != tc.ok {
				t.Errorf("nearJSON(%s, %s) = %v, want %v", tc.want, tc.got, got, tc.ok)
			}
		})
	}
}

// pairJSON is a paired comparison as analyze -json and compare -json
// print it.
type pairJSON struct {
	DiscordantAB int       `json:"discordant_ab"`
	DiscordantBA int       `json:"discordant_ba"`
	McNemarP     *float64  `json:"mcnemar_p"`
	Bootstrap    []float64 `json:"bootstrap"`
}

// checkExactP checks that every pair's p-value is exactly the float64 the
// statistics compute, and that at least one is below 1e-9 (and not 0).
func checkExactP(t *testing.T, what string, pairs []pairJSON) {
	t.Helper()
	smallest := 1.0
	for i, p := range pairs {
		if p.McNemarP == nil {
			t.Errorf("%s: pair %d %+v has no p-value", what, i, p)
			continue
		}
		if want := stats.McNemarExact(p.DiscordantAB, p.DiscordantBA); *p.McNemarP != want {
			t.Errorf("%s: pair %d with %d/%d discordant pairs: mcnemar_p %v, want exactly %v",
				what, i, p.DiscordantAB, p.DiscordantBA, *p.McNemarP, want)
		}
		smallest = min(smallest, *p.McNemarP)
	}
	if !(smallest > 0 && smallest < 1e-9) {
		t.Errorf("%s: smallest mcnemar_p %v, want one in (0, 1e-9)", what, smallest)
	}
}

// TestJSONExact: analyze -json and compare -json print every number at
// full precision: a McNemar p-value far below 1e-6 is not 0, and p-values,
// rates and Wilson intervals read back as exactly the float64 the
// statistics compute.
func TestJSONExact(t *testing.T) {
	a := mockBundle(t, paperKinds, 5, nil)
	// llama3.2-3b (steady) is always strict under prose and 44% under
	// normalized: 59 of its 105 pairs are discordant, all one way.
	js, _, err := runCmd(t, "analyze", "-json", "-b", "1000", "-pair", "prose,normalized", a)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells []struct {
			Model, Condition string
			N                int                   `json:"n"`
			Strict           int                   `json:"strict"`
			Cover            int                   `json:"cover"`
			Rates            map[string]*float64   `json:"rates"`
			Wilson           map[string]*[]float64 `json:"wilson"`
		} `json:"cells"`
		Pairs []pairJSON `json:"pairs"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	checkExactP(t, "analyze -json", doc.Pairs)
	for _, c := range doc.Cells {
		if r := c.Rates["strict"]; r == nil || *r != float64(c.Strict)/float64(c.N) {
			t.Errorf("cell %s/%s: rates.strict %v, want exactly %d/%d", c.Model, c.Condition, r, c.Strict, c.N)
		}
		lo, hi := stats.Wilson(c.Strict, c.Cover, 0.95)
		if w := c.Wilson["selective"]; w == nil || len(*w) != 2 || (*w)[0] != lo || (*w)[1] != hi {
			t.Errorf("cell %s/%s: wilson.selective %v, want exactly [%v, %v]", c.Model, c.Condition, w, lo, hi)
		}
	}

	// The same models swapped: llama3.2-3b steady in A, erratic in B.
	b := mockBundle(t, map[string]string{"llama3.2-3b": "erratic", "qwen3.5-0.8b": "steady"}, 5, nil)
	js, _, err = runCmd(t, "compare", "-json", "-b", "1000", "-column", "strict", a, b)
	if err != nil {
		t.Fatal(err)
	}
	var cmp struct {
		Pairs []pairJSON `json:"pairs"`
	}
	if err := json.Unmarshal([]byte(js), &cmp); err != nil {
		t.Fatal(err)
	}
	checkExactP(t, "compare -json", cmp.Pairs)
}
