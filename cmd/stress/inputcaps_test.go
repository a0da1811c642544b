package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstress/stress/internal/input"
)

// TestInputsBounded gives every command's input files a device that never
// ends (/dev/zero), a named pipe nobody writes, and a sparse file one
// byte over its cap: each command refuses each at once, naming the file
// and (for the large one) the cap, without reading it. Before, /dev/zero
// and a pipe made render, run, agree, scan -summarize and sample read
// without bound or wait forever.
func TestInputsBounded(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	over := func(t *testing.T, name string, c input.Cap) string {
		p := filepath.Join(root, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(c.Bytes + 1) // sparse: no disk used
		f.Close()
		return p
	}
	repo, _ := filepath.Abs("../..")
	paper := filepath.Join(repo, "manifests/corpus/paper")
	// A manifest naming X as its prompt, or as its corpus.
	manifest := func(name, corpus, prompt string) string {
		p := filepath.Join(root, name+".yaml")
		os.WriteFile(p, []byte(fmt.Sprintf(`name: m
corpus: %s
prompts: [{name: default, path: %s}]
conditions: [normalized]
replicates: 1
seed: 1
temperature: 0
models: [{name: s, backend: baseline, model: always_stop}]
`, corpus, prompt)), 0o644)
		return p
	}
	prompt := filepath.Join(repo, "manifests/prompts/default.tmpl")
	coding := filepath.Join(root, "coding.json")
	os.WriteFile(coding, []byte("[]"), 0o644)

	n := 0
	for _, tc := range []struct {
		name string
		args func(x, out string) []string
		cap  input.Cap
	}{
		{"render -prompt", func(x, out string) []string {
			return []string{"render", "-scenario", "S01", "-condition", "normalized", "-prompt", x}
		}, input.Prompt},
		{"render -observation", func(x, out string) []string {
			return []string{"render", "-scenario", "S01", "-condition", "normalized", "-replays", "1", "-observation", x}
		}, input.Observation},
		{"run manifest", func(x, out string) []string { return []string{"run", "-out", out, x} }, input.Manifest},
		{"run prompt", func(x, out string) []string {
			return []string{"run", "-out", out, manifest("p", paper, x)}
		}, input.Prompt},
		{"run corpus", func(x, out string) []string {
			return []string{"run", "-out", out, manifest("c", x, prompt)}
		}, input.Corpus},
		{"agree", func(x, out string) []string { return []string{"agree", x, paper} }, input.Corpus},
		{"summary -corpus", func(x, out string) []string { return []string{"summary", "-corpus", x} }, input.Corpus},
		{"confirm", func(x, out string) []string {
			return []string{"confirm", "-by", "Ada", "-all", "-out", out + ".json", x}
		}, input.Corpus},
		{"scan -summarize", func(x, out string) []string { return []string{"scan", "-summarize", x} }, input.Ledger},
		{"adjudicate -apply", func(x, out string) []string {
			return []string{"adjudicate", "-apply", x, "-out", out + ".json", coding, coding}
		}, input.Ledger},
		{"sample snapshot", func(x, out string) []string { return []string{"sample", "-out", out, x} }, input.Snapshot},
		{"sample -frame", func(x, out string) []string { return []string{"sample", "-out", out, "-frame", x} }, input.Frame},
		{"sample -exclude", func(x, out string) []string {
			return []string{"sample", "-out", out, "-exclude", x, "-frame", coding}
		}, input.Exclusions},
		{"capture -salt-file", func(x, out string) []string {
			return []string{"capture", "-out", out, "-salt-file", x, "-stdio", "a=true"}
		}, input.Salt},
		{"code", func(x, out string) []string { return []string{"code", "-out", out, x} }, input.Manifest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			big := over(t, strings.ReplaceAll(tc.name, " ", "_")+".big", tc.cap)
			for _, x := range []struct {
				name       string
				path, want string
			}{
				{"a device", "/dev/zero", "/dev/zero: not a regular file (a device); give a file"},
				{"a named pipe", fifo, fifo + ": not a regular file (a named pipe); give a file"},
				{"a file over its cap", big, fmt.Sprintf("%s: over its cap: more than %s, and %s holds at most %s", big, input.Size(tc.cap.Bytes), tc.cap.What, input.Size(tc.cap.Bytes))},
			} {
				t.Run(x.name, func(t *testing.T) {
					done := make(chan string, 1)
					go func() {
						n++
						out := filepath.Join(root, fmt.Sprint("out", n))
						_, stderr, err := runCmd(t, tc.args(x.path, out)...)
						if _, serr := os.Stat(out); serr == nil && tc.name != "sample snapshot" {
							t.Errorf("%s %s: an output was written", tc.name, x.path)
						}
						if err == nil {
							done <- "no error"
							return
						}
						done <- err.Error() + "\n" + stderr
					}()
					select {
					case msg := <-done:
						want := x.want
						if x.path == big {
							// A corpus file is named relative to its directory.
							want = fmt.Sprintf("%s: over its cap: %s, and %s holds at most %s", filepath.Base(big), input.Size(tc.cap.Bytes+1), tc.cap.What, input.Size(tc.cap.Bytes))
						}
						if !strings.Contains(msg, want) {
							t.Errorf("%s %s: %s\nwant it to contain %q", tc.name, x.path, msg, want)
						}
					case <-time.After(20 * time.Second):
						t.Fatalf("%s %s: still reading after 20s", tc.name, x.path)
					}
				})
			}
		})
	}
}

// TestInputCapsDocumented: docs/commands.md's table of input caps is
// internal/input's list, row for row.
func TestInputCapsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, c := range input.Caps {
		rows = append(rows, fmt.Sprintf("| %s | %s |", c.What, input.Size(c.Bytes)))
	}
	if want := "| input | cap |\n|---|---|\n" + strings.Join(rows, "\n") + "\n"; !strings.Contains(string(b), want) {
		t.Errorf("docs/commands.md lacks the caps table:\n%s", want)
	}
}
