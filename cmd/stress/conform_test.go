package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/manifests"
)

func TestConform(t *testing.T) {
	out, _, err := runCmd(t, "conform")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "conform.golden", out)
	if !strings.Contains(out, "inputs: 40 of the paper's suite (21 control, 2 transient, 17 malformed) + 25 of the error-category contract + 55 of the error shapes = 120; decisions: 240") ||
		!strings.HasSuffix(out, "\npassed 240, failed 0\n") {
		t.Errorf("conform summary wrong:\n%s", out[max(0, len(out)-400):])
	}
	js, _, err := runCmd(t, "conform", "-json")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "conform-json.golden", js)
	var rep struct {
		Cases []struct {
			ID, Kind, Mode, Want, Got, Reason string
			Pass                              bool
		} `json:"cases"`
		Passed int `json:"passed"`
		Failed int `json:"failed"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, c := range rep.Cases {
		kinds[c.Kind]++
		if !c.Pass || c.Want != c.Got {
			t.Errorf("%s/%s: want %s, got %s", c.ID, c.Mode, c.Want, c.Got)
		}
		if c.Kind == "malformed" && (c.Reason == "" || !strings.HasSuffix(c.Want, ":"+c.Reason)) {
			t.Errorf("malformed %s/%s: reason %q, want %s", c.ID, c.Mode, c.Reason, c.Want)
		}
	}
	if rep.Passed != 240 || rep.Failed != 0 || kinds["control"] != 42 || kinds["transient"] != 4 || kinds["malformed"] != 34 || kinds["category"] != 50 || kinds["shape"] != 110 {
		t.Errorf("report: passed %d, failed %d, kinds %v", rep.Passed, rep.Failed, kinds)
	}
}

// TestConformFails breaks one control envelope of a copy of the corpus:
// both its decisions fail, are reported, and the command exits 1.
func TestConformFails(t *testing.T) {
	dir := t.TempDir()
	err := fs.WalkDir(manifests.Builtin, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasPrefix(p, "corpus/") || strings.HasPrefix(p, "prompts/")) {
			return err
		}
		b, err := fs.ReadFile(manifests.Builtin, p)
		if err != nil {
			return err
		}
		if p == "corpus/paper/P01.json" {
			n := strings.Count(string(b), `"sideEffects": "none_committed"`)
			b = []byte(strings.Replace(string(b), `"sideEffects": "none_committed"`, `"sideEffects": "maybe"`, 1))
			if n == 0 {
				t.Fatalf("P01.json has no sideEffects to break")
			}
		}
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		return os.WriteFile(filepath.Join(dir, p), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(dir, "m.yaml")
	os.WriteFile(man, []byte("name: broken\ncorpus: corpus/paper\nprompts: [{name: default, path: prompts/default.tmpl}]\nconditions: [envelope]\nreplicates: 1\nmodels: [{name: fc, backend: fail_closed, model: registry}]\n"), 0o644)
	out, _, err := runCmd(t, "conform", "-manifest", man)
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "2 of 240 decisions failed") {
		t.Fatalf("err %v, want 2 of 240 failed", err)
	}
	if !strings.Contains(out, "FAIL S01/registry: policy stop_or_escalate, want select_tool; reason \"invalid_side_effects\", want \"\"") ||
		!strings.Contains(out, "S01  ") || !strings.HasSuffix(out, "passed 238, failed 2\n") {
		t.Errorf("output lacks the failures:\n%s", out)
	}
	js, stderr, err := runCmd(t, "conform", "-json", "-manifest", man)
	if err == nil || !strings.Contains(js, `"failed": 2`) || !strings.Contains(stderr, "FAIL S01/explicit_action") {
		t.Errorf("-json: err %v, stderr %q", err, stderr)
	}
}

func TestConformUsage(t *testing.T) {
	for _, args := range [][]string{{"conform", "extra"}, {"conform", "-nope"}} {
		t.Run(argsName(args), func(t *testing.T) {
			if _, _, err := runCmd(t, args...); !errors.Is(err, errUsage) {
				t.Errorf("%v: err %v, want a usage error", args, err)
			}
		})
	}
	if _, _, err := runCmd(t, "conform", "-manifest", "/nonexistent/m.yaml"); err == nil || !strings.Contains(err.Error(), "/nonexistent/m.yaml") {
		t.Errorf("missing manifest: %v", err)
	}
}
