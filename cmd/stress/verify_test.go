package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/tabwriter"
)

// fakeOpenAI serves /models and /chat/completions as an OpenAI-compatible
// server that reports model and fingerprint (none when fingerprint is "").
func fakeOpenAI(t *testing.T, model, fingerprint string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/models":
			json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{map[string]any{"id": model, "object": "model"}}})
		case "/v1/chat/completions":
			json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "model": model, "system_fingerprint": fingerprint,
				"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "ok"}, "finish_reason": "stop"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestVerifyTable checks the verify table for every kind of model: a
// baseline (nothing to verify), OpenAI-compatible servers with and without
// a fingerprint, and an Ollama server that does not answer. No cell is
// empty or a Go <nil>.
func TestVerifyTable(t *testing.T) {
	fp := fakeOpenAI(t, "served-m", "fp_1")
	nofp := fakeOpenAI(t, "served-n", "")
	paper, _ := filepath.Abs("../../manifests/corpus/paper")
	prompt, _ := filepath.Abs("../../manifests/prompts/default.tmpl")
	m := `name: v
corpus: ` + paper + `
prompts: [{name: default, path: ` + prompt + `}]
conditions: [normalized]
replicates: 1
models:
  - {name: stop, backend: baseline, model: always_stop}
  - {name: oa, backend: openai, model: m, host: ` + fp.URL + `/v1, pin: {model: served-m}}
  - {name: oa-nofp, backend: openai, model: n, host: ` + nofp.URL + `/v1}
  - {name: down, backend: ollama, model: tiny, host: "http://127.0.0.1:1", transport: {attempts: 1}}
`
	file := filepath.Join(t.TempDir(), "m.yaml")
	os.WriteFile(file, []byte(m), 0o644)
	out, _, err := runCmd(t, "verify", file)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("verify with a server down: error %v, want it to name the server", err)
	}
	// Cells are separated by two spaces or more; rebuild the table with
	// the servers' random ports replaced.
	sep := regexp.MustCompile(`  +`)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	ports := strings.NewReplacer(fp.URL, "http://FP", nofp.URL, "http://NOFP")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		cells := sep.Split(line, -1)
		if strings.Contains(line, "<nil>") || len(cells) != 6 {
			t.Errorf("verify prints a <nil> or an empty cell:\n%s", out)
			break
		}
		fmt.Fprintln(tw, ports.Replace(strings.Join(cells, "\t")))
	}
	tw.Flush()
	golden(t, "verify.golden", b.String())
}
