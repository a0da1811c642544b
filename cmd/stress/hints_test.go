package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/env/mcpenv"
	"github.com/mcpstress/stress/internal/testserver/faultserver"
	"github.com/mcpstress/stress/internal/testserver/ollamatest"
	"github.com/mcpstress/stress/models/ollama"
)

// TestNoServerSaysWhatToDo: with no Ollama server, models, verify and run
// say once which URL they tried, where it came from, and how to start
// Ollama or name another server; run and verify name both models of the
// paper's manifest in that one error.
func TestNoServerSaysWhatToDo(t *testing.T) {
	addr := faultserver.ClosedPort(t)
	host := "http://" + addr
	_, _, err := runCmd(t, "models", "-host", addr)
	if err == nil || err.Error() != "cannot reach Ollama at "+host+": connection refused: "+ollama.UnreachableHint {
		t.Errorf("models -host: %v", err)
	}
	t.Setenv("OLLAMA_HOST", addr)
	for _, args := range [][]string{
		{"run", "-allow-unpinned", "-out", t.TempDir() + "/run", "../../manifests/paper.yaml"},
		{"verify", "../../manifests/paper.yaml"},
	} {
		t.Run(argsName(args), func(t *testing.T) {
			_, _, err := runCmd(t, args...)
			want := "cannot reach Ollama at " + host + ` (from OLLAMA_HOST; models "llama3.2-3b", "qwen3.5-0.8b"): connection refused: ` + ollama.UnreachableHint
			if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "cannot reach") != 1 || strings.Count(err.Error(), addr) != 1 {
				t.Errorf("%s: %v\nwant the server named once:\n%s", args[0], err, want)
			}
		})
	}
}

// TestUnpinnedRunSaysHowToPin: run refuses the paper's unpinned models,
// naming the command that lists the digests and the field each goes into.
func TestUnpinnedRunSaysHowToPin(t *testing.T) {
	_, _, err := runCmd(t, "run", "-out", t.TempDir()+"/run", "../../manifests/paper.yaml")
	for _, w := range []string{
		`field models[0].digest: model "llama3.2-3b" (llama3.2:3b-instruct-q4_K_M) has no digest: run "stress models", copy the digest it lists for llama3.2:3b-instruct-q4_K_M into models[0].digest and check it with "stress verify ../../manifests/paper.yaml"; or pass -allow-unpinned`,
		`copy the digest it lists for qwen3.5:0.8b-q8_0 into models[1].digest`,
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v\nwant %s", err, w)
		}
	}
}

// TestModelsEmptyServer: stress models on a real server without models
// says so on stderr and how to pull one; the table is empty and -json
// prints an empty array.
func TestModelsEmptyServer(t *testing.T) {
	srv := ollamatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if v, err := srv.Version(ctx); err != nil {
		t.Fatal(v, err)
	}
	want := "models: no models on " + srv.Host + "; pull one with: OLLAMA_HOST=" + srv.Host + " ollama pull NAME (NAME as a manifest's models[i].model gives it)\n"
	out, log, err := runCmd(t, "models", "-host", srv.Host)
	if err != nil || out != "" || log != want {
		t.Errorf("models: %v\nstdout %q\nstderr %q\nwant stderr %q", err, out, log, want)
	}
	out, log, err = runCmd(t, "models", "-json", "-host", srv.Addr)
	if err != nil || out != "[]\n" || log != want {
		t.Errorf("models -json: %v\nstdout %q\nstderr %q", err, out, log)
	}
}

// TestPowerNamesDegeneratePilot: the built-in study's baselines never
// choose right under code_only or structured's pairs (0/105), so power
// -pilot clamps their rate to 1% and their undefined correlations, and
// says so for each contrast, in the text and in -json.
func TestPowerNamesDegeneratePilot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pilot")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", dir); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	grid := []string{"power", "-pilot", dir, "-diff", "0.1", "-studies", "20", "-scenarios", "21", "-replicates", "1", "-servers", "10"}
	out, log, err := runCmd(t, grid...)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	want := "pilot contrast always_stop/default code_only − normalized (Strict): rate of B 0/105 clamped to 1.0%, intra-scenario correlation undefined (no variance) set to 0.01, arm correlation undefined (no variance) set to 1 (a degenerate pilot)\n"
	if !strings.Contains(out, want) || strings.Count(out, "(a degenerate pilot)") != 6 {
		t.Errorf("power output lacks\n%s\nfor each of the 6 contrasts:\n%s", want, out)
	}
	out, log, err = runCmd(t, append(grid, "-json", "-icc", "0.2")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	var pw analysis.Power
	if err := json.Unmarshal([]byte(out), &pw); err != nil {
		t.Fatal(err)
	}
	got := pw.Curves[0].Clamped
	if len(pw.Curves) != 6 || len(got) != 2 || got[0] != (analysis.PowerClamp{Field: "base", Estimate: "0/105", Value: 0.01}) ||
		got[1] != (analysis.PowerClamp{Field: "arm_corr", Estimate: "undefined (no variance)", Value: 1}) {
		t.Errorf("-json -icc 0.2: clamped %+v, want the rate's and the arm correlation's (the icc is given)", got)
	}
}

// TestActReferenceFromAnotherDirectory: a study on the reference servers
// given by its absolute path finds them from the manifest's directory
// (scripts/mcp-servers above manifests/), whatever the working directory;
// one shard of 3 decisions runs.
func TestActReferenceFromAnotherDirectory(t *testing.T) {
	referenceServers(t)
	manifest := abs(t, "../../manifests/act-reference.yaml")
	t.Setenv(mcpenv.ServersVar, "")
	t.Chdir(t.TempDir())
	out, log, err := runCmd(t, "run", "-quiet", "-shard", "1/40", "-out", "b", manifest)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if !strings.Contains(out, "schema_repair") {
		t.Errorf("table:\n%s", out)
	}
}

// TestReferenceServersNotFound: a manifest outside the repository, run
// from another directory, is refused with every place looked at and why
// it would not do; $STRESS_MCP_SERVERS without the servers is named.
func TestReferenceServersNotFound(t *testing.T) {
	b, err := os.ReadFile("../../manifests/act-reference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "corpus: corpus/act-reference", "corpus: "+abs(t, "../../manifests/corpus/act-reference"), 1)
	text = strings.Replace(text, "path: prompts/act.tmpl", "path: "+abs(t, "../../manifests/prompts/act.tmpl"), 1)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "study", "m.yaml")
	os.MkdirAll(filepath.Dir(manifest), 0o755)
	os.WriteFile(manifest, []byte(text), 0o644)
	t.Setenv(mcpenv.ServersVar, "")
	work := filepath.Join(dir, "work")
	os.MkdirAll(filepath.Join(work, "scripts", "mcp-servers", "node_modules", "@modelcontextprotocol"), 0o755)
	t.Chdir(work)
	_, _, err = runCmd(t, "run", "-quiet", "-out", "b", manifest)
	if err == nil {
		t.Fatal("run without the servers")
	}
	for _, w := range []string{
		"manifest " + manifest + ": its corpus runs on the reference MCP servers, and they are not installed: no scripts/mcp-servers/node_modules/@modelcontextprotocol in the manifest's directory, the working directory and their parents:\n",
		"\n  " + filepath.Join(dir, "study", mcpenv.DefaultServers) + ": does not exist\n",
		"\n  " + filepath.Join(dir, mcpenv.DefaultServers) + ": does not exist\n",
		"\n  " + filepath.Join(work, mcpenv.DefaultServers) + ": has no server-everything/dist/index.js\n",
		"\n  " + filepath.Join("/", mcpenv.DefaultServers) + ": does not exist\n",
		"\nrun scripts/test, or (cd scripts/mcp-servers && npm ci --ignore-scripts) in the repository, or set STRESS_MCP_SERVERS to the directory that holds their packages",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	t.Setenv(mcpenv.ServersVar, work)
	_, _, err = runCmd(t, "run", "-quiet", "-out", "b", manifest)
	if err == nil || !strings.Contains(err.Error(), "they are not installed in STRESS_MCP_SERVERS="+work+", which has no server-everything/dist/index.js") {
		t.Errorf("run with STRESS_MCP_SERVERS without the servers: %v", err)
	}
}

// TestManifestFileNotFound: a relative corpus or prompt path that is not
// there is reported with the path looked for, from the manifest's
// directory.
func TestManifestFileNotFound(t *testing.T) {
	b, err := os.ReadFile("../../manifests/paper.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, "m.yaml")
	os.WriteFile(manifest, b, 0o644)
	t.Chdir(abs(t, "../../manifests")) // where corpus/paper is, but not the manifest
	_, _, err = runCmd(t, "run", "-allow-unpinned", "-out", filepath.Join(dir, "b"), manifest)
	want := "(looked for " + filepath.Join(dir, "corpus", "paper") + ": a relative path is taken from the manifest's directory)"
	if err == nil || !strings.Contains(err.Error(), "field corpus: ") || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %s", err, want)
	}
	text := strings.Replace(string(b), "corpus: corpus/paper", "corpus: "+abs(t, "corpus/paper"), 1)
	os.WriteFile(manifest, []byte(text), 0o644)
	_, _, err = runCmd(t, "run", "-allow-unpinned", "-out", filepath.Join(dir, "b"), manifest)
	want = "field prompts[0].path: open prompts/default.tmpl: no such file or directory (looked for " + filepath.Join(dir, "prompts", "default.tmpl") + ": a relative path is taken from the manifest's directory)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %s", err, want)
	}
}
