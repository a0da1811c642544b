package ollama_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/internal/testserver/ollamatest"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/ollama"
	"github.com/mcpstress/stress/models/transport"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// shared is one real Ollama server with the tiny model, for the tests of
// this file (starting one costs a few seconds).
var shared struct {
	once   sync.Once
	srv    *ollamatest.Server
	model  string
	digest string
	err    error
}

func server(t *testing.T) (*ollamatest.Server, string, string) {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "ollama-test-")
		if err != nil {
			shared.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		shared.srv, shared.err = ollamatest.StartServer(ctx, dir)
		if shared.err != nil {
			return
		}
		var info ollamatest.ModelInfo
		info, shared.err = shared.srv.CreateTinyModel(ctx, "")
		shared.model, shared.digest = info.Name, info.Digest
	})
	if shared.err != nil {
		t.Fatalf("real Ollama server: %v", shared.err)
	}
	return shared.srv, shared.model, shared.digest
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Stop()
		os.RemoveAll(shared.srv.Dir)
	}
	os.Exit(code)
}

// study builds a small study on the paper corpus against the real server:
// conditions x 21 scenarios x replicates, answers constrained by the
// answer's JSON schema.
func smallStudy(t *testing.T, host, model, digest string, seed uint64, conds []study.Condition, reps int) *manifests.Resolved {
	t.Helper()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	m.Name = "ollama-e2e"
	m.Conditions = conds
	m.Replicates = reps
	m.Seed = seed
	m.Models = []manifests.Model{{Name: "tiny", Backend: ollama.Backend, Model: model, Digest: digest, Host: host,
		Format: "schema", Options: map[string]any{"num_predict": 48}, SeedCheck: "error"}}
	return m
}

func runStudy(t *testing.T, m *manifests.Resolved) (string, *results.Summary) {
	t.Helper()
	dir, sum, _ := runStudyLog(t, m)
	return dir, sum
}

// runStudyLog is runStudy, also returning what the run logged.
func runStudyLog(t *testing.T, m *manifests.Resolved) (string, *results.Summary, string) {
	t.Helper()
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	dir, sum, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "run"), Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	return dir, sum, log.String()
}

func TestVerifyDigest(t *testing.T) {
	srv, model, digest := server(t)
	if len(digest) != 64 {
		t.Fatalf("server digest %q is not a full sha256", digest)
	}
	m := smallStudy(t, srv.Host, model, digest, 1, []study.Condition{study.Normalized}, 1)
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	checks, err := plan.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f := checks["tiny"].Facts
	if f["digest"] != digest || f["server_version"] != ollamatest.WantVersion || f["family"] != "llama" || f["pinned"] != true {
		t.Errorf("facts %v", f)
	}
	all, err := ollama.List(context.Background(), srv.Host)
	if err != nil || len(all) == 0 || all[0].Digest != digest {
		t.Errorf("List: %v %+v", err, all)
	}

	// A wrong digest stops the run before any call, listing both digests,
	// and writes no bundle.
	wrong := strings.Repeat("ab", 32)
	m.Models[0].Digest = "sha256:" + wrong
	plan, err = runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	chatsBefore := strings.Count(srv.Log(), "/api/chat")
	out := filepath.Join(t.TempDir(), "run")
	_, _, err = plan.Run(context.Background(), runner.Options{Out: out})
	if err == nil || !strings.Contains(err.Error(), "expects "+wrong) || !strings.Contains(err.Error(), "has "+digest) || !strings.Contains(err.Error(), `"tiny"`) {
		t.Fatalf("error %v, want a digest mismatch naming the model, the expected and the actual digest", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run wrote %s", out)
	}
	if n := strings.Count(srv.Log(), "/api/chat"); n != chatsBefore {
		t.Errorf("the refused run made %d chat calls", n-chatsBefore)
	}
	// A missing model is refused too, with the command that pulls it onto
	// that server.
	m.Models[0].Model, m.Models[0].Digest = "no-such-model", digest
	plan, _ = runner.Prepare(m, false)
	want := `model "tiny" (no-such-model) is not on the server at ` + srv.Host + `: pull it with "OLLAMA_HOST=` + srv.Host + ` ollama pull no-such-model"`
	if _, err := plan.Verify(context.Background()); err == nil || err.Error() != want {
		t.Errorf("missing model: %v, want %s", err, want)
	}

	// A name the server itself resolves to the model (any case, the
	// default namespace, host or tag written out) finds it, as chat does;
	// another tag does not.
	base := strings.TrimSuffix(model, ":latest")
	for _, name := range []string{base, strings.ToUpper(base), base + ":LATEST", "library/" + base, "registry.ollama.ai/library/" + base + ":latest", base + ":q4", "other/" + base} {
		t.Run(fmt.Sprint(name), func(t *testing.T) {
			mm, err := ollama.New(models.Spec{Name: "n", Model: name, Host: srv.Host}, transport.Options{})
			if err != nil {
				t.Fatal(err)
			}
			in, err := mm.Resolve(context.Background())
			found := !strings.Contains(name, "q4") && !strings.HasPrefix(name, "other/")
			if found && (err != nil || in.Digest != digest) || !found && (err == nil || !strings.Contains(err.Error(), "is not on the server")) {
				t.Errorf("Resolve %q: %+v, %v (want found: %v)", name, in, err, found)
			}
		})
	}
}

// TestStudy runs 2 conditions x 21 scenarios x 2 replicates against the
// real server with the answer schema as format.
//
// What must match between runs with the same study seed: the answer text
// of every call (the server is deterministic for a fixed seed on this CPU
// runner). What need not: the raw bodies, which carry created_at and
// durations; their sha256 is checked against the stored bytes instead.
func TestStudy(t *testing.T) {
	srv, model, digest := server(t)
	conds := []study.Condition{study.Normalized, study.Structured}
	dir, sum := runStudy(t, smallStudy(t, srv.Host, model, digest, 20260819, conds, 2))
	if sum.Decisions != 84 || sum.Errors != 0 {
		t.Fatalf("%d decisions, %d errors; want 84, 0", sum.Decisions, sum.Errors)
	}
	labels := map[string]int{}
	for _, c := range sum.Cells {
		if c.Count(simulator.Invalid) != 0 {
			t.Errorf("cell %+v: every schema-constrained answer must parse", c)
		}
	}
	calls := readCalls(t, dir)
	if len(calls) != sum.Calls {
		t.Fatalf("%d call lines, summary says %d", len(calls), sum.Calls)
	}
	for _, c := range calls {
		if len(c.Body) == 0 || c.BodySHA256 != results.SHA256(c.Body) {
			t.Fatalf("call %s/%d: body missing or sha256 mismatch", c.Key, c.Turn)
		}
		var body struct {
			Message struct{ Content string }
			Done    bool
		}
		if err := json.Unmarshal(c.Body, &body); err != nil || !body.Done || body.Message.Content != c.Response {
			t.Fatalf("call %s/%d: stored body does not hold the response: %v", c.Key, c.Turn, err)
		}
		if c.Meta["done_reason"] == nil || c.OutputTokens == 0 {
			t.Errorf("call %s/%d: meta %v, output tokens %d", c.Key, c.Turn, c.Meta, c.OutputTokens)
		}
		var a struct {
			RecoveryPolicy string `json:"recovery_policy"`
		}
		json.Unmarshal([]byte(c.Response), &a)
		labels[a.RecoveryPolicy]++
	}
	t.Logf("labels over %d calls: %v", len(calls), labels)
	b, _ := os.ReadFile(filepath.Join(dir, results.ManifestFile))
	if !bytes.Contains(b, []byte(`"seed_honoured": true`)) || !bytes.Contains(b, []byte(digest)) {
		t.Errorf("manifest.json lacks the seed check or the digest")
	}

	// Same seed: identical answers. Different study seed: different ones.
	dir2, _ := runStudy(t, smallStudy(t, srv.Host, model, digest, 20260819, conds, 2))
	if a, b := responses(readCalls(t, dir)), responses(readCalls(t, dir2)); a != b {
		t.Error("two runs with the same seeds gave different answers")
	}
	dir3, _ := runStudy(t, smallStudy(t, srv.Host, model, digest, 7, conds, 2))
	if responses(readCalls(t, dir)) == responses(readCalls(t, dir3)) {
		t.Error("changing the study seed changed no answer")
	}
}

func readCalls(t *testing.T, dir string) []results.Call {
	t.Helper()
	calls, err := results.ReadCalls(filepath.Join(dir, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

// responses joins every call's key, turn and answer text.
func responses(calls []results.Call) string {
	var b strings.Builder
	for _, c := range calls {
		b.WriteString(c.Key.String() + "/" + string(rune('0'+c.Turn)) + "=" + c.Response + "\n")
	}
	return b.String()
}

// TestServerKilled kills a real server mid-run: the remaining calls fail as
// transport events and error decisions, never as answers.
func TestServerKilled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := ollamatest.StartServer(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	info, err := srv.CreateTinyModel(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	m := smallStudy(t, srv.Host, info.Name, info.Digest, 3, []study.Condition{study.Normalized}, 2)
	m.Models[0].SeedCheck = "off"
	m.Models[0].Transport = manifests.TransportSpec{Attempts: 2, BackoffMS: 5, BreakerAfter: 1000}
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	killer := &killAfter{Model: nil, n: 10, kill: srv.Stop}
	plan.Wrap(func(mm models.Model) models.Model { killer.Model = mm; return killer })
	out, sum, err := plan.Run(ctx, runner.Options{Out: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors == 0 || sum.Decisions != 42 || sum.Decisions-sum.Errors < 5 {
		t.Fatalf("summary %+v: want error decisions after the kill and the first ones counted", sum)
	}
	f, _ := os.Open(filepath.Join(out, results.CallsFile))
	defer f.Close()
	rows, problems, err := analysis.Rescore(f, "calls.jsonl")
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	events := 0
	for _, c := range readCalls(t, out) {
		if c.Error != "" {
			events += len(c.Events)
			if len(c.Events) != 2 || c.Events[0].Kind != "connect" || c.Response != "" {
				t.Errorf("failed call %s: events %+v response %q; want two connect events and no answer", c.Key, c.Events, c.Response)
			}
		}
	}
	for _, r := range rows {
		if r.Status == results.StatusError && (r.Outcome.Of(simulator.Invalid) || r.FinalLabel != "") {
			t.Errorf("error decision %s counted as an answer: %+v", r.Key(), r)
		}
	}
	cells := results.Count(rows)
	if cells[0].Count(simulator.Invalid) != 0 || cells[0].Errors != sum.Errors || cells[0].N+cells[0].Errors != 42 {
		t.Errorf("cell %+v: errors must be excluded from N and never invalid", cells[0])
	}
	t.Logf("%d error decisions, %d transport events", sum.Errors, events)
}

// killAfter passes calls through and kills the server after n calls.
type killAfter struct {
	models.Model
	n    int
	kill func()
	mu   sync.Mutex
}

func (k *killAfter) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	k.mu.Lock()
	k.n--
	if k.n == 0 {
		k.kill()
	}
	k.mu.Unlock()
	return k.Model.Generate(ctx, req)
}

// TestTokenLimitNote: on the real server, answers cut at num_predict
// (done_reason "length") are invalid, and the run ends with a note that
// counts them and names the option to raise.
func TestTokenLimitNote(t *testing.T) {
	srv, model, digest := server(t)
	m := smallStudy(t, srv.Host, model, digest, 7, []study.Condition{study.Normalized}, 1)
	m.Models[0].Options = map[string]any{"num_predict": 3}
	m.Models[0].SeedCheck = "off"
	dir, sum, log := runStudyLog(t, m)
	calls := readCalls(t, dir)
	want := fmt.Sprintf("note: %d answers of this run ended early, scored as their text reads (an invalid label, most often): %d at the token limit (raise the model's max_tokens or num_predict)", len(calls), len(calls))
	if !strings.Contains(log, want) {
		t.Errorf("log\n%s\nwant the line\n%s", log, want)
	}
	for _, c := range sum.Cells {
		if c.Count(simulator.Invalid) != c.N {
			t.Errorf("cell %+v: every answer cut at 3 tokens must be invalid", c)
		}
	}
}
