package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDBTable: stress db table on the shipped set prints the execution
// table pinned beside the set.
func TestDBTable(t *testing.T) {
	out, log, err := runCmd(t, "db", "table")
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	want, err := os.ReadFile("../../env/dbenv/scenarios/shop.execution.txt")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("stress db table printed\n%s\nwant\n%s", out, want)
	}
}

// TestBringYourOwnServer runs the worked example of
// docs/bring-your-own-server.md as written: the set of a server of its
// own (docs/examples/tickets) proven by stress db table, recorded by
// stress db record and confirmed, and its manifest run; every command the
// guide shows is one of these.
func TestBringYourOwnServer(t *testing.T) {
	const set = "../../docs/examples/tickets/tickets.json"
	out, log, err := runCmd(t, "db", "table", "-set", set)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	for _, row := range []string{"T1", "T2", "T3", "T4"} {
		if !strings.Contains(out, "\n"+row+" ") {
			t.Errorf("the table has no row %s:\n%s", row, out)
		}
	}
	if !strings.Contains(out, "T3        timeout_committed  duplicate         recovered    duplicate     duplicate    duplicate  recovered") {
		t.Errorf("T3's retries should duplicate the ticket:\n%s", out)
	}
	dir := t.TempDir()
	if _, log, err := runCmd(t, "db", "record", "-set", set, "-out", filepath.Join(dir, "corpus")); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if _, log, err := runCmd(t, "confirm", "-by", "a reviewer", "-all", "-out", filepath.Join(dir, "TK.json"), filepath.Join(dir, "corpus", "TK.json")); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	var recs []map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "TK.json"))
	if err := json.Unmarshal(b, &recs); err != nil || len(recs) != 4 {
		t.Fatalf("the recorded corpus: %d records, %v", len(recs), err)
	}
	out, log, err = runCmd(t, "run", "-quiet", "-out", filepath.Join(dir, "run"), "../../docs/examples/tickets/manifest.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if !strings.Contains(out, "schema_repair  act     normalized  4  2       2") {
		t.Errorf("the example's run:\n%s", out)
	}
	guide := readDoc(t, "docs/bring-your-own-server.md")
	for _, cmd := range []string{
		"stress db table -set docs/examples/tickets/tickets.json",
		"stress db record -set docs/examples/tickets/tickets.json -out my-corpus",
		"stress run -out tickets-run docs/examples/tickets/manifest.yaml",
	} {
		if !strings.Contains(guide, cmd) {
			t.Errorf("docs/bring-your-own-server.md does not show %q", cmd)
		}
	}
}

// TestDBTableRefuses: a set whose declared preferred policies execution
// does not prove fails, naming the scenario; bad flags are usage errors
// naming the flag.
func TestDBTableRefuses(t *testing.T) {
	b, err := os.ReadFile("../../docs/examples/tickets/tickets.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"server.mjs"} {
		src, _ := os.ReadFile(filepath.Join("../../docs/examples/tickets", name))
		os.WriteFile(filepath.Join(dir, name), src, 0o644)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// T2's server refuses priority 0: only the revised call recovers.
	doc["scenarios"].([]any)[1].(map[string]any)["preferred_policies"] = []string{"select_tool"}
	wrong, _ := json.Marshal(doc)
	set := filepath.Join(dir, "tickets.json")
	os.WriteFile(set, []byte(wrong), 0o644)
	t.Setenv("STRESS_DB_SERVERS", mustAbs(t, "../../scripts/db-servers/node_modules"))
	_, log, err := runCmd(t, "db", "table", "-set", set)
	if err == nil || !strings.Contains(log, "T2 (invalid_value)") {
		t.Errorf("a wrong preferred set: %v\n%s", err, log)
	}
	for _, c := range [][]string{
		{"db", "table", "-database", "mysql"},
		{"db", "record"},
		{"db", "nonsense"},
		{"db", "table", "-set", filepath.Join(dir, "missing.json")},
	} {
		t.Run(argsName(c), func(t *testing.T) {
			if _, _, err := runCmd(t, c...); err == nil {
				t.Errorf("%v: no error", c)
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
