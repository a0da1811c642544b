package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodeBundleV1 pins the coding bundle an earlier version of stress
// code wrote (coding/coder/testdata/v1: its own manifest.json and call
// lines, before codings ran through the runner): code -resume refuses it,
// naming its coded corpora, and changes nothing; agree reads those
// corpora as that version did; and a new coding of the same manifest
// prints the report that version printed (code-v1.golden) and writes
// the same coded corpora.
func TestCodeBundleV1(t *testing.T) {
	const manifest = "../../coding/coder/testdata/coding.yaml"
	dir := filepath.Join(t.TempDir(), "v1")
	if err := os.CopyFS(dir, os.DirFS("../../coding/coder/testdata/v1")); err != nil {
		t.Fatal(err)
	}
	_, log, err := runCmd(t, "code", "-quiet", "-resume", dir, manifest)
	if want := "a coding bundle of an earlier version, which this version neither continues nor reports again: its coded corpora (" + filepath.Join(dir, "coded") + ") read as they are (stress agree)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("code -resume of a v1 bundle: %v, want %q\n%s", err, want, log)
	}
	sameCoded(t, "../../coding/coder/testdata/v1", dir)
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
	out, log, err := runCmd(t, "code", "-quiet", "-out", fresh, manifest)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "code-v1.golden", strings.ReplaceAll(out, fresh, "BUNDLE"))
	sameCoded(t, "../../coding/coder/testdata/v1", fresh)
}

// sameCoded checks that the bundle dir holds the coded corpora of the
// bundle want, file for file.
func sameCoded(t *testing.T, want, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(want, "coded", "*", "*.json"))
	got, _ := filepath.Glob(filepath.Join(dir, "coded", "*", "*.json"))
	if len(files) == 0 || len(got) != len(files) {
		t.Errorf("%s: %d coded files, want %d", dir, len(got), len(files))
	}
	for _, f := range files {
		w, _ := os.ReadFile(f)
		g, err := os.ReadFile(filepath.Join(dir, "coded", filepath.Base(filepath.Dir(f)), filepath.Base(f)))
		if err != nil || string(g) != string(w) {
			t.Errorf("%s differs from %s (%v)", filepath.Join(dir, "coded", filepath.Base(filepath.Dir(f)), filepath.Base(f)), f, err)
		}
	}
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
