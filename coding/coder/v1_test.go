package coder_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/coding/coder"
	"github.com/mcpstress/stress/manifests"
)

// TestBundleV1Refused: a coding bundle an earlier version wrote
// (testdata/v1-scripted: its own manifest.json and call lines, finished
// or not) is neither continued nor reported again: Resume and
// AllowedUnpinned refuse it, naming its coded corpora, and change no file
// of it; no call is made.
func TestBundleV1Refused(t *testing.T) {
	m, err := manifests.Load("testdata/scripted.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, finished := range []bool{true, false} {
		t.Run(fmt.Sprintf("finished=%v", finished), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "v1")
			if err := os.CopyFS(dir, os.DirFS("testdata/v1-scripted")); err != nil {
				t.Fatal(err)
			}
			if !finished {
				rec, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
				os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(strings.Replace(string(rec), `"finished"`, `"was_finished"`, 1)), 0o644)
			}
			before := tree(t, dir)
			backend.Store(nil) // no call may be made
			plan, err := coder.Prepare(m, false)
			if err != nil {
				t.Fatal(err)
			}
			want := "a coding bundle of an earlier version, which this version neither continues nor reports again: its coded corpora (" + filepath.Join(dir, "coded") + ") read as they are (stress agree)"
			if _, err := plan.Resume(context.Background(), dir, coder.Options{}); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Resume: %v, want %q", err, want)
			}
			if _, err := coder.AllowedUnpinned(dir); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("AllowedUnpinned: %v, want %q", err, want)
			}
			if after := tree(t, dir); after != before {
				t.Errorf("the refused bundle changed:\n%s\nwas:\n%s", after, before)
			}
		})
	}
}

// tree lists the files under dir with their contents' sizes and hashes.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		fmt.Fprintf(&b, "%s %d %x\n", strings.TrimPrefix(p, dir), len(data), sha256.Sum256(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
