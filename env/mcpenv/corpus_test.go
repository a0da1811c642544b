package mcpenv

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/mcpstress/stress/study"
)

var update = flag.Bool("update", false, "rewrite manifests/corpus/act-reference from the reference servers")

// corpusDir is the corpus of the reference scenarios, shipped with the
// act manifest.
const corpusDir = "../../manifests/corpus/act-reference"

// TestCorpus: the shipped corpus of the reference scenarios is exactly
// the records their servers give today (first observations from real
// servers, the rules' profile), every one valid and confirmed by a person;
// -update rewrites it (then check each record and stress confirm it
// again).
func TestCorpus(t *testing.T) {
	mods := modules(t)
	set, err := BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var recs []study.Scenario
	each(t, set, func(sc *Scenario) error {
		e := New(sc, Options{Modules: mods, CallTimeout: loadedTimeout})
		defer e.Close()
		obs, err := e.Start(context.Background())
		if err != nil {
			return err
		}
		r, err := e.Record(obs)
		if err != nil {
			return err
		}
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
		return nil
	})
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	if *update {
		os.RemoveAll(corpusDir)
		if err := study.WriteCorpus(corpusDir, recs); err != nil {
			t.Fatal(err)
		}
	}
	c, err := study.LoadCorpus(os.DirFS(filepath.Dir(corpusDir)), filepath.Base(corpusDir))
	if err != nil {
		t.Fatalf("%v (go test ./env/mcpenv -run TestCorpus -update writes it)", err)
	}
	if len(c.Scenarios) != len(set.Scenarios) {
		t.Fatalf("the corpus has %d records, the set %d scenarios", len(c.Scenarios), len(set.Scenarios))
	}
	byID := map[string]study.Scenario{}
	for _, s := range c.Scenarios {
		byID[s.ID] = s
	}
	for _, r := range recs {
		// A person confirmed the shipped records (stress confirm): compare
		// them as the servers and rules give them, before the confirmation.
		shipped := byID[r.ID]
		if shipped.Coding == nil || shipped.Coding.Confirmed == nil {
			t.Errorf("%s: the shipped record is not confirmed", r.ID)
		}
		got, _ := json.Marshal(shipped.Unconfirmed())
		want, _ := json.Marshal(r)
		if string(got) != string(want) {
			t.Errorf("%s: the shipped record differs from the server's today (go test ./env/mcpenv -run TestCorpus -update):\n%s\nwant\n%s", r.ID, got, want)
		}
	}
}
