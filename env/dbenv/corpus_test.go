package dbenv

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mcpstress/stress/study"
)

var update = flag.Bool("update", false, "rewrite manifests/corpus/act-database from the database environment")

// corpusDir is the corpus of the shop set, shipped with act-database.yaml
// and database.yaml.
const corpusDir = "../../manifests/corpus/act-database"

// TestCorpus: the shipped corpus of the shop set is exactly the records
// the environment gives today (each first observation from DBHub through
// the proxy, on SQLite; the rules' profile), every one valid and
// confirmed by a person; -update rewrites it (then check each record and
// stress confirm it again).
func TestCorpus(t *testing.T) {
	_, f := factory(t, SQLite, true)
	checkCorpus(t, f, corpusDir, "go test ./env/dbenv -run TestCorpus -update")
}

// TestExampleCorpus: the worked example of docs/bring-your-own-server.md
// (a ticket desk of its own, server.mjs, run by Node.js) ships the corpus
// stress db record gives of it today, confirmed by a person.
func TestExampleCorpus(t *testing.T) {
	node, _ := dbhub(t)
	set, err := ParseFile("../../docs/examples/tickets/tickets.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFactory(context.Background(), set, Options{Node: node, Reuse: true, CallTimeout: loadedTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checkCorpus(t, f, "../../docs/examples/tickets/corpus", "stress db record -set docs/examples/tickets/tickets.json -out …, then stress confirm")
}

// checkCorpus compares the corpus at dir with the records f gives today
// (as proposed, before a person confirmed them); -update rewrites it.
func checkCorpus(t *testing.T, f *Factory, dir, how string) {
	t.Helper()
	recs, err := Records(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		os.RemoveAll(dir)
		if err := study.WriteCorpus(dir, recs); err != nil {
			t.Fatal(err)
		}
	}
	c, err := study.LoadCorpus(os.DirFS(filepath.Dir(dir)), filepath.Base(dir))
	if err != nil {
		t.Fatalf("%v (%s writes it)", err, how)
	}
	if len(c.Scenarios) != len(recs) {
		t.Fatalf("the corpus has %d records, the set %d scenarios", len(c.Scenarios), len(recs))
	}
	byID := map[string]study.Scenario{}
	for _, s := range c.Scenarios {
		byID[s.ID] = s
	}
	for _, r := range recs {
		shipped := byID[r.ID]
		if shipped.Coding == nil || shipped.Coding.Confirmed == nil {
			t.Errorf("%s: the shipped record is not confirmed", r.ID)
		}
		got, _ := json.Marshal(shipped.Unconfirmed())
		want, _ := json.Marshal(r)
		if string(got) != string(want) {
			t.Errorf("%s: the shipped record differs from the environment's today (%s):\n%s\nwant\n%s", r.ID, how, got, want)
		}
	}
}

// TestCorpusCounts pins the counts docs/specification.md (section 7.5)
// gives of the database corpus.
func TestCorpusCounts(t *testing.T) {
	c, err := study.LoadCorpus(os.DirFS(filepath.Dir(corpusDir)), filepath.Base(corpusDir))
	if err != nil {
		t.Fatal(err)
	}
	surfaces, causes := map[study.Surface]int{}, map[study.Cause]int{}
	for _, s := range c.Scenarios {
		if s.Probe != study.ProxyCall || s.Server != Pseudonym {
			t.Errorf("%s: probe %s, server %s", s.ID, s.Probe, s.Server)
		}
		surfaces[s.Surface]++
		causes[s.Cause]++
	}
	want := map[study.Surface]int{study.ProtocolError: 12, study.ToolError: 3, study.SuccessShaped: 1}
	if !reflect.DeepEqual(surfaces, want) {
		t.Errorf("surfaces %v, want %v", surfaces, want)
	}
	wantCauses := map[study.Cause]int{study.TimeoutCommitted: 3, study.Transient: 2, study.UnknownTool: 2, study.InvalidType: 2, study.InvalidValue: 2,
		study.RateLimit: 1, study.AuthRequired: 1, study.PartialCommit: 1, study.SilentNoop: 1, study.UpstreamOutage: 1}
	if !reflect.DeepEqual(causes, wantCauses) {
		t.Errorf("causes %v, want %v", causes, wantCauses)
	}
}
