package synth

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/manifests"
)

// TestWrite generates a study and loads it through the manifest and corpus
// loaders, which validate every record; the same seed gives the same bytes.
func TestWrite(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	opt := Options{Scenarios: 250, Servers: 7, Replicates: 2, Seed: 9}
	for _, d := range []string{a, b} {
		if err := Write(context.Background(), d, opt); err != nil {
			t.Fatal(err)
		}
	}
	m, err := manifests.Load(filepath.Join(a, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]int{}
	causes := map[string]bool{}
	for _, s := range m.Corpus.Scenarios {
		servers[s.Server]++
		causes[string(s.Cause)] = true
	}
	if len(m.Corpus.Scenarios) != 250 || len(servers) != 7 || servers["Q00001"] != 36 || len(causes) < 3 || m.Replicates != 2 || m.Seed != 9 || len(m.Models) != 3 {
		t.Errorf("%d scenarios, servers %v, causes %v, %d replicates, seed %d", len(m.Corpus.Scenarios), servers, causes, m.Replicates, m.Seed)
	}
	if m.Corpus.Scenarios[0].ID != "X0000001" {
		t.Errorf("first id %s", m.Corpus.Scenarios[0].ID)
	}
	for _, f := range []string{"corpus/Q00003.json", ManifestFile} {
		t.Run(f, func(t *testing.T) {
			x, _ := os.ReadFile(filepath.Join(a, f))
			y, _ := os.ReadFile(filepath.Join(b, f))
			if len(x) == 0 || !bytes.Equal(x, y) {
				t.Errorf("%s differs between two runs with one seed", f)
			}
		})
	}
	if err := Write(context.Background(), a, opt); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("writing into a full directory: %v", err)
	}
	for _, bad := range []Options{{Scenarios: 0, Servers: 1}, {Scenarios: 5, Servers: 6}, {Scenarios: 5, Servers: 0}, {Scenarios: 5, Servers: 1, Replicates: -1}} {
		t.Run(fmt.Sprintf("refuses %+v", bad), func(t *testing.T) {
			if err := bad.Check(); err == nil {
				t.Errorf("%+v accepted", bad)
			}
		})
	}
}
