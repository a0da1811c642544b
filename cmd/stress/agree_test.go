package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpstress/stress/study"
)

const (
	paperCorpus  = "../../manifests/corpus/paper"
	coder2Corpus = "../../manifests/corpus/paper-coder2"
	rulesCorpus  = "../../manifests/corpus/paper-rules"
)

// TestAgreeShipped pins the agreement of the shipped second coding and of
// the rules coding with the paper's hand coding (text and -json).
func TestAgreeShipped(t *testing.T) {
	out, _, err := runCmd(t, "agree", paperCorpus, coder2Corpus)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "agree-coder2.golden", out)
	js, _, err := runCmd(t, "agree", "-json", paperCorpus, coder2Corpus)
	if err != nil {
		t.Fatal(err)
	}
	goldenJSON(t, "agree-coder2-json.golden", js)
	var r struct {
		Records int `json:"records"`
		Fields  []struct {
			Field string   `json:"field"`
			Kappa *float64 `json:"kappa"`
			AC1   *float64 `json:"ac1"`
		} `json:"fields"`
		Disagreements []struct{ Record, Field string } `json:"disagreements"`
	}
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	// The paper's E and R columns are all 0 in both codings: kappa is
	// undefined (null), AC1 defined (1).
	for _, f := range r.Fields {
		if strings.HasSuffix(f.Field, ".E") || strings.HasSuffix(f.Field, ".R") {
			if f.Kappa != nil || f.AC1 == nil || *f.AC1 != 1 {
				t.Errorf("%s: kappa %v, AC1 %v; want null and 1", f.Field, f.Kappa, f.AC1)
			}
		}
	}
	if r.Records != 21 || len(r.Disagreements) != 2 {
		t.Errorf("records %d, disagreements %v", r.Records, r.Disagreements)
	}
	out, _, err = runCmd(t, "agree", paperCorpus, rulesCorpus)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "agree-rules.golden", out)
}

// TestREADMEAgreement checks that docs/coding.md's agreement table is what
// stress agree prints for the shipped codings; -update rewrites it.
func TestREADMEAgreement(t *testing.T) {
	const file = "../../docs/coding.md"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, "agree", paperCorpus, coder2Corpus)
	if err != nil {
		t.Fatal(err)
	}
	out = strings.ReplaceAll(out, "../../", "")
	block := regexp.MustCompile("(?s)(<!-- agree: stress agree manifests/corpus/paper manifests/corpus/paper-coder2 -->\n```text\n)(.*?)(```\n)")
	m := block.FindSubmatchIndex(b)
	if m == nil {
		t.Fatalf("%s has no agreement block", file)
	}
	if got := string(b[m[4]:m[5]]); got != out {
		if !*update {
			t.Fatalf("%s: the agreement table differs from what stress agree prints (go test ./cmd/stress -run TestREADMEAgreement -update rewrites it):\n%s", file, out)
		}
		nb := append(append(append([]byte{}, b[:m[4]]...), out...), b[m[5]:]...)
		if err := os.WriteFile(file, nb, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestShippedRulesCoding checks that manifests/corpus/paper-rules is what
// stress code writes with the rules coder.
func TestShippedRulesCoding(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cod")
	if _, log, err := runCmd(t, "code", "-quiet", "-out", dir, "../../manifests/coding/rules.yaml"); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	files, _ := filepath.Glob(filepath.Join(rulesCorpus, "*.json"))
	if len(files) != 10 {
		t.Fatalf("%d files in %s", len(files), rulesCorpus)
	}
	for _, f := range files {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(dir, "coded", "rules.coding", filepath.Base(f)))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s differs from what stress code writes (%v)", f, err)
		}
	}
}

func TestAgreeErrors(t *testing.T) {
	tmp := t.TempDir()
	// A corpus with one record less, and one whose observation differs.
	c, err := study.LoadCorpus(os.DirFS("../../manifests"), "corpus/paper")
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(tmp, "short.json")
	if err := study.WriteCorpus(short, c.Scenarios[1:]); err != nil {
		t.Fatal(err)
	}
	other := append([]study.Scenario(nil), c.Scenarios...)
	other[4].Observation = json.RawMessage(`{"exception":{"type":"McpError","error":{"code":-32602,"message":"something else"}}}`)
	otherFile := filepath.Join(tmp, "other.json")
	if err := study.WriteCorpus(otherFile, other); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"one corpus is a usage error", []string{"agree", paperCorpus}, "usage: agree takes two corpora"},
		{"a record only in one corpus needs -common", []string{"agree", paperCorpus, short}, "only in " + paperCorpus + ": S01; only in " + short + ": none; pass -common"},
		{"different observations of one record", []string{"agree", paperCorpus, otherFile}, "record S05: " + paperCorpus + " and " + otherFile + " hold different observations"},
		{"a missing corpus", []string{"agree", paperCorpus, filepath.Join(tmp, "nope")}, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCmd(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
			}
		})
	}
	out, _, err := runCmd(t, "agree", "-common", paperCorpus, short)
	if err != nil || !strings.Contains(out, "Agreement of two codings of 20 records") || !strings.Contains(out, "only in A: S01; only in B: none") {
		t.Errorf("-common: %v\n%s", err, out)
	}
}

// TestAgreeNoCommonRecord: two corpora that share no record are a
// failure (exit status 1, not usage), with or without -common: there is
// nothing to compare. agree -common printed a table of n = 0 and exited 0;
// without -common the refusal suggested -common. adjudicate refuses too.
func TestAgreeNoCommonRecord(t *testing.T) {
	c, err := study.LoadCorpus(os.DirFS("../../manifests"), "corpus/paper")
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Scenarios {
		c.Scenarios[i].ID = "Z" + c.Scenarios[i].ID
	}
	other := filepath.Join(t.TempDir(), "other.json")
	if err := study.WriteCorpus(other, c.Scenarios); err != nil {
		t.Fatal(err)
	}
	want := paperCorpus + " (21 records) and " + other + " (21 records) share no record: nothing to compare"
	for _, args := range [][]string{
		{"agree", "-common", paperCorpus, other},
		{"agree", "-common", "-json", paperCorpus, other},
		{"agree", paperCorpus, other},
		{"adjudicate", "-out", filepath.Join(t.TempDir(), "ledger.csv"), paperCorpus, other},
	} {
		t.Run(argsName(args), func(t *testing.T) {
			out, _, err := runCmd(t, args...)
			if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pass -common") {
				t.Errorf("%v: error %v, want a failure with %q", args, err, want)
			}
			if out != "" {
				t.Errorf("%v printed:\n%s", args, out)
			}
		})
	}
}

// TestAdjudicate walks the ledger through writing, refusals and applying.
func TestAdjudicate(t *testing.T) {
	tmp := t.TempDir()
	ledger := filepath.Join(tmp, "ledger.csv")
	if _, _, err := runCmd(t, "adjudicate", "-out", ledger, paperCorpus, coder2Corpus); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(ledger)
	want := "record,field,a,a_evidence,b,b_evidence,decision,decided_by,note\n" +
		"S18,content.P,0,/result/content/0/text,1,/result/content/0/text,,,\n" +
		"S21,content.C,1,/result/content/0/text,0,/result/content/0/text,,,\n"
	if string(data) != want {
		t.Fatalf("ledger:\n%s\nwant\n%s", data, want)
	}
	out := filepath.Join(tmp, "adj")
	write := func(name, body string) string {
		f := filepath.Join(tmp, name)
		os.WriteFile(f, []byte(body), 0o644)
		return f
	}
	head := "record,field,a,a_evidence,b,b_evidence,decision,decided_by,note\n"
	s18 := "S18,content.P,0,/result/content/0/text,1,/result/content/0/text,"
	s21 := "S21,content.C,1,/result/content/0/text,0,/result/content/0/text,"
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"undecided", string(data), []string{"row 2: column decision: undecided (record S18 field content.P: A 0, B 1)", "row 3: column decision: undecided"}},
		{"vocabulary", head + s18 + "yes,Ada,\n" + s21 + "a,Ada,\n", []string{"row 2: column decision: want 0 or 1 (or a, b for a coder's value), got \"yes\""}},
		{"no name", head + s18 + "b,,\n" + s21 + "a,Ada,\n", []string{"row 2: column decided_by: a decision needs the adjudicator's name"}},
		{"columns", "record,field,value\nS18,content.P,1\n", []string{"row 1: wrong columns \"record,field,value\""}},
		{"duplicate", head + s18 + "b,Ada,\n" + s18 + "b,Ada,\n" + s21 + "a,Ada,\n", []string{"row 3: duplicate row for record \"S18\" field \"content.P\" (first at row 2)"}},
		{"unknown record", head + s18 + "b,Ada,\n" + s21 + "a,Ada,\nS99,content.P,0,,1,,1,Ada,\n", []string{"row 4: column record: unknown record \"S99\""}},
		{"unknown field", head + "S18,content.Q,0,,1,,1,Ada,\n", []string{"row 2: column field: unknown field \"content.Q\""}},
		{"stale value", head + "S18,content.P,1,/result/content/0/text,1,/result/content/0/text,b,Ada,\n" + s21 + "a,Ada,\n", []string{"row 2: column a: \"1\", but the input now has \"0\""}},
		{"agree now", head + s18 + "b,Ada,\n" + s21 + "a,Ada,\nS01,control.D,1,,1,,1,Ada,\n", []string{"row 4: record S01 field control.D: the coders agree now"}},
		{"missing row", head + s18 + "b,Ada,\n", []string{"no row for the disagreement on record S21 field content.C (A 1, B 0)"}},
		{"ragged", head + s18 + "b,Ada\n", []string{"row 2: 8 cells, want 9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCmd(t, "adjudicate", "-apply", write(tc.name+".csv", tc.body), "-out", out, paperCorpus, coder2Corpus)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %v, want %q", tc.name, err, w)
				}
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Fatalf("%s: a refused ledger wrote %s", tc.name, out)
			}
		})
	}
	decided := write("decided.csv", head+s18+"b,Ada,No results: change the value\n"+s21+"A,,the text says invalid\n")
	msg, _, err := runCmd(t, "adjudicate", "-apply", decided, "-by", "Bob", "-out", out, paperCorpus, coder2Corpus)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "21 records, 2 decisions") {
		t.Errorf("apply says %q", msg)
	}
	side, err := study.LoadCorpus(os.DirFS(tmp), "adj")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range side.Scenarios {
		switch s.ID {
		case "S18":
			d := s.Coding.Decisions
			if s.Profile.Content["P"].Bit != 1 || len(d) != 1 || d[0].By != "Ada" || d[0].Row != 2 || d[0].Ledger != "decided.csv" || len(d[0].LedgerSHA256) != 64 {
				t.Errorf("S18: %+v %+v", s.Profile.Content["P"], s.Coding)
			}
		case "S21":
			if s.Profile.Content["C"].Bit != 1 || s.Coding.Decisions[0].By != "Bob" || s.Coding.Decisions[0].Value != "1" {
				t.Errorf("S21: %+v %+v", s.Profile.Content["C"], s.Coding)
			}
		}
	}
	// Nominal decisions: a target (applied, with the control envelope
	// following it) and a cause the record's probe cannot yield (refused,
	// nothing written).
	file := filepath.Join(tmp, "base.json")
	c2 := append([]study.Scenario(nil), side.Scenarios...)
	for i := range c2 {
		c2[i].Coding = nil
	}
	if err := study.WriteCorpus(file, c2); err != nil {
		t.Fatal(err)
	}
	moved := append([]study.Scenario(nil), c2...)
	moved[20].Target.Pointer = "/identifier"
	moved[20].ControlEnvelope = json.RawMessage(strings.Replace(string(moved[20].ControlEnvelope), "/lookup_key", "/identifier", 1))
	moved[19].Cause, moved[19].Code = "invalid_value", "example.mcp.arguments.invalid_value"
	moved[19].Probe = "out_of_domain_sentinel"
	moved[19].ControlEnvelope = json.RawMessage(strings.Replace(string(moved[19].ControlEnvelope), "invalid_type", "invalid_value", 1))
	movedFile := filepath.Join(tmp, "moved.json")
	if err := study.WriteCorpus(movedFile, moved); err != nil {
		t.Fatal(err)
	}
	cl := filepath.Join(tmp, "nominal.csv")
	if _, _, err := runCmd(t, "adjudicate", "-out", cl, file, movedFile); err != nil {
		t.Fatal(err)
	}
	body, _ := os.ReadFile(cl)
	if !strings.Contains(string(body), "S20,cause,invalid_type,,invalid_value,,,,") || !strings.Contains(string(body), "S21,target,parameter:/lookup_key,,parameter:/identifier,,,,") {
		t.Fatalf("nominal ledger:\n%s", body)
	}
	decide := func(cause, target string) string {
		x := strings.Replace(string(body), "invalid_value,,,,", "invalid_value,,"+cause+",Ada,", 1)
		return strings.Replace(x, "/identifier,,,,", "/identifier,,"+target+",Ada,", 1)
	}
	os.WriteFile(cl, []byte(decide("a", "b")), 0o644)
	if _, _, err := runCmd(t, "adjudicate", "-apply", cl, "-out", filepath.Join(tmp, "c.json"), file, movedFile); err != nil {
		t.Fatal(err)
	}
	nc, err := study.LoadCorpus(os.DirFS(tmp), "c.json")
	if err != nil || nc.Scenarios[20].Target.Pointer != "/identifier" || !strings.Contains(string(nc.Scenarios[20].ControlEnvelope), "/identifier") {
		t.Errorf("target decision: %v %+v", err, nc.Scenarios[20].Target)
	}
	os.WriteFile(cl, []byte(decide("b", "parameter:/x")), 0o644)
	if _, _, err := runCmd(t, "adjudicate", "-apply", cl, "-out", filepath.Join(tmp, "d.json"), file, movedFile); err == nil || !strings.Contains(err.Error(), "make records that do not load") || !strings.Contains(err.Error(), "probe wrong_type cannot yield cause invalid_value") {
		t.Errorf("impossible cause: %v", err)
	}
	os.WriteFile(cl, []byte(decide("flaky", "b")), 0o644)
	if _, _, err := runCmd(t, "adjudicate", "-apply", cl, "-out", filepath.Join(tmp, "d.json"), file, movedFile); err == nil || !strings.Contains(err.Error(), `column decision: unknown cause "flaky"`) {
		t.Errorf("unknown cause: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "d.json")); err == nil {
		t.Error("a refused ledger wrote d.json")
	}
}

// TestProposedRefused checks that stress run refuses a corpus with a
// proposed bit, that -allow-proposed is recorded, and that the counts
// table and analyze say so first; stress confirm clears it.
func TestProposedRefused(t *testing.T) {
	tmp := t.TempDir()
	c, err := study.LoadCorpus(os.DirFS("../../manifests"), "corpus/paper")
	if err != nil {
		t.Fatal(err)
	}
	b := c.Scenarios[6].Profile.Content["T"]
	b.Proposed = true
	c.Scenarios[6].Profile.Content["T"] = b
	if err := study.WriteCorpus(filepath.Join(tmp, "corpus"), c.Scenarios); err != nil {
		t.Fatal(err)
	}
	prompt, _ := os.ReadFile("../../manifests/prompts/default.tmpl")
	os.WriteFile(filepath.Join(tmp, "default.tmpl"), prompt, 0o644)
	manifest := filepath.Join(tmp, "m.yaml")
	os.WriteFile(manifest, []byte("name: t\ncorpus: corpus\nprompts:\n  - name: default\n    path: default.tmpl\nconditions: [normalized]\nreplicates: 1\nseed: 1\ntemperature: 0\nmodels:\n  - name: always_stop\n    backend: baseline\n    model: always_stop\n"), 0o644)
	_, _, err = runCmd(t, "run", "-quiet", "-out", filepath.Join(tmp, "b0"), manifest)
	if err == nil || !strings.Contains(err.Error(), "field corpus: 1 records have proposed (unconfirmed) coding: S07; confirm them (stress confirm, stress adjudicate) or pass -allow-proposed") {
		t.Fatalf("run: %v", err)
	}
	bundle := filepath.Join(tmp, "b1")
	out, _, err := runCmd(t, "run", "-quiet", "-allow-proposed", "-out", bundle, manifest)
	const warn = "warning: run with -allow-proposed: 1 records of its corpus had proposed (unconfirmed) coding (S07)"
	if err != nil || !strings.HasPrefix(out, warn) {
		t.Fatalf("run -allow-proposed: %v\n%s", err, out)
	}
	rec, _ := os.ReadFile(filepath.Join(bundle, "manifest.json"))
	if !strings.Contains(string(rec), `"allow_proposed": true`) || !strings.Contains(string(rec), `"unconfirmed_records": [`) {
		t.Errorf("manifest.json does not record -allow-proposed:\n%.600s", rec)
	}
	for _, args := range [][]string{{"analyze", "-b", "50", bundle}, {"compare", "-b", "50", bundle, bundle}} {
		t.Run(argsName(args), func(t *testing.T) {
			out, _, err := runCmd(t, args...)
			if err != nil || !strings.Contains(out, "run with -allow-proposed") {
				t.Errorf("%v: %v\n%s", args, err, out)
			}
		})
	}
	js, _, _ := runCmd(t, "analyze", "-json", "-b", "50", bundle)
	if !strings.Contains(js, `"warnings": [`) || !strings.Contains(js, "run with -allow-proposed") {
		t.Errorf("analyze -json has no warning:\n%.300s", js)
	}
	rep := filepath.Join(tmp, "report")
	if _, _, err := runCmd(t, "report", "-b", "50", "-out", rep, bundle); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(rep, "report.md"))
	if !strings.Contains(string(md), "run with -allow-proposed") {
		t.Errorf("report.md does not say it")
	}
	// stress confirm clears the proposed mark and records who.
	confirmed := filepath.Join(tmp, "confirmed")
	if _, _, err := runCmd(t, "confirm", "-by", "Ada", "-record", "S07", "-out", confirmed, filepath.Join(tmp, "corpus")); err != nil {
		t.Fatal(err)
	}
	cc, err := study.LoadCorpus(os.DirFS(tmp), "confirmed")
	if err != nil {
		t.Fatal(err)
	}
	if un := cc.Unconfirmed(); len(un) != 0 || cc.Scenarios[6].Coding.Confirmed.By != "Ada" {
		t.Errorf("after confirm: %v, %+v", un, cc.Scenarios[6].Coding)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"confirm needs -by", []string{"confirm", "-record", "S07", "-out", filepath.Join(tmp, "x"), confirmed}, "flag -by is required"},
		{"confirm needs -all or a -record", []string{"confirm", "-by", "Ada", "-out", filepath.Join(tmp, "x"), confirmed}, "give -all or at least one -record ID"},
		{"confirm refuses an unknown record", []string{"confirm", "-by", "Ada", "-record", "S99", "-out", filepath.Join(tmp, "x"), confirmed}, "flag -record: no record S99"},
		{"confirm refuses a non-empty -out", []string{"confirm", "-by", "Ada", "-all", "-out", confirmed, confirmed}, "not empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := runCmd(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestAdjudicateCellsInert: a decided_by and a note written into the
// ledger with the apostrophe that keeps a spreadsheet from reading them
// as formulas are applied as their values; one starting with an
// apostrophe keeps it when escaped (two apostrophes).
func TestAdjudicateCellsInert(t *testing.T) {
	tmp := t.TempDir()
	ledger := filepath.Join(tmp, "ledger.csv")
	os.WriteFile(ledger, []byte("record,field,a,a_evidence,b,b_evidence,decision,decided_by,note\n"+
		"S18,content.P,0,/result/content/0/text,1,/result/content/0/text,b,'=Ada,'+1: no results\n"+
		"S21,content.C,1,/result/content/0/text,0,/result/content/0/text,a,'@Bob,''quoted\n"), 0o644)
	out := filepath.Join(tmp, "adj")
	if _, _, err := runCmd(t, "adjudicate", "-apply", ledger, "-out", out, paperCorpus, coder2Corpus); err != nil {
		t.Fatal(err)
	}
	side, err := study.LoadCorpus(os.DirFS(tmp), "adj")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]study.Decision{}
	for _, s := range side.Scenarios {
		if s.Coding != nil && len(s.Coding.Decisions) == 1 {
			got[s.ID] = s.Coding.Decisions[0]
		}
	}
	if d := got["S18"]; d.By != "=Ada" || d.Note != "+1: no results" {
		t.Errorf("S18: by %q, note %q", d.By, d.Note)
	}
	if d := got["S21"]; d.By != "@Bob" || d.Note != "'quoted" {
		t.Errorf("S21: by %q, note %q", d.By, d.Note)
	}
}

// TestAgreeOneCoderOneCategory: where one coder puts every record in one
// category and the other does not (here control.C, all 0 in the hand
// coding, set to 1 on one record of the second), kappa is 0 with an
// interval of no width, tagged d, its SE exactly 0 in -json with the
// degenerate warning naming the coder; it was round-off (about 1e-7) and
// no warning.
func TestAgreeOneCoderOneCategory(t *testing.T) {
	c, err := study.LoadCorpus(os.DirFS("../../manifests"), "corpus/paper-coder2")
	if err != nil {
		t.Fatal(err)
	}
	s := &c.Scenarios[0]
	s.Profile.Control["C"] = study.Bit{Bit: 1, Evidence: "/exception/error/code", Rationale: "a second coder reads the code as typed"}
	file := filepath.Join(t.TempDir(), "b.json")
	if err := study.WriteCorpus(file, c.Scenarios); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, "agree", paperCorpus, file)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^control\.C +21 +0 +0 +1 +20 +95\.2% +0\.000 \[0\.000, 0\.000\] d `).MatchString(out) ||
		!strings.Contains(out, "one coder put every record in one category") {
		t.Errorf("control.C is not kappa 0 with a degenerate interval:\n%s", out)
	}
	js, _, err := runCmd(t, "agree", "-json", paperCorpus, file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Fields []struct {
			Field    string
			Kappa    *float64
			KappaSE  *float64 `json:"kappa_se"`
			Warnings []string
		}
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	for _, f := range doc.Fields {
		if f.Field != "control.C" {
			continue
		}
		if f.Kappa == nil || *f.Kappa != 0 || f.KappaSE == nil || *f.KappaSE != 0 ||
			!slices.Contains(f.Warnings, "kappa is 0 with asymptotic variance 0: coder A put all 21 items in one category, so its interval has no width") {
			t.Errorf("control.C: kappa %v SE %v, warnings %q", f.Kappa, f.KappaSE, f.Warnings)
		}
		return
	}
	t.Error("no control.C field in -json")
}

// TestCodeRulesWithModel: stress code refuses a rules coder (backend:
// rules) that names a model (a model id other than capture-rules, or a
// field that addresses one): the rules call no model, and the coding
// would pass for the model's. It ran the rules and ignored them.
func TestCodeRulesWithModel(t *testing.T) {
	src, _ := filepath.Abs("../../manifests")
	tmp := t.TempDir()
	for _, c := range []struct {
		name  string
		model string
		want  string
	}{
		{"refuses a model other than capture-rules", "model: llama3.2:3b-instruct-q4_K_M", `field models[0].model: backend rules is the capture rules (coding/rules), which call no model: want capture-rules, got "llama3.2:3b-instruct-q4_K_M"`},
		{"refuses a host, digest and format", "model: capture-rules\n    host: http://127.0.0.1:11434\n    digest: " + strings.Repeat("a", 64) + "\n    format: schema",
			"field models[0]: backend rules calls no model, so it takes no digest, host, format"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(tmp, "m.yaml")
			yaml := "name: t\ncorpus: " + src + "/corpus/paper\nprompts:\n  - name: coding\n    path: " + src + "/prompts/coding.tmpl\n" +
				"conditions: [normalized]\nreplicates: 1\nseed: 7\ntemperature: 0\nmodels:\n  - name: rules\n    backend: rules\n    " + c.model + "\n"
			if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(tmp, "cod")
			_, _, err := runCmd(t, "code", "-quiet", "-out", out, file)
			if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "manifest "+file+": "+c.want) {
				t.Errorf("%s: error %v, want a failure with %q", c.model, err, c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s: the refused coding wrote %s", c.model, out)
			}
		})
	}
}
