package study_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/study"
)

// TestEncodeRoundTrip checks that the paper corpus' files are written back
// byte for byte, so a rewritten corpus diffs only where it changed.
func TestEncodeRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("../manifests/corpus/paper/*.json")
	if len(files) != 10 {
		t.Fatalf("want the 10 paper corpus files, got %d", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		recs, errs := study.ParseScenarios(f, data)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		got, err := study.EncodeScenarios(recs)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s: re-encoded corpus differs from the file", f)
		}
	}
}

func TestWriteCorpus(t *testing.T) {
	c, err := study.LoadCorpus(os.DirFS("../manifests"), "corpus/paper")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := study.WriteCorpus(dir, c.Scenarios); err != nil {
		t.Fatal(err)
	}
	back, err := study.LoadCorpus(os.DirFS(filepath.Dir(dir)), "out")
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Scenarios) != 21 || len(back.Files) != 10 {
		t.Errorf("wrote %d records in %d files, want 21 in 10", len(back.Scenarios), len(back.Files))
	}
	if err := study.WriteCorpus(dir, c.Scenarios); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("writing over a corpus: %v, want a refusal", err)
	}
	file := filepath.Join(t.TempDir(), "one.json")
	bad := append([]study.Scenario(nil), c.Scenarios...)
	bad[3].Cause = "nonsense"
	if err := study.WriteCorpus(file, bad); err == nil || !strings.Contains(err.Error(), "unknown cause") {
		t.Errorf("writing an invalid record: %v, want a refusal", err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("an invalid corpus left %s behind", file)
	}
	if err := study.WriteCorpus(file, c.Scenarios); err != nil {
		t.Fatal(err)
	}
}
