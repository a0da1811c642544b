package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/env"
	"github.com/mcpstress/stress/env/labenv"
	"github.com/mcpstress/stress/internal/testserver/fakeenv"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
)

// liveFaults are the fake environment's faults in these tests: a
// transient fault failing twice, but a timeout after a committed write on
// S02, S03, S10 and S13, and a transient fault failing once whose success
// the model sees on S04 and S15.
var liveFaults = map[string]fakeenv.Spec{
	"S02": {Kind: fakeenv.Committed},
	"S03": {Kind: fakeenv.Committed},
	"S10": {Kind: fakeenv.Committed},
	"S13": {Kind: fakeenv.Committed},
	"S04": {Kind: fakeenv.Transient, Fails: 1, Continue: true},
	"S15": {Kind: fakeenv.Transient, Fails: 1, Continue: true},
}

// liveDefault is the fake environment's fault on the other scenarios.
var liveDefault = fakeenv.Spec{Kind: fakeenv.Transient, Fails: 2}

// fakeEnv is the name the fake environment is registered under in these
// tests.
const fakeEnv = "fake"

func init() {
	env.Register(fakeEnv, fakeenv.Backend(liveFaults, liveDefault))
}

func fakeEnvFor(m *manifests.Resolved) simulator.EnvFactory {
	return fakeenv.New(m.Corpus.Scenarios, liveFaults, liveDefault)
}

// liveManifest writes the built-in baselines manifest with replay: live
// and environment envName (and absolute paths to the built-in corpus and
// prompt).
func liveManifest(t *testing.T, envName string) string {
	t.Helper()
	b, err := os.ReadFile("../../manifests/baselines.yaml")
	if err != nil {
		t.Fatal(err)
	}
	corpus, _ := filepath.Abs("../../manifests/corpus/paper")
	prompt, _ := filepath.Abs("../../manifests/prompts/default.tmpl")
	text := strings.NewReplacer("corpus: corpus/paper", "corpus: "+corpus, "path: prompts/default.tmpl", "path: "+prompt, "replay_cap: 3", "replay_cap: 3\nreplay: live\nenvironment: "+envName).Replace(string(b))
	if !strings.Contains(text, "replay: live") {
		t.Fatal("edit did not apply")
	}
	file := filepath.Join(t.TempDir(), envName+".yaml")
	os.WriteFile(file, []byte(text), 0o644)
	return file
}

// TestRunLive: an unknown environment is refused, naming the manifest,
// the field and the registered environments; the lab refuses a live study
// of the paper corpus before anything is written; with a fake environment, stress run prints the counts
// table with the lab columns, and analyze recomputes it.
func TestRunLive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	unknown := liveManifest(t, "labb")
	_, _, err := runCmd(t, "run", "-quiet", "-out", dir, unknown)
	if err == nil || !strings.Contains(err.Error(), "manifest "+unknown+`: field environment: unknown environment "labb" (registered: `+fmt.Sprint(env.Names())+")") {
		t.Errorf("run in an unknown environment: %v", err)
	}
	_, _, err = runCmd(t, "run", "-quiet", "-out", dir, liveManifest(t, labenv.Name))
	if err == nil || !strings.Contains(err.Error(), `field environment: "lab" runs the recovery lab, and its corpus`) || !strings.Contains(err.Error(), "record S01, S02, S03, S04, S05 and 16 more: not a scenario of lab set core") {
		t.Fatalf("run of the paper corpus in the lab: %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a refused run wrote its bundle")
	}
	file := liveManifest(t, fakeEnv)
	out, log, err := runCmd(t, "run", "-quiet", "-out", dir, file)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "run-live.golden", out)
	an, _, err := runCmd(t, "analyze", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(an, out+"\n") || !strings.Contains(an, "Calls and LabMS are") {
		t.Errorf("analyze prints\n%s\nbut run printed\n%s", an, out)
	}
	// A resume of the finished live bundle needs the environment too, and
	// changes nothing.
	if _, _, err := runCmd(t, "run", "-quiet", "-resume", dir); err != nil {
		t.Fatal(err)
	}
	again, _, _ := runCmd(t, "analyze", dir)
	if again != an {
		t.Error("a resume changed the finished live bundle")
	}
}

// mockLiveBundle is mockBundle with replay: live in the fake environment.
func mockLiveBundle(t *testing.T, replicates int) string {
	t.Helper()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	m.Name = "mock-live"
	m.Replay = manifests.ReplayLive
	m.Models = []manifests.Model{{Name: "llama3.2-3b", Backend: "mock-test", Model: "steady"}, {Name: "qwen3.5-0.8b", Backend: "mock-test", Model: "erratic"}}
	m.Replicates = replicates
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	fixed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, _, err := plan.Run(context.Background(), runner.Options{Out: dir, RunID: "20260101T000000Z-mock-live", Now: func() time.Time { return fixed }, Env: fakeEnvFor(m)}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAnalyzeLiveGolden pins what analyze, analyze -json, compare and
// report print for a live bundle: the lab columns in the counts table,
// their rates, Wilson and bootstrap intervals, means, pairs and JSON.
func TestAnalyzeLiveGolden(t *testing.T) {
	dir := mockLiveBundle(t, 5)
	out, log, err := runCmd(t, "analyze", "-b", "4000", "-pair", "code_only,normalized,recovered", "-pair", "structured,prose,harm", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	golden(t, "analyze-live.golden", out)
	for _, s := range []string{"Recovered  Harm  Dup  WrongV  Collat  Loss  Incompl  InvAct  Calls  LabMS  Extra  Errors", "Label against action", "code_only − normalized    Recovered", "structured − prose        Harm"} {
		if !strings.Contains(out, s) {
			t.Errorf("analyze output lacks %q", s)
		}
	}
	js, _, err := runCmd(t, "analyze", "-json", "-b", "2000", "-seed", "7", "-pair", "code_only,normalized,recovered", dir)
	if err != nil {
		t.Fatal(err)
	}
	goldenJSON(t, "analyze-live-json.golden", js)
	var doc struct {
		Cells []map[string]json.RawMessage `json:"cells"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Cells {
		var n, labN int
		json.Unmarshal(c["n"], &n)
		json.Unmarshal(c["lab_n"], &labN)
		var wilson, boot map[string]json.RawMessage
		json.Unmarshal(c["wilson"], &wilson)
		json.Unmarshal(c["bootstrap"], &boot)
		if labN != n || wilson["recovered"] == nil || wilson["calls"] != nil || boot["lab_ms"] == nil {
			t.Errorf("cell %s: n %d, lab_n %d, wilson %v, bootstrap %v", c["model"], n, labN, wilson, boot)
		}
	}
	cmp, _, err := runCmd(t, "compare", "-b", "200", "-column", "recovered,harm", dir, dir)
	if err != nil || !strings.Contains(cmp, "Recovered") || !strings.Contains(cmp, "Harm") {
		t.Errorf("compare on the lab columns: %v\n%s", err, cmp)
	}
	if _, _, err := runCmd(t, "report", "-b", "2000", "-pair", "code_only,normalized,recovered", dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report-live.md.golden", sha12.ReplaceAllString(string(md), "sha256 …"))
	if !strings.Contains(string(md), "| Recovered | Harm | Dup | WrongV | Collat | Loss | Incompl | InvAct | Calls | LabMS |") || !strings.Contains(string(md), "## Label against action") || !strings.Contains(string(md), "Live replay: every policy") {
		t.Error("the report lacks the lab columns")
	}
}

// TestRenderLive: render shows live replay messages carrying a given
// observation, annotated when it is the recorded failure again.
func TestRenderLive(t *testing.T) {
	tmp := t.TempDir()
	done := filepath.Join(tmp, "done.json")
	os.WriteFile(done, fakeenv.Success, 0o644)
	out, _, err := runCmd(t, "render", "-scenario", "S07", "-condition", "code_only", "-replays", "2", "-observation", done, "-policy", "retry_later")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "--- assistant ---\n{\"operation_status\": \"failed\", \"recovery_policy\": \"retry_later\"}\n--- user ---\nThe agent carried out retry_later (replay 2). The call it made returned:\n{\n  \"result\": {") ||
		strings.Count(out, "Error code: ") != 1 {
		t.Errorf("render -observation (success):\n%s", out)
	}
	m, _ := manifests.LoadBuiltin(manifests.DefaultName)
	var s7 json.RawMessage
	for _, s := range m.Corpus.Scenarios {
		if s.ID == "S07" {
			s7 = s.Observation
		}
	}
	same := filepath.Join(tmp, "same.json")
	os.WriteFile(same, s7, 0o644)
	out, _, err = runCmd(t, "render", "-scenario", "S07", "-condition", "code_only", "-replays", "1", "-observation", same)
	if err != nil || strings.Count(out, "Error code: ") != 2 || !strings.Contains(out, "The agent carried out retry_now (replay 1)") {
		t.Errorf("render -observation (the same failure): %v\n%s", err, out)
	}
	for _, args := range [][]string{{"-policy", "stop_or_escalate"}, {"-policy", "reboot"}} {
		t.Run(argsName(args), func(t *testing.T) {
			if _, _, err := runCmd(t, append([]string{"render", "-scenario", "S07", "-condition", "code_only", "-replays", "1", "-observation", same}, args...)...); err == nil || !strings.Contains(err.Error(), "flag -policy") {
				t.Errorf("render %v: %v", args, err)
			}
		})
	}
	bad := filepath.Join(tmp, "bad.json")
	os.WriteFile(bad, []byte("{"), 0o644)
	if _, _, err := runCmd(t, "render", "-scenario", "S07", "-condition", "code_only", "-replays", "1", "-observation", bad); err == nil || !strings.Contains(err.Error(), "flag -observation") {
		t.Errorf("render with invalid JSON: %v", err)
	}
}

// TestShippedEnvironments: every shipped manifest's environment is one
// the command registers, and it opens on the manifest's corpus: a factory
// for the live ones, none for the others (the README's table pins which
// each names).
func TestShippedEnvironments(t *testing.T) {
	for _, name := range manifests.BuiltinNames() {
		m, err := manifests.LoadBuiltin(name)
		if err != nil {
			t.Fatal(err)
		}
		// Note: Servers names a directory, so the reference servers are
		// not looked for; none is started.
		f, err := env.Open(m, env.Options{Servers: t.TempDir()})
		if err != nil || (f != nil) != m.Live() {
			t.Errorf("%s: environment %s opens %T, %v", name, m.Env(), f, err)
		}
		if c, ok := f.(io.Closer); ok {
			c.Close()
		}
	}
}
