package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/internal/testserver/ollamatest"
)

// TestVerifyAndModelsAgainstRealServer runs `stress models` and
// `stress verify` against a real Ollama server with the tiny model.
func TestVerifyAndModelsAgainstRealServer(t *testing.T) {
	srv := ollamatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := srv.CreateTinyModel(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, "models", "-host", srv.Host)
	if err != nil || !strings.Contains(out, info.Name) || !strings.Contains(out, info.Digest) {
		t.Fatalf("models: %v\n%s", err, out)
	}
	manifest := func(digest string) string {
		b, _ := os.ReadFile("../../manifests/paper.yaml")
		text := strings.Replace(string(b), "corpus: corpus/paper", "corpus: "+abs(t, "../../manifests/corpus/paper"), 1)
		text = strings.Replace(text, "path: prompts/default.tmpl", "path: "+abs(t, "../../manifests/prompts/default.tmpl"), 1)
		text = strings.Replace(text, "    model: llama3.2:3b-instruct-q4_K_M\n    digest: \"\"", "    model: "+info.Name+"\n    host: "+srv.Host+"\n    digest: \""+digest+"\"", 1)
		i := strings.Index(text, "  - name: qwen3.5-0.8b")
		f := filepath.Join(t.TempDir(), "m.yaml")
		os.WriteFile(f, []byte(text[:i]), 0o644)
		return f
	}
	out, log, err := runCmd(t, "verify", manifest(info.Digest))
	if err != nil || !strings.Contains(out, info.Digest) || !strings.Contains(log, "verified") {
		t.Fatalf("verify with the true digest: %v\n%s%s", err, out, log)
	}
	wrong := strings.Repeat("0", 64)
	_, _, err = runCmd(t, "verify", manifest(wrong))
	if err == nil || !strings.Contains(err.Error(), "expects "+wrong) || !strings.Contains(err.Error(), "has "+info.Digest) {
		t.Fatalf("verify with a wrong digest: %v", err)
	}
}

func abs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
