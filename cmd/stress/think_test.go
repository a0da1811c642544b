package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/internal/testserver/ollamatest"
)

// armsManifest writes a manifest of one condition and one replicate on the
// paper corpus with the given models (YAML) and returns its path.
func armsManifest(t *testing.T, models string) string {
	t.Helper()
	root, err := filepath.Abs("../../manifests")
	if err != nil {
		t.Fatal(err)
	}
	m := "name: arms\ncorpus: " + filepath.Join(root, "corpus/paper") + "\nprompts:\n  - name: default\n    path: " +
		filepath.Join(root, "prompts/default.tmpl") + "\nconditions: [normalized]\nreplicates: 1\nseed: 20260819\ntemperature: 0.7\nmodels:\n" + models
	file := filepath.Join(t.TempDir(), "arms.yaml")
	if err := os.WriteFile(file, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func sha256File(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// runArms runs the manifest, verifies it, and compares its two arms.
func runArms(t *testing.T, manifest, a, b string) (verify, compare string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", dir, manifest); err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	verify, log, err := runCmd(t, "verify", manifest)
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, log)
	}
	compare, log, err = runCmd(t, "compare", "-b", "200", "-arm-a", a, "-arm-b", b, dir, dir)
	if err != nil {
		t.Fatalf("compare: %v\n%s", err, log)
	}
	if !strings.Contains(compare, a+"/default") || !strings.Contains(compare, b+"/default") {
		t.Errorf("compare does not pair %s and %s:\n%s", a, b, compare)
	}
	return verify, compare
}

// TestThinkingArms: a manifest runs one thinking model (the tiny model with
// a thinking template, on the real Ollama server) with think false and
// think true as two arms, stress verify records the setting, and stress
// compare pairs the arms decision by decision.
func TestThinkingArms(t *testing.T) {
	srv := ollamatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := srv.CreateModel(ctx, "think", ollamatest.ThinkingTemplate, ollamatest.WithWords("</think>"))
	if err != nil {
		t.Fatal(err)
	}
	arm := func(name, think string) string {
		return "  - {name: " + name + ", backend: ollama, model: " + info.Name + ", digest: " + info.Digest + ", host: " + srv.Host +
			", format: schema, seed_check: error, options: {think: " + think + ", num_predict: 48}}\n"
	}
	verify, compare := runArms(t, armsManifest(t, arm("think-off", "false")+arm("think-on", "true")), "think-off", "think-on")
	if !strings.Contains(verify, info.Digest) {
		t.Errorf("verify:\n%s", verify)
	}
	t.Logf("\n%s", compare)
}

// TestExecNodeArms: the Node example backend runs a study through the
// command line with thinking off and on as two arms, and compare pairs
// them (the keyword model answers alike, so every difference is 0).
func TestExecNodeArms(t *testing.T) {
	node, err := osexec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: install Node.js (Debian: apt-get install nodejs npm), then run scripts/test")
	}
	node, _ = filepath.EvalSymlinks(node)
	script, _ := filepath.Abs("../../models/exec/examples/keyword.js")
	arm := func(name, think string) string {
		return "  - {name: " + name + ", backend: exec, model: keyword, digest: " + sha256File(t, node) + ", parallel: 4, seed_check: error, options: {command: node, script: " +
			script + ", script_digest: " + sha256File(t, script) + ", think: " + think + "}}\n"
	}
	verify, compare := runArms(t, armsManifest(t, arm("kw-off", "false")+arm("kw-on", "true")), "kw-off", "kw-on")
	if !strings.Contains(verify, sha256File(t, node)) {
		t.Errorf("verify does not show the executable's sha256:\n%s", verify)
	}
	rows := 0
	for _, line := range strings.Split(compare, "\n") {
		// A table row, not the note under the table naming the rows.
		if f := strings.Fields(line); len(f) > 2 && f[0] == "kw-off/default" && f[1] == "kw-on/default" {
			rows++
			if !strings.Contains(line, " 0.0 ") {
				t.Errorf("thinking changed the keyword model's answers: %s", line)
			}
		}
	}
	if rows == 0 {
		t.Errorf("compare has no kw-off/default row:\n%s", compare)
	}
	t.Logf("\n%s\n%s", verify, compare)
}
