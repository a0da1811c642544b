package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestProvenContrasts: analyze of a lab study (whose corpus declares
// proven preferred sets wider than the preferred policy) makes each
// predeclared comparison on Strict on Proven too, right after it and in
// the family, and counts Proven above Strict where a baseline chose a
// proven policy that is not the first; analyze of the paper study (no
// declared set) makes none on Proven.
func TestProvenContrasts(t *testing.T) {
	type pair struct {
		Spec        string `json:"spec"`
		Column      string `json:"column"`
		Model       string `json:"model"`
		Predeclared bool   `json:"predeclared"`
		InFamily    bool   `json:"in_family"`
		Untestable  bool   `json:"untestable"`
	}
	var doc struct {
		Cells []struct {
			Model, Condition string
			Strict           int `json:"strict"`
			Proven           int `json:"proven"`
		} `json:"cells"`
		Pairs []pair `json:"pairs"`
	}
	for _, tc := range []struct {
		name     string
		manifest string
		wide     bool
	}{
		{"lab.yaml proves more than Strict counts", "../../manifests/lab.yaml", true},
		{"the built-in study proves what Strict counts", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			args := []string{"run", "-quiet", "-out", dir}
			if tc.manifest != "" {
				args = append(args, tc.manifest)
			}
			if _, log, err := runCmd(t, args...); err != nil {
				t.Fatalf("%v\n%s", err, log)
			}
			js, log, err := runCmd(t, "analyze", "-json", "-b", "200", dir)
			if err != nil {
				t.Fatalf("%v\n%s", err, log)
			}
			doc.Cells, doc.Pairs = nil, nil
			if err := json.Unmarshal([]byte(js), &doc); err != nil {
				t.Fatal(err)
			}
			above := false
			for _, c := range doc.Cells {
				if c.Proven < c.Strict {
					t.Errorf("%s %s: proven %d below strict %d", c.Model, c.Condition, c.Proven, c.Strict)
				}
				above = above || c.Proven > c.Strict
			}
			if above != tc.wide {
				t.Errorf("%s: a cell with Proven above Strict: %v, want %v", tc.manifest, above, tc.wide)
			}
			// The comparisons, in order, each over every arm: a Proven one
			// right after its Strict one.
			var specs []string
			twins := 0
			for _, p := range doc.Pairs {
				if len(specs) == 0 || specs[len(specs)-1] != p.Spec {
					specs = append(specs, p.Spec)
				}
				if p.Column != "proven" {
					continue
				}
				twins++
				if !p.Predeclared || !p.InFamily && !p.Untestable {
					t.Errorf("%s: pair %+v is not a predeclared member of the family", tc.manifest, p)
				}
			}
			for i, s := range specs {
				if base, ok := strings.CutSuffix(s, ",proven"); ok && (i == 0 || specs[i-1] != base+",strict") {
					t.Errorf("%s: comparison %s does not follow its Strict one (%v)", tc.manifest, s, specs)
				}
			}
			strict := 0
			for _, p := range doc.Pairs {
				if p.Column == "strict" && p.Predeclared {
					strict++
				}
			}
			if want := map[bool]int{true: strict, false: 0}[tc.wide]; twins != want || strict == 0 {
				t.Errorf("%s: %d pairs on proven, want %d (%d on strict)", tc.manifest, twins, want, strict)
			}
		})
	}
}
