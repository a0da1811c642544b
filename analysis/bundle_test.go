package analysis_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis"
)

// manifestJSON is a finished bundle's manifest.json with fields that the
// cases below replace.
const manifestJSON = `{"run_id": "R", "manifest": {"name": "s", "seed": 1}, "decisions": 1260, "completed": 1260, "remaining": 0,
 "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:01:00Z", "corpus_files": [{"path": "c/P01.json", "sha256": "aa"}], "format": 3}`

// TestReadBundleInfo: a corrupt manifest.json (invalid JSON, a missing or
// invalid required field) is an error naming the file and the field; a
// bundle of another format than 3 is an error naming the bundle, its
// format and, for an older one, stress upgrade.
func TestReadBundleInfo(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"finished", manifestJSON, ""},
		{"invalid JSON", manifestJSON[:60], "unexpected end of JSON input"},
		{"not an object", `[1, 2]`, "cannot unmarshal array"},
		{"no run_id", strings.Replace(manifestJSON, `"run_id": "R",`, ``, 1), "field run_id is missing"},
		{"no manifest", strings.Replace(manifestJSON, `"manifest": {"name": "s", "seed": 1},`, ``, 1), "field manifest is missing"},
		{"no decisions", strings.Replace(manifestJSON, `"decisions": 1260,`, ``, 1), "field decisions is missing"},
		{"decisions null", strings.Replace(manifestJSON, `"decisions": 1260,`, `"decisions": null,`, 1), "field decisions is missing"},
		{"decisions a string", strings.Replace(manifestJSON, `"decisions": 1260,`, `"decisions": "1260",`, 1), "decisions"},
		{"negative", strings.Replace(manifestJSON, `"remaining": 0,`, `"remaining": -3,`, 1), "negative counts"},
		{"no corpus", strings.Replace(manifestJSON, `[{"path": "c/P01.json", "sha256": "aa"}]`, `[]`, 1), "field corpus_files is empty"},
		{"format 2", strings.Replace(manifestJSON, `"format": 3`, `"format": 2`, 1), "is a bundle of format 2; this version reads format 3: run `stress upgrade "},
		{"no format", strings.Replace(manifestJSON, `, "format": 3`, ``, 1), "is a bundle of format 1; this version reads format 3: run `stress upgrade "},
		{"format 4", strings.Replace(manifestJSON, `"format": 3`, `"format": 4`, 1), "is a bundle of format 4, newer than this version of stress reads (format 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "manifest.json")
			if err := os.WriteFile(file, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			bi, err := analysis.ReadBundleInfo(dir)
			named := file // a format is the bundle's, a field the file's
			if strings.Contains(tc.name, "format") {
				named = dir + " is a bundle"
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s: %v", tc.name, err)
			case tc.want == "":
				if bi.Decisions != 1260 || bi.Completed != 1260 || bi.Finished == nil || bi.Unfinished() || bi.Partial(1260) != "" {
					t.Errorf("%s: read %+v, Partial(1260) %q", tc.name, bi, bi.Partial(1260))
				}
			case err == nil || !strings.Contains(err.Error(), named) || !strings.Contains(err.Error(), tc.want):
				t.Errorf("%s: error %v, want one naming %s and containing %q", tc.name, err, named, tc.want)
			}
		})
	}
	if _, err := analysis.ReadBundleInfo(t.TempDir()); err == nil || !strings.Contains(err.Error(), "manifest.json") {
		t.Errorf("no manifest.json: %v", err)
	}
}

// TestPartial: a bundle is partial when manifest.json records decisions
// remaining or no finish, or when it holds another number of decisions
// than manifest.json records.
func TestPartial(t *testing.T) {
	finished := func(dir string) *analysis.BundleInfo {
		t.Helper()
		os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifestJSON), 0o644)
		bi, err := analysis.ReadBundleInfo(dir)
		if err != nil {
			t.Fatal(err)
		}
		return bi
	}
	dir := t.TempDir()
	bi := finished(dir)
	for _, tc := range []struct {
		name       string
		edit       func(*analysis.BundleInfo)
		read       int
		want       string // "" for complete
		unfinished bool
	}{
		{"complete", nil, 1260, "", false},
		{"complete, not read yet", nil, -1, "", false},
		{"interrupted", func(b *analysis.BundleInfo) { b.Completed, b.Remaining, b.Finished = 942, 318, nil }, 942,
			"partial bundle " + dir + ": manifest.json records 942 of 1260 decisions done, 318 remaining", true},
		{"interrupted, fewer read", func(b *analysis.BundleInfo) { b.Completed, b.Remaining, b.Finished = 942, 318, nil }, 900,
			"partial bundle " + dir + ": manifest.json records 942 of 1260 decisions done, 318 remaining; it holds 900 of its 1260 decisions", true},
		{"killed", func(b *analysis.BundleInfo) { b.Finished = nil }, 1260,
			"partial bundle " + dir + ": manifest.json records no finish time (the run was interrupted or killed)", true},
		{"finished, fewer read", nil, 942, "partial bundle " + dir + ": it holds 942 of its 1260 decisions", false},
		{"finished, more read", nil, 1300, "partial bundle " + dir + ": it holds 1300 decisions, more than the 1260 its manifest.json records", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := *bi.Record
			b := analysis.BundleInfo{Dir: bi.Dir, Record: &rec}
			if tc.edit != nil {
				tc.edit(&b)
			}
			if got := b.Partial(tc.read); got != tc.want {
				t.Errorf("%s: Partial(%d) = %q, want %q", tc.name, tc.read, got, tc.want)
			}
			if b.Unfinished() != tc.unfinished {
				t.Errorf("%s: Unfinished() = %v", tc.name, b.Unfinished())
			}
		})
	}
}
