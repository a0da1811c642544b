package coding_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/coding"
	"github.com/mcpstress/stress/study"
)

func load(t *testing.T, path string) *coding.Side {
	t.Helper()
	s, err := coding.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCompareSelf checks a coding against itself: perfect agreement,
// kappa undefined exactly where one category holds every record, with a
// typed warning, and AC1 defined everywhere.
func TestCompareSelf(t *testing.T) {
	a := load(t, "../manifests/corpus/paper")
	r, err := coding.Compare(a, a, coding.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Records != 21 || len(r.Fields) != len(coding.Fields()) || len(r.Disagreements) != 0 || len(r.NotCompared) != 0 {
		t.Fatalf("records %d, fields %d, disagreements %d, not compared %v", r.Records, len(r.Fields), len(r.Disagreements), r.NotCompared)
	}
	undefined := map[string]bool{}
	for _, f := range r.Fields {
		if f.Observed != 1 || f.AC1 != 1 || f.PABAK != 1 {
			t.Errorf("%s: po %v AC1 %v PABAK %v, want 1", f.Field, f.Observed, f.AC1, f.PABAK)
		}
		for _, w := range f.Warnings {
			if w.Kind == stats.Undefined {
				undefined[f.Field] = true
			}
		}
	}
	want := "content.D content.E content.R control.C control.E control.R control.T non_harm.retry_later non_harm.retry_now non_harm.stop_or_escalate"
	var got []string
	for _, f := range coding.Fields() {
		if undefined[f] {
			got = append(got, f)
		}
	}
	if g := strings.Join(sortStrings(got), " "); g != want {
		t.Errorf("kappa undefined for %s, want %s", g, want)
	}
	for _, f := range r.Fields {
		if f.Field == "cause" && (len(f.Categories) != 5 || f.Table[0][0] != 10) {
			t.Errorf("cause: categories %v table %v", f.Categories, f.Table)
		}
		if f.Field == "target" && len(f.Categories) != 11 {
			t.Errorf("target: %d categories, want the 11 distinct targets", len(f.Categories))
		}
	}
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// TestLoadMismatchedVocabulary checks that a coding outside the
// vocabulary is an error naming file, record and field.
func TestLoadMismatchedVocabulary(t *testing.T) {
	c, err := study.LoadCorpus(os.DirFS("../manifests"), "corpus/paper")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "b.json")
	data, _ := study.EncodeScenarios(c.Scenarios)
	data = []byte(strings.Replace(string(data), `"cause": "invalid_value"`, `"cause": "bad_value"`, 1))
	data = []byte(strings.Replace(string(data), `"T": {`, `"X": {`, 1))
	os.WriteFile(file, data, 0o644)
	_, err = coding.Load(file)
	for _, want := range []string{file + `: record 11 (S11): field cause: unknown cause "bad_value"`, file + `: record 1 (S01): field profile.control: unknown coordinate "X"`} {
		t.Run(fmt.Sprint(want), func(t *testing.T) {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Load: %v, want %q", err, want)
			}
		})
	}
}

func TestTargets(t *testing.T) {
	for _, tg := range []study.Target{{Kind: "tool", Name: "t"}, {Kind: "parameter", Pointer: "/a/b"}, {Kind: "credential", Name: "api_key"}} {
		t.Run(tg.Kind, func(t *testing.T) {
			back, err := coding.ParseTarget(coding.TargetString(tg))
			if err != nil || back != tg {
				t.Errorf("%+v: %+v %v", tg, back, err)
			}
		})
	}
	for _, s := range []string{"tool", "tool:", "parameter:x", "file:/x"} {
		t.Run(s, func(t *testing.T) {
			if _, err := coding.ParseTarget(s); err == nil {
				t.Errorf("ParseTarget(%q) accepted", s)
			}
		})
	}
}

// TestLedgerCellsInert: cells a spreadsheet would take for a formula
// (starting with =, +, -, @, a tab or a carriage return) are written with
// an apostrophe in front, as is a cell starting with an apostrophe, and
// read back unchanged; decided_by and note filled in by hand the same
// way read as their values.
func TestLedgerCellsInert(t *testing.T) {
	ds := []coding.Disagreement{
		{Record: "=cmd|' /C calc'!A0", Field: "content.P", A: "0", AEvidence: "-1+1", B: "1", BEvidence: "@SUM(A1)"},
		{Record: "'S02", Field: "cause", A: "+x", AEvidence: "\tfield", B: "\rb", BEvidence: "/ok"},
	}
	var b strings.Builder
	if err := coding.WriteLedger(&b, &coding.Result{Disagreements: ds}); err != nil {
		t.Fatal(err)
	}
	want := "record,field,a,a_evidence,b,b_evidence,decision,decided_by,note\n" +
		"'=cmd|' /C calc'!A0,content.P,0,'-1+1,1,'@SUM(A1),,,\n" +
		"''S02,cause,'+x,'\tfield,\"'\rb\",/ok,,,\n"
	if b.String() != want {
		t.Errorf("ledger:\n%q\nwant\n%q", b.String(), want)
	}
	filled := strings.Replace(b.String(), ",,,\n", ",1,'=Ada,'+1: the text says so\n", 1)
	filled = strings.Replace(filled, ",,,\n", ",b,-Bob,''quoted\n", 1)
	l, err := coding.ReadLedger("ledger.csv", []byte(filled))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range l.Rows {
		if r.Disagreement != ds[i] {
			t.Errorf("row %d read back as %+v, want %+v", i+2, r.Disagreement, ds[i])
		}
	}
	if r := l.Rows[0]; r.By != "=Ada" || r.Note != "+1: the text says so" {
		t.Errorf("row 2: decided_by %q, note %q", r.By, r.Note)
	}
	if r := l.Rows[1]; r.By != "-Bob" || r.Note != "'quoted" {
		t.Errorf("row 3: decided_by %q, note %q", r.By, r.Note)
	}
}
