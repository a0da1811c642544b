package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodeBundleV1 reads the coding bundle an earlier version of stress
// code wrote (coding/coder/testdata/v1: its own manifest.json and call lines,
// before codings ran through the runner): code -resume reports it as that
// version did (code-v1.golden is what that version printed), the coded
// corpora it rewrites are the ones shipped, and agree reads them as that
// version did. A new coding of the same manifest prints the same report.
func TestCodeBundleV1(t *testing.T) {
	const manifest = "../../coding/coder/testdata/coding.yaml"
	dir := filepath.Join(t.TempDir(), "v1")
	if err := os.CopyFS(dir, os.DirFS("../../coding/coder/testdata/v1")); err != nil {
		t.Fatal(err)
	}
	out, log, err := runCmd(t, "code", "-quiet", "-resume", dir, manifest)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "code-v1.golden", strings.ReplaceAll(out, dir, "BUNDLE"))
	want, _ := filepath.Glob("../../coding/coder/testdata/v1/coded/*/*.json")
	got, _ := filepath.Glob(filepath.Join(dir, "coded", "*", "*.json"))
	if len(want) == 0 || len(got) != len(want) {
		t.Errorf("coded files: %d, want %d", len(got), len(want))
	}
	for _, f := range want {
		w, _ := os.ReadFile(f)
		g, err := os.ReadFile(filepath.Join(dir, "coded", filepath.Base(filepath.Dir(f)), filepath.Base(f)))
		if err != nil || string(g) != string(w) {
			t.Errorf("%s differs after code -resume (%v)", f, err)
		}
	}
	for _, c := range []struct{ golden, corpus string }{
		{"code-v1-agree-rules.golden", "../../coding/coder/testdata/v1/coded/rules.coding"},
		{"code-v1-agree-fake.golden", "../../coding/coder/testdata/v1-scripted/coded/fake.coding"},
	} {
		t.Run(c.golden, func(t *testing.T) {
			out, _, err := runCmd(t, "agree", "-common", paperCorpus, c.corpus)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, c.golden, out)
		})
	}

	fresh := filepath.Join(t.TempDir(), "new")
	out, log, err = runCmd(t, "code", "-quiet", "-out", fresh, manifest)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "code-v1.golden", strings.ReplaceAll(out, fresh, "BUNDLE"))
}

// TestCodingBundleNotCounted: a coding bundle is marked as one in its
// manifest.json, and the commands that count, resume or merge decisions
// refuse it naming stress code -resume, which still reports it.
func TestCodingBundleNotCounted(t *testing.T) {
	const manifest = "../../coding/coder/testdata/coding.yaml"
	dir := filepath.Join(t.TempDir(), "coding")
	if _, log, err := runCmd(t, "code", "-quiet", "-out", dir, manifest); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	want := dir + " is a coding bundle (written by stress code)"
	for _, args := range [][]string{
		{"analyze", dir},
		{"report", "-out", filepath.Join(t.TempDir(), "r"), dir},
		{"compare", dir, dir},
		{"run", "-quiet", "-resume", dir},
		{"merge", "-out", filepath.Join(t.TempDir(), "m"), dir, dir},
		{"export", "-out", filepath.Join(t.TempDir(), "x"), dir},
	} {
		t.Run(argsName(args), func(t *testing.T) {
			_, log, err := runCmd(t, args...)
			if err == nil || !strings.Contains(err.Error()+log, want) || !strings.Contains(err.Error()+log, "stress code -resume "+dir) {
				t.Errorf("%v: %v\n%s", args, err, log)
			}
		})
	}
	if _, log, err := runCmd(t, "code", "-quiet", "-resume", dir, manifest); err != nil {
		t.Errorf("code -resume: %v\n%s", err, log)
	}
}
