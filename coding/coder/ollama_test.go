package coder_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/coding/coder"
	"github.com/mcpstress/stress/internal/testserver/ollamatest"
	"github.com/mcpstress/stress/manifests"
	_ "github.com/mcpstress/stress/models/ollama" // registers the Ollama backend
	"github.com/mcpstress/stress/results"
)

// TestModelCoderOnOllama codes the paper corpus with a real Ollama server
// and the tiny model the tests build: every record gets a call, pinned by
// the model's digest, and every answer is either a coding or a recorded
// invalid answer (the tiny model writes noise), never a transport error.
func TestModelCoderOnOllama(t *testing.T) {
	srv := ollamatest.Start(t)
	info, err := srv.CreateTinyModel(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, _ := filepath.Abs("../../manifests")
	yaml := "name: t\ncorpus: " + src + "/corpus/paper\nprompts:\n  - name: coding\n    path: " + src + "/prompts/coding.tmpl\n" +
		"conditions: [normalized]\nreplicates: 1\nseed: 7\ntemperature: 0\nmodels:\n" +
		"  - name: tiny\n    backend: ollama\n    model: " + info.Name + "\n    digest: " + info.Digest + "\n    host: " + srv.Host + "\n    format: json\n    options: {num_predict: 48}\n"
	file := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := manifests.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := coder.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := plan.Run(context.Background(), filepath.Join(dir, "bundle"), coder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Coders) != 1 {
		t.Fatalf("summary %+v", sum)
	}
	c := sum.Coders[0]
	if c.Errors != 0 || c.Coded+len(c.Invalid) != 21 {
		t.Errorf("tiny: %d coded, %d invalid, %d errors; want 21 answers and no error", c.Coded, len(c.Invalid), c.Errors)
	}
	calls, err := os.ReadFile(filepath.Join(dir, "bundle", results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(calls), "\n"); n != 21 {
		t.Errorf("%d call lines, want 21", n)
	}
	if len(c.Invalid) > 0 {
		t.Logf("tiny model: %d coded, %d invalid, e.g. %q", c.Coded, len(c.Invalid), c.Invalid[0])
	}
}
