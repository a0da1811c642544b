package coder_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/coding/coder"
	"github.com/mcpstress/stress/manifests"
)

// summaryText writes a coding's summary, its corpora relative to the
// bundle.
func summaryText(sum *coder.Summary) string {
	var b strings.Builder
	for _, c := range sum.Coders {
		fmt.Fprintf(&b, "%s/%s: records %d, coded %d, errors %d, corpus %s\n", c.Model, c.Prompt, c.Records, c.Coded, c.Errors, strings.TrimPrefix(c.Corpus, sum.Dir))
		for _, inv := range c.Invalid {
			fmt.Fprintf(&b, "  invalid %s\n", inv)
		}
	}
	return b.String()
}

// TestBundleV1 reads the coding bundle an earlier version wrote with the
// scripted model (testdata/v1-scripted: interrupted, a torn line cut off
// on resume, an invalid answer, a call failed for good): resuming it,
// finished, reports what that version reported (v1-scripted.summary) and
// rewrites the same coded corpora, without a call.
func TestBundleV1(t *testing.T) {
	m, err := manifests.Load("testdata/scripted.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "v1")
	if err := os.CopyFS(dir, os.DirFS("testdata/v1-scripted")); err != nil {
		t.Fatal(err)
	}
	backend.Store(nil) // no call may be made
	plan, err := coder.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := plan.Resume(context.Background(), dir, coder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile("testdata/v1-scripted.summary")
	if got := summaryText(sum); got != string(want) {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
	files, _ := filepath.Glob("testdata/v1-scripted/coded/*/*.json")
	if len(files) != 19 {
		t.Errorf("%d coded files, want 19", len(files))
	}
	for _, f := range files {
		w, _ := os.ReadFile(f)
		g, err := os.ReadFile(filepath.Join(dir, "coded", filepath.Base(filepath.Dir(f)), filepath.Base(f)))
		if err != nil || string(g) != string(w) {
			t.Errorf("%s differs after the resume (%v)", f, err)
		}
	}
}

// TestBundleV1Unfinished: an unfinished coding bundle of the earlier
// version is not continued (this version writes another format), and
// says what to do.
func TestBundleV1Unfinished(t *testing.T) {
	m, err := manifests.Load("testdata/scripted.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "v1")
	if err := os.CopyFS(dir, os.DirFS("testdata/v1-scripted")); err != nil {
		t.Fatal(err)
	}
	rec, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(strings.Replace(string(rec), `"finished"`, `"was_finished"`, 1)), 0o644)
	backend.Store(nil)
	plan, err := coder.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Resume(context.Background(), dir, coder.Options{}); err == nil || !strings.Contains(err.Error(), "an unfinished coding of an earlier version, which this version does not continue: code again into a new bundle") {
		t.Errorf("Resume: %v", err)
	}
}
