package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestOneDecisionFsyncs runs the built binary on a one-decision study
// under strace and checks which files it fsyncs: messages.jsonl and
// calls.jsonl (the decision), manifest.json (the durable point) and the
// bundle's directory (the files' names), each once; not defaults.json,
// decisions.parquet or summary.json, which a resume rebuilds. A resume of
// the finished bundle makes the same four. Losing what any of the four
// keeps (as a power cut without it may) makes the bundle refused. Then it
// empties decisions.parquet and tears defaults.json, as a crash may, and
// checks that analyze names the repair, that the repair works, and that a
// defaults.json of another study is still refused.
func TestOneDecisionFsyncs(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		missing(t, "strace is not installed (.ci/run installs it)")
	}
	if out, err := exec.Command(strace, "-o", "/dev/null", "true").CombinedOutput(); err != nil {
		missing(t, "strace cannot trace here: %v\n%s", err, out)
	}
	bin := stressBinary(t)
	root := t.TempDir()
	m := oneDecisionStudy(t, root)
	var errOut bytes.Buffer
	out := filepath.Join(root, "run")
	synced := fsyncsOf(t, strace, filepath.Join(root, "trace"), out, bin, "run", "-quiet", "-out", out, m)
	want := []string{"fsync /messages.jsonl", "fsync /calls.jsonl", "fsync /manifest.json.tmp", "fsync "}
	if !slices.Equal(synced, want) {
		t.Errorf("a one-decision run fsyncs %q, want %q", synced, want)
	}
	// A resume of the finished bundle makes the bytes it keeps durable
	// once (a copied bundle's may not be) and records its session: the
	// same four (it made ten when it synced each log on opening it, on
	// closing it with nothing written, on opening it again to run and on
	// closing it at the end).
	synced = fsyncsOf(t, strace, filepath.Join(root, "trace-resume"), out, bin, "run", "-quiet", "-resume", out)
	if !slices.Equal(synced, want) {
		t.Errorf("a resume of a finished one-decision bundle fsyncs %q, want %q", synced, want)
	}

	// What each fsync keeps, nothing can rebuild: the loss a power cut
	// can leave without it (the file's bytes, or for the directory the
	// name of calls.jsonl) makes the bundle refused, never silently
	// redone, where a lost derived file is repaired (below).
	for _, loss := range []struct{ name, file, why string }{
		{"messages.jsonl's bytes lost", "messages.jsonl", "messages.jsonl has 0 bytes, fewer than the"},
		{"calls.jsonl's bytes lost", "calls.jsonl", "calls.jsonl has 0 bytes, fewer than the"},
		{"manifest.json's bytes lost", "manifest.json", "manifest.json: unexpected end of JSON input"},
		{"calls.jsonl's directory entry lost", "", "calls.jsonl is missing, but its first"},
	} {
		t.Run(loss.name, func(t *testing.T) {
			lost := filepath.Join(root, "lost-"+strings.TrimSuffix(loss.file, filepath.Ext(loss.file)))
			copyDir(t, out, lost)
			if loss.file == "" {
				err = os.Remove(filepath.Join(lost, "calls.jsonl"))
			} else {
				err = os.WriteFile(filepath.Join(lost, loss.file), nil, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			err = run(context.Background(), []string{"run", "-quiet", "-resume", lost}, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), loss.why) {
				t.Errorf("resume after losing what the fsync of %q keeps: %v, want %q", loss.file, err, loss.why)
			}
			if err := run(context.Background(), []string{"analyze", lost}, io.Discard, io.Discard); err == nil {
				t.Errorf("analyze after losing what the fsync of %q keeps: no error", loss.file)
			}
		})
	}

	if err := os.WriteFile(filepath.Join(out, "decisions.parquet"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	err = run(context.Background(), []string{"analyze", out}, io.Discard, &errOut)
	if err == nil || !strings.Contains(err.Error(), "stress run -resume "+out+" rebuilds it") {
		t.Fatalf("analyze of an emptied decisions.parquet: %v, want the repair named", err)
	}
	errOut.Reset()
	if err := run(context.Background(), []string{"run", "-resume", out}, io.Discard, &errOut); err != nil {
		t.Fatalf("resume: %v\n%s", err, errOut.String())
	}
	if strings.Contains(errOut.String(), "defaults.json written again") {
		t.Errorf("a resume rewrote an intact defaults.json:\n%s", errOut.String())
	}
	if err := run(context.Background(), []string{"analyze", out}, io.Discard, &errOut); err != nil {
		t.Fatalf("analyze after the repair: %v\n%s", err, errOut.String())
	}

	defaults := filepath.Join(out, "defaults.json")
	kept, err := os.ReadFile(defaults)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		torn []byte
	}{
		{"an empty defaults.json", nil},
		{"a defaults.json of zeros", make([]byte, len(kept))},
		{"half a defaults.json", kept[:len(kept)/2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			torn := tc.torn
			if err := os.WriteFile(defaults, torn, 0o644); err != nil {
				t.Fatal(err)
			}
			err = run(context.Background(), []string{"analyze", out}, io.Discard, &errOut)
			if err == nil || !strings.Contains(err.Error(), "stress run -resume "+out+" rewrites it") {
				t.Fatalf("analyze with a torn defaults.json (%d bytes): %v, want the repair named", len(torn), err)
			}
			errOut.Reset()
			if err := run(context.Background(), []string{"run", "-resume", out}, io.Discard, &errOut); err != nil {
				t.Fatalf("resume with a torn defaults.json (%d bytes): %v\n%s", len(torn), err, errOut.String())
			}
			if !strings.Contains(errOut.String(), "defaults.json written again from the study") {
				t.Errorf("the resume that rewrote a torn defaults.json (%d bytes) did not say so:\n%s", len(torn), errOut.String())
			}
			if b, err := os.ReadFile(defaults); err != nil || !bytes.Equal(b, kept) {
				t.Fatalf("defaults.json after the repair: %v\n%s\nwant\n%s", err, b, kept)
			}
		})
	}
	other := bytes.Replace(kept, []byte(`"seed": `), []byte(`"seed": 9`), 1)
	if err := os.WriteFile(defaults, other, 0o644); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), []string{"run", "-quiet", "-resume", out}, io.Discard, &errOut)
	if err == nil || !strings.Contains(err.Error(), "defaults.json: study seed 9") {
		t.Fatalf("resume with another study's defaults.json: %v, want it refused", err)
	}
	if b, _ := os.ReadFile(defaults); !bytes.Equal(b, other) {
		t.Error("a refused resume rewrote defaults.json")
	}
}

// fsyncsOf runs args under strace, writing its trace to trace, and returns
// each sync call it made: the call and the file, its path relative to out.
func fsyncsOf(t *testing.T, strace, trace, out string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(strace, append([]string{"-f", "-y", "-e", "trace=fsync,fdatasync,sync_file_range,syncfs", "-o", trace}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args[1:], " "), err, b)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var synced []string
	call := regexp.MustCompile(`(fsync|fdatasync|sync_file_range|syncfs)\(\d+<([^>]*)>`)
	for _, line := range strings.Split(string(b), "\n") {
		if c := call.FindStringSubmatch(line); c != nil {
			synced = append(synced, c[1]+" "+strings.TrimPrefix(c[2], out))
		} else if strings.Contains(line, "sync") && !strings.Contains(line, "resumed>") && !strings.Contains(line, "+++") && !strings.Contains(line, "---") {
			t.Errorf("a sync strace did not resolve: %s", line)
		}
	}
	return synced
}

// copyDir copies the files of directory from into a new directory to.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Mkdir(to, 0o755); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
