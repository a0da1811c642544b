package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/audit/scan"
)

// scanTree is the scan package's fixture repository: a file of each
// language and path class, with the traps a lexical scanner falls into.
const scanTree = "../../audit/scan/testdata/tree"

// TestScan pins stress scan's listing and summary of the fixture tree
// (testdata/scan.golden), and with -out its files.
func TestScan(t *testing.T) {
	out, errOut, err := runCmd(t, "scan", "tree="+scanTree)
	if err != nil || errOut != "" {
		t.Fatalf("%v\n%s", err, errOut)
	}
	golden(t, "scan.golden", out)
	dir := filepath.Join(t.TempDir(), "audit")
	out, _, err = runCmd(t, "scan", "-out", dir, "-include-build", "tree="+scanTree)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "scanned 1 repositories: 22 source files") || !strings.HasSuffix(out, "wrote "+dir+": candidates.jsonl, projection.jsonl, ledger.csv (to adjudicate), wrapper_calls.jsonl, scan.json\n") {
		t.Errorf("stdout:\n%s", out)
	}
	for _, f := range []string{scan.CandidatesFile, scan.ProjectionFile, scan.LedgerFile, scan.WrapperCallsFile, scan.ManifestFile} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(data) == 0 {
			t.Errorf("%s: %v, %d bytes", f, err, len(data))
		}
	}
	cands, _ := os.ReadFile(filepath.Join(dir, scan.CandidatesFile))
	if n := strings.Count(string(cands), "\n"); n != 30 || strings.Contains(string(cands), scan.WrapperCall) {
		t.Errorf("candidates.jsonl has %d rows, want 30 (29 and the build match), no wrapper call", n)
	}
	ledger, _ := os.ReadFile(filepath.Join(dir, scan.LedgerFile))
	if n := strings.Count(string(ledger), "\n"); n != 22 || strings.Contains(string(ledger), "pkg/tools") {
		t.Errorf("ledger.csv has %d lines, want a header and 21 production matches, no wrapper call", n)
	}
	wrappers, _ := os.ReadFile(filepath.Join(dir, scan.WrapperCallsFile))
	if n := strings.Count(string(wrappers), `"construct":"wrapper_call"`); n != 5 || strings.Contains(string(wrappers), `"text"`) {
		t.Errorf("wrapper_calls.jsonl: %d wrapper calls, want 5 projections:\n%s", n, wrappers)
	}
	var m scan.Manifest
	if err := json.Unmarshal(must(os.ReadFile(filepath.Join(dir, scan.ManifestFile))), &m); err != nil {
		t.Fatal(err)
	}
	if m.Production != 21 || m.ProductionWrapperCalls != 5 || len(m.WrapperCalls) != 2 || m.Outputs[scan.WrapperCallsFile] == "" {
		t.Errorf("scan.json: production %d, wrapper calls %v (%d in production), outputs %v", m.Production, m.WrapperCalls, m.ProductionWrapperCalls, m.Outputs)
	}
}

// TestScanSummarize prints the paper's funnel from an adjudicated ledger
// (testdata/scan-summarize.golden): 16 production matches, 2 embedded test
// strings, 14 constructions on 12 semantic paths in 10 repositories.
func TestScanSummarize(t *testing.T) {
	out, errOut, err := runCmd(t, "scan", "-summarize", "testdata/ledger-paper.csv")
	if err != nil || errOut != "" {
		t.Fatalf("%v\n%s", err, errOut)
	}
	golden(t, "scan-summarize.golden", out)
	bad := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(bad, []byte("id,repository,decision,semantic_path\nc1,github.com/a/b,construction,\nc2,github.com/a/b,maybe,\n"), 0o644)
	out, errOut, err = runCmd(t, "scan", "-summarize", bad)
	if err == nil || out != "" || !strings.Contains(err.Error(), "2 ledger rows are bad") ||
		errOut != "stress scan: "+bad+`:2: row "c1": a construction needs its semantic_path`+"\n"+
			"stress scan: "+bad+`:3: row "c2": decision "maybe": want construction, test_string, not_an_error_result, or empty for undecided`+"\n" {
		t.Errorf("a bad ledger: %v\nstdout %q\nstderr %q", err, out, errOut)
	}
}

// TestScanBadInput: usage errors name the flag or argument; an unreadable
// file fails the command after the scan, naming it, with the rest
// scanned.
func TestScanBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"scan"}, "scan: give at least one REPO_DIR"},
		{[]string{"scan", filepath.Join(dir, "missing")}, "no such file or directory"},
		{[]string{"scan", scanTree, "tree=" + scanTree}, "are both named tree: name one NAME="},
		{[]string{"scan", "-summarize", "l.csv", scanTree}, "-summarize LEDGER takes no other flag and no REPO_DIR"},
		{[]string{"scan", "-max-file-size", "0", scanTree}, "flag -max-file-size: want at least 1 byte"},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			_, _, err := runCmd(t, tc.args...)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("stress %q: %v, want a usage error containing %q", tc.args, err, tc.want)
			}
		})
	}
	eq := filepath.Join(dir, "a=b")
	os.Mkdir(eq, 0o755)
	if out, _, err := runCmd(t, "scan", eq); err != nil || !strings.HasPrefix(out, "scanned 1 repositories: 0 source files") {
		t.Errorf("a directory named a=b: %v\n%s", err, out)
	}
	os.Remove(eq)
	os.WriteFile(filepath.Join(dir, "ok.py"), []byte("r = {'isError': True}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "big.py"), []byte(strings.Repeat("# padding\n", 100)), 0o644)
	os.Symlink(".", filepath.Join(dir, "loop"))
	out, errOut, err := runCmd(t, "scan", "-max-file-size", "500", "r="+dir)
	if err != nil {
		t.Fatalf("skips alone are not failures: %v", err)
	}
	if errOut != "stress scan: r: big.py: skipped: too large (1000 bytes; the limit is 500)\nstress scan: r: loop: skipped: symbolic link (not followed)\n" {
		t.Errorf("stderr %q", errOut)
	}
	if !strings.HasPrefix(out, "r ok.py:1:6 production property 'isError': True\n") || !strings.Contains(out, "skipped: symbolic link 1, too large 1\n") {
		t.Errorf("stdout:\n%s", out)
	}
	if _, _, err := runCmd(t, "scan", "-out", dir, scanTree); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("a full -out: %v", err)
	}
}

// TestScanLedgerInert: a NAME= value and a file name a spreadsheet would
// take for a formula are written to ledger.csv with an apostrophe in
// front, and -summarize reads them back as the names they are.
func TestScanLedgerInert(t *testing.T) {
	repo := t.TempDir()
	for _, f := range []string{"=HYPERLINK(1).py", "-cmd.py", "'q.py"} {
		os.WriteFile(filepath.Join(repo, f), []byte("r = {'isError': True}\n"), 0o644)
	}
	dir := filepath.Join(t.TempDir(), "audit")
	if _, errOut, err := runCmd(t, "scan", "-out", dir, "@SUM(A1)="+repo); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	data, _ := os.ReadFile(filepath.Join(dir, scan.LedgerFile))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 {
		t.Fatalf("ledger.csv:\n%s", data)
	}
	for i, file := range []string{"''q.py", "'-cmd.py", "'=HYPERLINK(1).py"} {
		cells := strings.Split(lines[i+1], ",")
		if cells[1] != "'@SUM(A1)" || cells[3] != file {
			t.Errorf("ledger row %d: repository %s, file %s; want '@SUM(A1), %s", i+1, cells[1], cells[3], file)
		}
	}
	decided := strings.Replace(string(data), ",,,\n", ",construction,p1,\n", 1)
	decided = strings.Replace(decided, ",,,\n", ",construction,p2,\n", 1)
	led := filepath.Join(t.TempDir(), "ledger.csv")
	os.WriteFile(led, []byte(decided+"c9,@SUM(A1),,x.py,1,1,python,property,isError,construction,p3,\n"), 0o644)
	out, errOut, err := runCmd(t, "scan", "-summarize", led)
	if err != nil || errOut != "" || !strings.Contains(strings.Join(strings.Fields(out), " "), "adjudicated constructions 3 semantic construction paths 3 repositories 1") {
		t.Errorf("-summarize: %v\n%s%s", err, out, errOut)
	}
}
