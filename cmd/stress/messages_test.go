package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/results"
)

// TestDamagedMessages: analyze, report and compare refuse a bundle whose
// messages.jsonl was deleted, emptied, truncated, has a line twice or a
// message's text edited, naming the file and the call line of the first
// reference that fails; the intact bundle reads.
func TestDamagedMessages(t *testing.T) {
	src := filepath.Join(t.TempDir(), "run")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", src); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	msgs, err := os.ReadFile(filepath.Join(src, results.MessagesFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(msgs, []byte("\n"))
	lines = lines[:len(lines)-1] // the empty tail after the last newline
	edited := bytes.Replace(msgs, []byte("You are"), []byte("You were"), 1)
	if bytes.Equal(edited, msgs) {
		t.Fatal("no text to edit in messages.jsonl")
	}
	for _, tc := range []struct {
		name   string
		damage func(file string) error
		says   string
	}{
		{"deleted", func(f string) error { return os.Remove(f) }, "cannot be read"},
		{"emptied", func(f string) error { return os.WriteFile(f, nil, 0o644) }, "is not in messages.jsonl"},
		{"truncated", func(f string) error { return os.WriteFile(f, msgs[:len(msgs)-len(lines[len(lines)-1])/2], 0o644) }, "is not in messages.jsonl"},
		{"a line twice", func(f string) error {
			return os.WriteFile(f, append(append(append([]byte(nil), lines[0]...), lines[0]...), bytes.Join(lines[1:], nil)...), 0o644)
		}, "is stored twice"},
		{"text edited", func(f string) error { return os.WriteFile(f, edited, 0o644) }, "does not match the message's sha256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			copyTree(t, src, dir)
			if err := tc.damage(filepath.Join(dir, results.MessagesFile)); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"analyze", dir}, {"report", "-out", filepath.Join(t.TempDir(), "r"), dir}, {"compare", src, dir}} {
				t.Run(argsName(args), func(t *testing.T) {
					_, _, err := runCmd(t, args...)
					if err == nil || !strings.Contains(err.Error(), "messages.jsonl") || !strings.Contains(err.Error(), tc.says) {
						t.Errorf("%s: %v, want an error naming messages.jsonl saying %q", args[0], err, tc.says)
					}
				})
			}
		})
	}
	if _, _, err := runCmd(t, "analyze", src); err != nil {
		t.Errorf("the intact bundle: %v", err)
	}
}

// copyTree copies the regular files of directory src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
