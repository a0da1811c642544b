package dbenv

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
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
	set, f := factory(t, SQLite, true)
	var recs []study.Scenario
	for _, sc := range set.Scenarios {
		e, err := f.Actor(sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		obs, err := e.Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Record(obs)
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if *update {
		os.RemoveAll(corpusDir)
		if err := study.WriteCorpus(corpusDir, recs); err != nil {
			t.Fatal(err)
		}
	}
	c, err := study.LoadCorpus(os.DirFS(filepath.Dir(corpusDir)), filepath.Base(corpusDir))
	if err != nil {
		t.Fatalf("%v (go test ./env/dbenv -run TestCorpus -update writes it)", err)
	}
	if len(c.Scenarios) != len(set.Scenarios) {
		t.Fatalf("the corpus has %d records, the set %d scenarios", len(c.Scenarios), len(set.Scenarios))
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
		shipped.Coding = nil
		for _, v := range []study.View{shipped.Profile.Control, shipped.Profile.Content} {
			for c, b := range v {
				b.Proposed = true
				v[c] = b
			}
		}
		got, _ := json.Marshal(shipped)
		want, _ := json.Marshal(r)
		if string(got) != string(want) {
			t.Errorf("%s: the shipped record differs from the environment's today (go test ./env/dbenv -run TestCorpus -update):\n%s\nwant\n%s", r.ID, got, want)
		}
	}
}
