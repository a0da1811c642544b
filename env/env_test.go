package env_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpstress/stress/env"
	"github.com/mcpstress/stress/env/labenv"
	"github.com/mcpstress/stress/env/mcpenv"
	"github.com/mcpstress/stress/internal/testserver/fakeenv"
	"github.com/mcpstress/stress/manifests"
)

func init() {
	env.Register("fake", fakeenv.Backend(nil, fakeenv.Spec{Kind: fakeenv.Transient, Fails: 1}))
}

// manifest writes a manifest on the shipped corpus (a directory of
// manifests/corpus) with the lines extra, and loads it.
func manifest(t *testing.T, corpus, extra string) *manifests.Resolved {
	t.Helper()
	dir, _ := filepath.Abs("../manifests")
	return manifestOn(t, filepath.Join(dir, "corpus", corpus), extra)
}

// manifestOn is manifest on the corpus at path.
func manifestOn(t *testing.T, path, extra string) *manifests.Resolved {
	t.Helper()
	dir, _ := filepath.Abs("../manifests")
	text := "name: m\ncorpus: " + path + "\nprompts:\n  - name: default\n    path: " + filepath.Join(dir, "prompts", "default.tmpl") +
		"\nconditions: [normalized]\nreplicates: 1\nseed: 1\ntemperature: 0\n" + extra + "models:\n  - name: stop\n    backend: baseline\n    model: always_stop\n"
	file := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := manifests.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestNames: the registry lists every environment registered, the
// adapters' by their init and the test's fake, sorted.
func TestNames(t *testing.T) {
	if got, want := env.Names(), []string{"fake", labenv.Name, mcpenv.Name, manifests.DefaultEnvironment}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if _, err := env.Lookup("lab"); err != nil {
		t.Error(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second registration of a name did not panic")
		}
	}()
	env.Register("lab", env.Backend{})
}

// TestOpenErrors: an environment the registry lacks, a live study that
// names none or one that runs none, and a corpus the environment does
// not have are refused, naming the manifest file and the field (and the
// registered names, or the records at fault).
func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		name, corpus, extra string
		want                []string
	}{
		{"unknown", "paper", "replay: live\nenvironment: labb\n", []string{`field environment: unknown environment "labb" (registered: [fake lab mcp stored])`}},
		{"none named", "paper", "replay: live\n", []string{`field environment: replay: "live" needs an environment, and the manifest names none (the default, "stored", runs none): name one of [fake lab mcp]`}},
		{"stored", "paper", "replay: live\nenvironment: stored\n", []string{`field environment: "stored" runs no environment, and replay: "live" needs one: name one of [fake lab mcp]`}},
		{"lab on the paper corpus", "paper", "replay: live\nenvironment: lab\n", []string{
			`field environment: "lab" runs the recovery lab, and its corpus `,
			"record S01, S02, S03, S04, S05 and 16 more: not a scenario of lab set core (a live study runs only lab records, such as corpus/lab)"}},
		{"mcp on the lab corpus", "lab", "replay: live\nenvironment: mcp\n", []string{
			`field environment: "mcp" runs the reference MCP servers, and its corpus `,
			"record X01, X02, X03, X04, X05 and 35 more: not a scenario of mcpenv set reference"}},
		{"lab with an external server", "lab", "replay: live\nenvironment: lab\ntask: act\nexternal_server: http://127.0.0.1:1/mcp\n", []string{
			`field external_server: environment "lab" runs the lab in process and connects to no server`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := manifest(t, tc.corpus, tc.extra)
			f, err := env.Open(m, env.Options{})
			if err == nil {
				t.Fatalf("opened %T", f)
			}
			if !strings.HasPrefix(err.Error(), "manifest "+m.Source+": field ") {
				t.Errorf("error does not name the manifest and the field first: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestOpen: stored replay opens no environment; a live one opens the
// environment its manifest names, which a test may register (the fake).
func TestOpen(t *testing.T) {
	f, err := env.Open(manifest(t, "paper", ""), env.Options{})
	if err != nil || f != nil {
		t.Errorf("stored replay: %v, %v; want no environment", f, err)
	}
	f, err = env.Open(manifest(t, "paper", "replay: live\nenvironment: fake\n"), env.Options{})
	if _, ok := f.(*fakeenv.Factory); err != nil || !ok {
		t.Errorf("environment: fake: %T, %v", f, err)
	}
	f, err = env.Open(manifest(t, "lab", "replay: live\nenvironment: lab\n"), env.Options{})
	if err != nil || f == nil {
		t.Errorf("environment: lab on the lab corpus: %v, %v", f, err)
	}
}

// TestAct: the action task outside a study starts the scenario of the
// environment named, else the manifest's, else the lab; one without
// scenarios to act on, an unknown one and an unknown scenario are refused.
func TestAct(t *testing.T) {
	ctx := context.Background()
	e, obs, err := env.Act(ctx, nil, "", "X31", env.Options{})
	if err != nil || e.First().Tool != "create_order" || !strings.Contains(string(obs), "-32602") {
		t.Fatalf("X31 in the default environment: %v, %s", err, obs)
	}
	_, _, err = env.Act(ctx, manifest(t, "paper", ""), "", "Q99", env.Options{})
	if err == nil || err.Error() != `environment lab: lab set core has no scenario "Q99"` {
		t.Errorf("an unknown scenario: %v", err)
	}
	_, _, err = env.Act(ctx, manifest(t, "act-reference", "replay: live\nenvironment: mcp\n"), "", "X31", env.Options{Servers: t.TempDir()})
	if err == nil || err.Error() != `environment mcp: mcpenv set reference has no scenario "X31"` {
		t.Errorf("a lab scenario in the manifest's environment mcp: %v", err)
	}
	_, _, err = env.Act(ctx, nil, "stored", "X31", env.Options{})
	if err == nil || err.Error() != `environment "stored" has no scenarios to act on (environments that do: [lab mcp])` {
		t.Errorf("stored: %v", err)
	}
	_, _, err = env.Act(ctx, nil, "labb", "X31", env.Options{})
	if err == nil || err.Error() != `unknown environment "labb" (registered: [fake lab mcp stored])` {
		t.Errorf("an unknown environment: %v", err)
	}
}

// TestOpenRefusesAnotherProvenSet: a reference record whose proven
// preferred set is not its scenario's (the set Proven credits) is
// refused, naming the record and the field.
func TestOpenRefusesAnotherProvenSet(t *testing.T) {
	b, err := os.ReadFile("../manifests/corpus/act-reference/RE.json")
	if err != nil {
		t.Fatal(err)
	}
	old := "\"preferred_policies\": [\n      \"revise_arguments\"\n    ],"
	edited := strings.Replace(string(b), old, "\"preferred_policies\": [\"revise_arguments\", \"stop_or_escalate\"],", 1)
	if edited == string(b) {
		t.Fatal("test edit did not apply")
	}
	dir := filepath.Join(t.TempDir(), "corpus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "RE.json"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = env.Open(manifestOn(t, dir, "replay: live\nenvironment: mcp\n"), env.Options{})
	if want := "record R15: field preferred_policies is [revise_arguments stop_or_escalate], but reference scenario R15 has [revise_arguments]"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}
