package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/env/mcpenv"

	"github.com/mcpstress/stress/results"
)

// actManifest writes a manifest of the action task on the paper corpus:
// replay: live in the fake environment, task: act, the act prompt, and
// the acting baselines.
func actManifest(t *testing.T) string {
	t.Helper()
	corpus, _ := filepath.Abs("../../manifests/corpus/paper")
	prompt, _ := filepath.Abs("../../manifests/prompts/act.tmpl")
	text := `name: act-test
corpus: ` + corpus + `
prompts:
  - name: act
    path: ` + prompt + `
conditions: [normalized, code_only]
replicates: 2
seed: 11
temperature: 0
replay: live
environment: ` + fakeEnv + `
task: act
models:
  - name: stop
    backend: baseline
    model: always_stop
  - name: replay
    backend: baseline
    model: naive_retry
  - name: repair
    backend: baseline
    model: schema_repair
`
	file := filepath.Join(t.TempDir(), "act.yaml")
	os.WriteFile(file, []byte(text), 0o644)
	return file
}

// TestRunAct: stress run of an act manifest on the fake environment:
// the counts table has InvAct, each call line records the task and the
// action, analyze recomputes the table and prints label against action,
// and a label prompt is refused for task act.
func TestRunAct(t *testing.T) {
	file := actManifest(t)
	dir := filepath.Join(t.TempDir(), "bundle")
	out, log, err := runCmd(t, "run", "-quiet", "-out", dir, file)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "run-act.golden", out)
	an, _, err := runCmd(t, "analyze", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(an, out) {
		t.Errorf("analyze's table differs from run's:\n%s\nvs\n%s", an, out)
	}
	if !strings.Contains(an, "Label against action") || !strings.Contains(an, "S+R+") {
		t.Errorf("analyze lacks the label-against-action table:\n%s", an)
	}
	f, err := os.Open(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	kinds := map[string]int{}
	for sc.Scan() {
		var c results.Call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.Task != "act" {
			t.Fatalf("line without task act: %.200s", sc.Bytes())
		}
		if a := c.Action; a != nil {
			kinds[c.Key.Model+"/"+a.Channel+"/"+a.Invalid]++
		}
	}
	// The oracle's calls on the fake server are refused (its tools are
	// "write" and "read", none the paper's failing calls name), naive_retry
	// repeats the failing call.
	if kinds["replay/replay/"] == 0 || kinds["stop/"] != 0 {
		t.Errorf("actions %v", kinds)
	}
	// A prompt that does not show the tools is refused before any call.
	text, _ := os.ReadFile(file)
	label, _ := filepath.Abs("../../manifests/prompts/default.tmpl")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(string(text), "act.tmpl", filepath.Base(label), 1)), 0o644)
	_, _, err = runCmd(t, "run", "-quiet", "-out", filepath.Join(t.TempDir(), "b2"), bad)
	if err == nil || !strings.Contains(err.Error(), "task: act needs a \"user\" template that shows .Tools and .Call") {
		t.Errorf("a label prompt under task act: %v", err)
	}
}

// TestRenderAct: render -act shows the lab scenario's tools and failing
// call with the act prompt; an environment without scenarios to act on
// is refused.
func TestRenderAct(t *testing.T) {
	out, _, err := runCmd(t, "render", "-act", "-scenario", "X31", "-condition", "normalized")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"The server offers these tools:\n[", `"name": "create_order"`, "The agent called:\n{\n  \"tool\": \"create_order\"", `"quantity": "two"`, `"code": -32602`} {
		if !strings.Contains(out, want) {
			t.Errorf("render -act lacks %q:\n%.3000s", want, out)
		}
	}
	_, _, err = runCmd(t, "render", "-act", "-scenario", "X31", "-condition", "prose")
	if err == nil || !strings.Contains(err.Error(), "has no record in corpus") {
		t.Errorf("render -act of a record-less scenario under prose: %v", err)
	}
	label, _ := filepath.Abs("../../manifests/prompts/default.tmpl")
	_, _, err = runCmd(t, "render", "-act", "-scenario", "X31", "-condition", "normalized", "-prompt", label)
	if err == nil || !strings.Contains(err.Error(), `task act needs a "user" template that shows .Tools and .Call`) {
		t.Errorf("render -act with a label prompt: %v", err)
	}
	_, _, err = runCmd(t, "render", "-act", "-scenario", "Q99", "-condition", "normalized")
	if err == nil || !strings.Contains(err.Error(), `environment lab: lab set core has no scenario "Q99"`) {
		t.Errorf("render -act of an unknown scenario: %v", err)
	}
	_, _, err = runCmd(t, "render", "-act", "-env", "stored", "-scenario", "X31", "-condition", "normalized")
	if err == nil || !strings.Contains(err.Error(), `render: flag -act: environment "stored" has no scenarios to act on (environments that do: [database lab mcp`) {
		t.Errorf("render -act in the stored environment: %v", err)
	}
	out, log, err := runCmd(t, "render", "-act", "-env", "database", "-scenario", "D07", "-condition", "normalized")
	if err != nil || !strings.Contains(out, "create_order") || !strings.Contains(out, "Input validation error") {
		t.Errorf("render -act on the database environment: %v\n%s%s", err, out, log)
	}
	_, _, err = runCmd(t, "render", "-env", "lab", "-scenario", "X31", "-condition", "normalized")
	if err == nil || !strings.Contains(err.Error(), "render: flags -env and -mcp-servers go with -act") {
		t.Errorf("render -env without -act: %v", err)
	}
}

// TestRunActReference: a manifest of reference scenarios with
// environment: mcp runs on the reference servers (mcpenv), one per
// decision, and render -act starts its scenarios there; without the
// servers installed it is refused, naming what to run.
func TestRunActReference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Node servers")
	}
	all, err := os.ReadFile("../../manifests/corpus/act-reference/RM.json")
	if err != nil {
		t.Fatal(err)
	}
	var recs []json.RawMessage
	if err := json.Unmarshal(all, &recs); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.json")
	two, _ := json.Marshal(recs[:3]) // R01 (invalid type), R02 (missing field), R03 (unknown tool)
	os.WriteFile(corpus, two, 0o644)
	file := filepath.Join(dir, "m.yaml")
	prompt := writeActManifest(t, file, corpus, "normalized", "repair", "schema_repair")
	// The label task runs on the reference servers too: each policy is
	// the scenario's canonical recovery (explicit_policy follows the
	// disclosed one, and recovers all three).
	label := strings.Replace(string(mustRead(t, file)), "task: act\n", "", 1)
	label = strings.Replace(label, prompt, strings.Replace(prompt, "act.tmpl", "default.tmpl", 1), 1)
	label = strings.Replace(strings.Replace(label, "[normalized]", "[structured]", 1), "model: schema_repair", "model: explicit_policy", 1)
	labelFile := filepath.Join(dir, "label.yaml")
	os.WriteFile(labelFile, []byte(label), 0o644)
	mods, _ := filepath.Abs("../../scripts/mcp-servers/node_modules/@modelcontextprotocol")
	t.Setenv(mcpenv.ServersVar, mods)
	// render -act starts the scenario in the manifest's environment, mcp.
	out, _, err := runCmd(t, "render", "-act", "-manifest", abs(t, "../../manifests/act-reference.yaml"), "-scenario", "R01", "-condition", "normalized")
	if err != nil || !strings.Contains(out, "The agent called:") {
		t.Errorf("render -act of R01 in the manifest's environment: %v\n%.2000s", err, out)
	}
	out, log, err := runCmd(t, "run", "-quiet", "-out", filepath.Join(dir, "bl"), labelFile)
	if f := strings.Fields(lastLine(out)); err != nil || len(f) < 15 || strings.Join(f[3:5], " ") != "3 3" || f[11] != "3" || f[12] != "0" {
		t.Fatalf("a label study on the reference servers: %v\n%s%s", err, out, log)
	}
	// Servers that never answer within env_timeout make error decisions
	// of their environment, reported apart; the run goes on.
	hang := t.TempDir()
	for _, s := range mcpenv.Servers {
		os.MkdirAll(filepath.Join(hang, s.Package, "dist"), 0o755)
		os.WriteFile(filepath.Join(hang, s.Package, "dist", "index.js"), []byte("setInterval(() => {}, 1000);\n"), 0o644)
	}
	t.Setenv(mcpenv.ServersVar, hang)
	slow := filepath.Join(dir, "slow.yaml")
	os.WriteFile(slow, []byte(string(mustRead(t, file))+"env_timeout: 1s\n"), 0o644)
	out, log, err = runCmd(t, "run", "-quiet", "-out", filepath.Join(dir, "slow"), slow)
	if f := strings.Fields(lastLine(out)); err != nil || f[len(f)-1] != "3" {
		t.Fatalf("servers that do not start: %v\n%s%s", err, out, log)
	}
	an, _, err := runCmd(t, "analyze", filepath.Join(dir, "slow"))
	if err != nil || !strings.Contains(an, "Environment failures (the live environment did not start, died or could not be read; excluded from the counts; stress run -resume DIR -retry-errors runs them again): 3") ||
		!strings.Contains(an, "R01/1 turn 0: environment of scenario R01: start: scenario R01: starting node") {
		t.Errorf("analyze of the failed environments: %v\n%s", err, an)
	}
	t.Setenv(mcpenv.ServersVar, t.TempDir())
	_, _, err = runCmd(t, "run", "-quiet", "-out", filepath.Join(dir, "b0"), file)
	if err == nil || !strings.Contains(err.Error(), "its corpus runs on the reference MCP servers") || !strings.Contains(err.Error(), "run scripts/test") {
		t.Fatalf("run without the servers: %v", err)
	}
	t.Setenv(mcpenv.ServersVar, mods)
	out, log, err = runCmd(t, "run", "-quiet", "-out", filepath.Join(dir, "b"), file)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	// The oracle coerces nothing it can for R01 (a string for an array) and
	// R02 (no default for the missing type), so it stops; for R03 it
	// finds create_entities (select_tool, Strict), whose required entities
	// add_entity's arguments lack, and the client refuses the call: 0
	// recovered, 1 invalid action, 3 calls (the failing ones).
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if f := strings.Fields(lines[len(lines)-1]); strings.Contains(out, "allow-proposed") || strings.Join(f[3:], " ") != "3 1 1 1 0 0 0 0 0 0 0 0 0 0 0 1 3 0 0 0" {
		t.Errorf("table:\n%s", out)
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRunExternalServer runs the action task against a server the
// harness did not start: the real server-everything over streamable
// HTTP, named by the manifest's external_server. Only read-only tools are
// called on it; the schema-repair baseline recovers three of the four
// scenarios (R15 get-sum, R18 get-structured-content, R19 an unknown tool
// for echo; R20's object message is not repaired). Bad values of the
// field are refused naming it.
func TestRunExternalServer(t *testing.T) {
	mods, _ := filepath.Abs("../../scripts/mcp-servers/node_modules/@modelcontextprotocol")
	server := filepath.Join(mods, "server-everything", "dist", "index.js")
	if _, err := os.Stat(server); err != nil {
		missing(t, "server-everything is not installed (scripts/test installs it): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	srv := exec.Command("node", server, "streamableHttp")
	srv.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	var srvLog strings.Builder
	srv.Stderr = &srvLog
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %d: %s", port, srvLog.String())
		}
	}
	dir := t.TempDir()
	var recs []json.RawMessage
	if err := json.Unmarshal(mustRead(t, "../../manifests/corpus/act-reference/RE.json"), &recs); err != nil {
		t.Fatal(err)
	}
	var keep []json.RawMessage
	for _, r := range recs {
		for _, id := range []string{`"R15"`, `"R18"`, `"R19"`, `"R20"`} {
			if strings.Contains(string(r[:40]), id) {
				keep = append(keep, r)
			}
		}
	}
	os.MkdirAll(filepath.Join(dir, "corpus"), 0o755)
	b, _ := json.Marshal(keep)
	os.WriteFile(filepath.Join(dir, "corpus", "RE.json"), b, 0o644)
	prompt, _ := filepath.Abs("../../manifests/prompts/act.tmpl")
	manifest := func(external string) string {
		file := filepath.Join(dir, fmt.Sprintf("m%d.yaml", len(external)))
		os.WriteFile(file, []byte(fmt.Sprintf(`name: external
corpus: corpus
prompts:
  - name: act
    path: %s
conditions: [normalized]
replicates: 1
seed: 1
temperature: 0
replay: live
environment: mcp
task: act
external_server: %s
models:
  - name: repair
    backend: baseline
    model: schema_repair
`, prompt, external)), 0o644)
		return file
	}
	t.Setenv(mcpenv.ServersVar, t.TempDir()) // no installed servers needed: none is started
	out, log, err := runCmd(t, "run", "-quiet", "-out", filepath.Join(dir, "b"), manifest(url))
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if f := strings.Fields(lines[len(lines)-1]); len(f) < 18 || f[3] != "4" || f[11] != "3" || f[12] != "0" || f[17] != "0" {
		t.Errorf("table:\n%s", out)
	}
	var rec struct {
		Manifest struct {
			ExternalServer string `json:"external_server"`
		} `json:"manifest"`
	}
	if err := json.Unmarshal(mustRead(t, filepath.Join(dir, "b", "manifest.json")), &rec); err != nil || rec.Manifest.ExternalServer != url {
		t.Errorf("manifest.json: external_server %q, %v", rec.Manifest.ExternalServer, err)
	}
	for _, c := range []struct {
		name     string
		url, say string
	}{
		{"refuses a URL with a password", "http://user:secret@127.0.0.1:1/mcp", "field external_server: the URL carries a password"},
		{"refuses an ftp URL", "ftp://127.0.0.1/mcp", "field external_server: want an http or https URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := runCmd(t, "run", "-quiet", "-out", filepath.Join(dir, "bad"), manifest(c.url))
			if err == nil || !strings.Contains(err.Error(), c.say) || strings.Contains(err.Error(), "secret") {
				t.Errorf("external_server %s: %v", c.url, err)
			}
		})
	}
}

// lastLine returns the last line of out, without its newline.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// writeActManifest writes to file a study of the action task on the
// reference servers: the corpus, the built-in act prompt (whose path it
// returns), the conditions (a YAML list's items) and baselines given as
// name, model pairs, one replicate.
func writeActManifest(t *testing.T, file, corpus, conditions string, baselines ...string) (prompt string) {
	t.Helper()
	prompt, err := filepath.Abs("../../manifests/prompts/act.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	var models strings.Builder
	for i := 0; i+1 < len(baselines); i += 2 {
		fmt.Fprintf(&models, "  - name: %s\n    backend: baseline\n    model: %s\n", baselines[i], baselines[i+1])
	}
	yaml := "name: act-ref\ncorpus: " + corpus + "\nprompts:\n  - name: act\n    path: " + prompt + "\nconditions: [" + conditions + "]\n" +
		"replicates: 1\nseed: 1\ntemperature: 0\nreplay: live\nenvironment: mcp\ntask: act\nmodels:\n" + models.String()
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return prompt
}
