package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/mcpstress/stress/internal/input"
)

func TestBuiltinManifests(t *testing.T) {
	m, err := LoadBuiltin("baselines.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Models) != 3 || len(m.Conditions) != 4 || m.Replicates != 5 || len(m.Corpus.Scenarios) != 21 || m.Cap() != 3 {
		t.Errorf("baselines.yaml: %d models, %d conditions, %d replicates, %d scenarios, cap %d; want 3, 4, 5, 21, 3",
			len(m.Models), len(m.Conditions), m.Replicates, len(m.Corpus.Scenarios), m.Cap())
	}
	if len(m.Corpus.Files) != 10 || m.Corpus.Files[0].Path != "corpus/paper/P01.json" || len(m.Corpus.Files[0].SHA256) != 64 {
		t.Errorf("corpus files: %+v", m.Corpus.Files)
	}
	p, err := LoadBuiltin("paper.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := len(p.Models) * len(p.Conditions) * len(p.Corpus.Scenarios) * p.Replicates
	if n != 840 || p.Temperature != 0.7 {
		t.Errorf("paper.yaml: %d decisions at temperature %v, want 840 at 0.7", n, p.Temperature)
	}
	for _, md := range p.Models {
		if md.Backend != "ollama" || md.Digest != "" {
			t.Errorf("paper.yaml model %+v: want backend ollama with the digest left to the user", md)
		}
	}
}

// TestDiskEqualsBuiltin loads the shipped manifest from disk and checks it
// resolves to the same files as the embedded copy.
func TestDiskEqualsBuiltin(t *testing.T) {
	disk, err := Load("baselines.yaml")
	if err != nil {
		t.Fatal(err)
	}
	emb, err := LoadBuiltin("baselines.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if disk.SHA256 != emb.SHA256 || disk.Prompts[0].SHA256 != emb.Prompts[0].SHA256 || len(disk.Corpus.Files) != len(emb.Corpus.Files) {
		t.Fatal("disk and embedded manifests differ")
	}
	for i := range disk.Corpus.Files {
		if disk.Corpus.Files[i] != emb.Corpus.Files[i] {
			t.Errorf("corpus file %d: disk %+v, embedded %+v", i, disk.Corpus.Files[i], emb.Corpus.Files[i])
		}
	}
}

// TestRelativePaths checks that corpus and prompt paths resolve against the
// manifest's directory, wherever the command runs.
func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	abs, _ := filepath.Abs(".")
	text := strings.NewReplacer("corpus: corpus/paper", "corpus: "+abs+"/corpus/paper",
		"path: prompts/default.tmpl", "path: ../p.tmpl").Replace(readFile(t, "baselines.yaml"))
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "p.tmpl"), []byte(readFile(t, "prompts/default.tmpl")), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "m.yaml"), []byte(text), 0o644)
	m, err := Load(filepath.Join(dir, "sub", "m.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Corpus.Scenarios) != 21 || !strings.Contains(m.Prompts[0].Text, `define "system"`) {
		t.Error("relative paths did not resolve")
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTextFieldsAsWritten: a text field whose unquoted value YAML reads
// as the same text loads (12, yes), as does a quoted one; whole numbers
// keep a leading zero's decimal reading.
func TestTextFieldsAsWritten(t *testing.T) {
	good := readFile(t, "baselines.yaml")
	for _, tc := range []struct{ old, new, want string }{
		{"name: code_registry", "name: 12", "12"},
		{"name: code_registry", "name: yes", "yes"},
		{"name: code_registry", `name: "1.10"`, "1.10"},
		{"name: code_registry", "name: &n code_registry", "code_registry"},
	} {
		t.Run(tc.new, func(t *testing.T) {
			m, err := Parse("m.yaml", []byte(strings.Replace(good, tc.old, tc.new, 1)))
			if err != nil {
				t.Errorf("%s: %v", tc.new, err)
			} else if m.Models[1].Name != tc.want {
				t.Errorf("%s: models[1].name %q; want %q", tc.new, m.Models[1].Name, tc.want)
			}
		})
	}
	if m, err := Parse("m.yaml", []byte(strings.Replace(good, "seed: 20260819", "seed: 010", 1))); err != nil || m.Seed != 10 {
		t.Errorf("seed: 010: %v; want the seed 10", err)
	}
}

func TestParseRejects(t *testing.T) {
	good := readFile(t, "baselines.yaml")
	for _, tc := range []struct{ name, old, new, want string }{
		{"unknown field", "replicates: 5", "replicates: 5\nreplicas: 4", `unknown field "replicas"`},
		{"unknown model field", "    model: always_stop", "    model: always_stop\n    tempreature: 1", `unknown field "tempreature"`},
		{"replicates", "replicates: 5", "replicates: 0", "field replicates: want 1 to 100000, got 0"},
		{"temperature", "temperature: 0.7", "temperature: 7", "field temperature: want 0 to 2, got 7"},
		{"replay cap", "replay_cap: 3", "replay_cap: 11", "field replay_cap: want 0 to 10, got 11"},
		{"replay", "replay_cap: 3", "replay_cap: 3\nreplay: replayed", `field replay: want "stored" (the default) or "live", got "replayed"`},
		{"condition", "conditions: [normalized,", "conditions: [normalised,", `field conditions[0]: unknown condition "normalised"`},
		{"duplicate condition", "code_only, structured", "code_only, code_only", `field conditions[2]: duplicate condition "code_only"`},
		{"no corpus", "corpus: corpus/paper", "corpus: ''", "field corpus: missing"},
		{"duplicate model", "name: code_registry", "name: always_stop", `field models[1].name: duplicate model name "always_stop"`},
		{"no backend", "    backend: baseline\n    model: always_stop", "    model: always_stop", "field models[0].backend: missing"},
		{"digest", "    model: always_stop", "    model: always_stop\n    digest: abc", `field models[0].digest: want 64 lower-case hex digits`},
		{"replicates 2.5", "replicates: 5", "replicates: 2.5", "line 10: field replicates: want a whole number, got 2.5"},
		{"replicates quoted", "replicates: 5", `replicates: "5"`, `field replicates: want a whole number, got "5"`},
		{"seed past 2^64", "seed: 20260819", "seed: 18446744073709551616", "field seed: the whole number 18446744073709551616 is out of range"},
		{"seed a float", "seed: 20260819", "seed: 7.9", "field seed: want a whole number, got 7.9"},
		{"replay cap 2.5", "replay_cap: 3", "replay_cap: 2.5", "field replay_cap: want a whole number, got 2.5"},
		{"parallel 1.5", "    model: always_stop", "    model: always_stop\n    parallel: 1.5", "line 18: field models[0].parallel: want a whole number, got 1.5"},
		{"temperature NaN", "temperature: 0.7", "temperature: .nan", "field temperature: want 0 to 2, got NaN"},
		{"backoff infinite", "    model: always_stop", "    model: always_stop\n    transport: {backoff_ms: .inf}", "backoff_ms: want 0 to 86400000 (a day), got +Inf"},
		{"name a number", "name: code_registry", "name: 1.10", `line 18: field models[1].name: 1.10 is read as "1.1" (YAML takes it for a number or a boolean); write it in quotes: "1.10"`},
		{"name a boolean", "name: code_registry", "name: True", `field models[1].name: True is read as "true"`},
		{"name hex", "name: code_registry", "name: 0x1F", `field models[1].name: 0x1F is read as "31"`},
		{"two documents", "replicates: 5", "replicates: 5\n---\nname: second", "2 YAML documents (separated by ---); a manifest is one"},
		{"short digest", "    model: always_stop", "    model: always_stop\n    digest: 8fa0adea92b4", `field models[0].digest: want 64 lower-case hex digits, optionally after sha256:, got "8fa0adea92b4" (ollama list shows only the first 12 digits; stress models lists the whole digest)`},
		{"format", "    model: always_stop", "    model: always_stop\n    format: xml", `field models[0].format: want "", "json", "schema" (the answer's JSON schema) or a JSON schema object, got "xml"`},
		{"environment without live", "replay_cap: 3", "replay_cap: 3\nenvironment: lab", `field environment: "lab" needs replay: "live" (stored replay runs no environment)`},
		{"environment name", "replay_cap: 3", "replay_cap: 3\nreplay: live\nenvironment: \"in process\"", `field environment: want the name of a registered environment (letters, digits, _ . : -), got "in process"`},
		{"protocol version unknown", "replay_cap: 3", "replay_cap: 3\nreplay: live\nenvironment: mcp\nprotocol_version: 2025-01-01", `field protocol_version: want one of 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, got "2025-01-01"`},
		{"protocol version on the lab", "replay_cap: 3", "replay_cap: 3\nreplay: live\nenvironment: lab\nprotocol_version: 2025-06-18", `field protocol_version: only environments mcp and database speak MCP to their servers (environment lab runs without a protocol)`},
		{"task", "replay_cap: 3", "replay_cap: 3\ntask: fix", `field task: want "label" (the default) or "act", got "fix"`},
		{"act without live", "replay_cap: 3", "replay_cap: 3\ntask: act", `field task: "act" needs replay: "live" (the calls run on a live environment), got replay ""`},
		{"tool_calls", "replay_cap: 3", "replay_cap: 3\nreplay: live\ntask: act\ntool_calls: json", `field tool_calls: want "text" (the default) or "native", got "json"`},
		{"native without act", "replay_cap: 3", "replay_cap: 3\ntool_calls: native", `field tool_calls: "native" needs task: "act"`},
		{"env_timeout without live", "replay_cap: 3", "replay_cap: 3\nenv_timeout: 20s", `field env_timeout: needs replay: "live"`},
		{"env_timeout not a duration", "replay_cap: 3", "replay_cap: 3\nreplay: live\nenv_timeout: soon", `field env_timeout: want a duration from 1s to 10m (such as 20s or 2m), got "soon"`},
		{"env_timeout too short", "replay_cap: 3", "replay_cap: 3\nreplay: live\nenv_timeout: 10ms", `field env_timeout: want a duration from 1s to 10m`},
		{"env_timeout too long", "replay_cap: 3", "replay_cap: 3\nreplay: live\nenv_timeout: 1h", `field env_timeout: want a duration from 1s to 10m`},
		{"comparison factor", "replicates: 5", "replicates: 5\ncomparisons: [\"dose:a,b\"]", `field comparisons[0]: "dose:a,b": unknown factor "dose"`},
		{"comparison form", "replicates: 5", "replicates: 5\ncomparisons: [normalized]", `field comparisons[0]: "normalized": want FACTOR:A,B[,COLUMN]`},
		{"comparison level", "replicates: 5", "replicates: 5\ncomparisons: [\"prompt:reason,default\"]", `field comparisons[0]: "prompt:reason,default": "reason" is not one of the manifest's prompts [default]`},
		{"comparison same", "replicates: 5", "replicates: 5\ncomparisons: [\"model:always_stop,always_stop\"]", `the two levels are the same`},
		{"bad yaml", "replicates: 5", "replicates: [5", "m.yaml"},
		{"wrong type", "replicates: 5", "replicates: five", "m.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(good, tc.old, tc.new, 1)
			if bad == good {
				t.Fatalf("%s: edit did not apply", tc.name)
			}
			_, err := Parse("m.yaml", []byte(bad))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "m.yaml") {
				t.Errorf("%s: error %v\n want it to name m.yaml and contain %q", tc.name, err, tc.want)
			}
		})
	}
	cm, err := Parse("m.yaml", []byte(strings.Replace(good, "replicates: 5", "replicates: 5\ncomparisons: [\"condition:prose,normalized,cover\", \"model:always_stop,code_registry\"]", 1)))
	if err != nil || len(cm.Comparisons) != 2 || cm.Comparisons[1] != "model:always_stop,code_registry" {
		t.Errorf("comparisons: %v, %v", cm, err)
	}
	m, err := Parse("m.yaml", []byte(strings.Replace(good, "    model: always_stop", "    model: always_stop\n    format: {type: object, required: [recovery_policy]}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Models[0].Format.(map[string]any); !ok {
		t.Errorf("a schema format decodes as %T, want map[string]any", m.Models[0].Format)
	}
	if m.Live() || m.Replay != "" {
		t.Errorf("a manifest without replay has replay %q, want stored", m.Replay)
	}
	if m.Act() || m.NativeTools() {
		t.Errorf("a manifest without task acts: %+v", m)
	}
	if m.Environment != "" || m.Env() != DefaultEnvironment {
		t.Errorf("a manifest without environment has environment %q (Env %q), want %q", m.Environment, m.Env(), DefaultEnvironment)
	}
	for _, text := range []string{"replay: live\nenvironment: lab", "environment: stored"} {
		t.Run(text, func(t *testing.T) {
			m, err := Parse("m.yaml", []byte(strings.Replace(good, "replay_cap: 3", "replay_cap: 3\n"+text, 1)))
			if want := strings.TrimPrefix(text[strings.Index(text, "environment: "):], "environment: "); err != nil || m.Env() != want {
				t.Errorf("%q parses as environment %q (%v), want %q", text, m.Env(), err, want)
			}
		})
	}
	act, err := Parse("m.yaml", []byte(strings.Replace(good, "replay_cap: 3", "replay_cap: 3\nreplay: live\ntask: act\ntool_calls: native", 1)))
	if err != nil || !act.Act() || !act.NativeTools() {
		t.Errorf("task: act parses as %+v (%v)", act, err)
	}
	for _, mode := range []string{"stored", "live"} {
		t.Run(mode, func(t *testing.T) {
			m, err := Parse("m.yaml", []byte(strings.Replace(good, "replay_cap: 3", "replay_cap: 3\nreplay: "+mode, 1)))
			if err != nil || m.Replay != mode || m.Live() != (mode == "live") {
				t.Errorf("replay: %s parses as %+v (%v)", mode, m, err)
			}
		})
	}
}

func TestLoadNamesMissingFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.yaml"), []byte(strings.Replace(readFile(t, "baselines.yaml"), "corpus/paper", "nowhere", 1)), 0o644)
	_, err := Load(filepath.Join(dir, "m.yaml"))
	if err == nil || !strings.Contains(err.Error(), "field corpus") || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("error %v, want it to name field corpus and the path", err)
	}
}

func TestWriteBaselines(t *testing.T) {
	dir := t.TempDir()
	corpus, _ := filepath.Abs("corpus/paper")
	file := filepath.Join(dir, "m.yaml")
	if err := WriteBaselines(file, "again", "line one\nline two", corpus, 2, 9); err != nil {
		t.Fatal(err)
	}
	m, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	text := readFile(t, file)
	if m.Name != "again" || m.Replicates != 2 || m.Seed != 9 || len(m.Models) != 3 || len(m.Corpus.Scenarios) != 21 ||
		!strings.HasPrefix(text, "# line one\n# line two\n") || m.Prompts[0].Text != readFile(t, "prompts/default.tmpl") {
		t.Errorf("written manifest %+v\n%s", m.Manifest, text)
	}
	if err := WriteBaselines(filepath.Join(dir, "bad.yaml"), "bad name!", "", corpus, 1, 1); err == nil {
		t.Error("an invalid manifest was written")
	}
}

// TestErrorsQuoteBounded checks that errors quote at most a few hundred
// printable bytes of the manifest, however large or binary it is.
func TestErrorsQuoteBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	junk := func(n int, alphabet string) []byte {
		b := make([]byte, n)
		for i := range b {
			if alphabet == "" {
				b[i] = byte(rng.Uint32())
			} else {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		return b
	}
	b64 := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	good := readFile(t, "baselines.yaml")
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"50 MB of junk on one line", junk(50<<20, b64), "m.yaml"},
		{"512 KiB of junk on one line", junk(512<<10, b64), "m.yaml"},
		{"binary garbage", junk(3000, ""), "m.yaml"},
		{"binary garbage, 512 KiB", junk(512<<10, ""), "m.yaml"},
		{"long name", []byte(strings.Replace(good, "name: baselines", "name: "+strings.Repeat("é", 256<<10), 1)), "field name"},
		{"control characters", []byte(strings.Replace(good, "name: baselines", `name: "a\u001b[2Jb\u0000"`, 1)), `field name: want letters, digits, _ . : -, got "a\x1b[2Jb\x00"`},
		{"long unknown field", []byte(strings.Replace(good, "replicates: 5", "replicates: 5\n"+strings.Repeat("z", 256<<10)+": 1", 1)), "unknown field"},
		{"long condition", []byte(strings.Replace(good, "conditions: [normalized,", "conditions: ["+strings.Repeat("n", 256<<10)+",", 1)), "field conditions[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("m.yaml", tc.data)
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
				return
			}
			msg := err.Error()
			if len(msg) > 1024 || !input.Printable(msg) || !strings.Contains(msg, tc.want) {
				t.Errorf("%s: error of %d bytes (printable %v), want under 1 KiB, printable, containing %q:\n%.2000q", tc.name, len(msg), input.Printable(msg), tc.want, msg)
			}
		})
	}
}

// TestErrorsNamePathsAsGiven checks that errors name the manifest, corpus
// and prompt files as the manifest (or the command line) wrote them:
// absolute paths keep their leading slash, relative ones stay relative.
func TestErrorsNamePathsAsGiven(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "c"), 0o755)
	os.WriteFile(filepath.Join(dir, "c", "bad.json"), []byte("[1, 2,]"), 0o644)
	os.WriteFile(filepath.Join(dir, "p.tmpl"), []byte(readFile(t, "prompts/default.tmpl")), 0o644)
	good := readFile(t, "baselines.yaml")
	paper, _ := filepath.Abs("corpus/paper")
	for _, tc := range []struct {
		name, corpus, prompt string
		want                 []string
	}{
		{"absolute corpus file", dir + "/c/bad.json", "p.tmpl", []string{"field corpus: " + dir + "/c/bad.json: malformed JSON"}},
		{"absolute corpus directory", dir + "/c", "p.tmpl", []string{"field corpus: " + dir + "/c/bad.json: malformed JSON"}},
		{"missing absolute corpus", dir + "/nowhere", "p.tmpl", []string{"field corpus: corpus " + dir + "/nowhere: ", dir + "/nowhere: no such file"}},
		{"relative corpus directory", "c", "p.tmpl", []string{"field corpus: c/bad.json: malformed JSON"}},
		{"missing relative corpus", "nowhere", "p.tmpl", []string{"field corpus: corpus nowhere: stat nowhere: no such file"}},
		{"missing absolute prompt", paper, dir + "/none.tmpl", []string{"field prompts[0].path: open " + dir + "/none.tmpl: no such file"}},
		{"missing relative prompt", paper, "../none.tmpl", []string{"field prompts[0].path: open ../none.tmpl: no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := strings.NewReplacer("corpus: corpus/paper", "corpus: "+tc.corpus, "path: prompts/default.tmpl", "path: "+tc.prompt).Replace(good)
			file := filepath.Join(dir, "m.yaml")
			os.WriteFile(file, []byte(m), 0o644)
			_, err := Load(file)
			if err == nil {
				t.Errorf("%s: loaded", tc.name)
				return
			}
			for _, w := range append(tc.want, "manifest "+file+": ") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error\n%v\ndoes not contain %q", tc.name, err, w)
				}
			}
			// The file system's root-relative names never show.
			if strings.Contains(err.Error(), " "+strings.TrimPrefix(dir, "/")) {
				t.Errorf("%s: error names a path without its leading /:\n%v", tc.name, err)
			}
		})
	}
	missing := filepath.Join(dir, "none.yaml")
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), "open "+missing+": no such file") {
		t.Errorf("missing manifest: %v", err)
	}
}

// utf16LE returns text in UTF-16 little-endian with a byte-order mark, as
// Windows editors save "Unicode" text.
func utf16LE(text string) []byte {
	out := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(text)) {
		out = append(out, byte(u), byte(u>>8))
	}
	return out
}

// TestEncodings checks that manifests, corpus files and prompts load with
// a UTF-8 byte-order mark, and that UTF-16 is refused naming the file.
func TestEncodings(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "c"), 0o755)
	corpus, prompt := readFile(t, "corpus/paper/P01.json"), readFile(t, "prompts/default.tmpl")
	manifest := strings.NewReplacer("corpus: corpus/paper", "corpus: c", "path: prompts/default.tmpl", "path: p.tmpl").Replace(readFile(t, "baselines.yaml"))
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "m.yaml")

	write("c/P01.json", []byte(bom+corpus))
	write("p.tmpl", []byte(bom+prompt))
	write("m.yaml", []byte(bom+manifest))
	m, err := Load(file)
	if err != nil {
		t.Fatalf("files with a UTF-8 byte-order mark: %v", err)
	}
	if m.Name != "baselines" || len(m.Corpus.Scenarios) == 0 || m.Prompts[0].Text != prompt {
		t.Errorf("files with a UTF-8 byte-order mark: name %q, %d scenarios, prompt starts %q", m.Name, len(m.Corpus.Scenarios), m.Prompts[0].Text[:10])
	}
	// The hashes are of the files as they are on disk.
	if sum := sha256.Sum256([]byte(bom + prompt)); m.Prompts[0].SHA256 != hex.EncodeToString(sum[:]) {
		t.Error("the prompt's sha256 is not that of its file")
	}

	for _, tc := range []struct{ name, want string }{
		{"m.yaml", "manifest " + file + ": file is UTF-16 (little-endian); save it as UTF-8"},
		{"c/P01.json", "field corpus: c/P01.json: file is UTF-16 (little-endian); save it as UTF-8"},
		{"p.tmpl", "field prompts[0].path: p.tmpl: file is UTF-16 (little-endian); save it as UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write("c/P01.json", []byte(corpus))
			write("p.tmpl", []byte(prompt))
			write("m.yaml", []byte(manifest))
			write(tc.name, utf16LE(readFile(t, filepath.Join(dir, tc.name))))
			if _, err := Load(file); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s in UTF-16: error %v, want %q", tc.name, err, tc.want)
			}
		})
	}
}

// TestCredentialURLs pins which URLs a manifest refuses: a manifest is
// stored whole in every bundle, so a token in a URL would be too. The
// error names the field and never repeats the secret.
func TestCredentialURLs(t *testing.T) {
	for _, tc := range []struct{ url, why string }{
		{"http://127.0.0.1:8080/mcp", ""},
		{"https://mcp.example.org/v1/mcp?region=eu&limit=50", ""},
		{"localhost:11434", ""},
		{"http://[::1]:11434", ""},
		{"https://x.example/mcp?version=2025-06-18", ""},
		{"http://user:pw@127.0.0.1/mcp", "password"},
		{"http://user:@127.0.0.1/mcp", "password"},
		{"http://alice@127.0.0.1:11434", ""},
		{"http://127.0.0.1/mcp?token=Zx81", `query parameter "token" looks like a credential`},
		{"http://127.0.0.1/mcp?Access_Token=Zx81", `"Access_Token" looks like a credential`},
		{"https://x.example/mcp?api_key=1", `"api_key" looks like a credential`},
		{"https://x.example/mcp?X-Amz-Signature=ab12", `"X-Amz-Signature" looks like a credential`},
		{"https://x.example/mcp?client_secret=q", `"client_secret" looks like a credential`},
		{"https://x.example/mcp?password=q", `"password" looks like a credential`},
		{"https://x.example/mcp?q=sk-proj-9f8e7d6c5b4a3f2e1d0c", `"q" has a value shaped like a token`},
		{"https://x.example/mcp?u=ghp_16C7e42F292c6912E7710c838347Ae178B4a", `"u" has a value shaped like a token`},
		{"https://x.example/mcp#access_token=abc", "fragment"},
		{"https://x.example/mcp#", "fragment"},
		{"localhost:11434/?key=1", `"key" looks like a credential`},
		{"http://127.0.0.1/mcp?a=%zz", "does not parse"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			got := credentialIn(tc.url)
			if tc.why == "" && got != "" || tc.why != "" && !strings.Contains(got, tc.why) {
				t.Errorf("CredentialIn(%q) = %q, want %q", tc.url, got, tc.why)
			}
			if strings.Contains(got, "Zx81") || strings.Contains(got, "sk-proj") || strings.Contains(got, "ghp_") {
				t.Errorf("CredentialIn(%q) repeats the secret: %q", tc.url, got)
			}
		})
	}
	good := readFile(t, "baselines.yaml")
	act := strings.Replace(good, "replay_cap: 3", "replay_cap: 3\nreplay: live\ntask: act", 1)
	for _, tc := range []struct{ name, old, new, want string }{
		{"external_server", "task: act", "task: act\nexternal_server: https://x.example/mcp?token=Zx81", `field external_server: query parameter "token" looks like a credential`},
		{"external_server not act", "replay_cap: 3", "replay_cap: 3\nexternal_server: http://u:Zx81@x/mcp", "field external_server: the URL carries a password"},
		{"host", "    model: always_stop", "    model: always_stop\n    host: http://127.0.0.1:11434/?api_key=Zx81", `field models[0].host: query parameter "api_key" looks like a credential`},
		{"endpoints", "    model: always_stop", "    model: always_stop\n    endpoints: [http://127.0.0.1:1, 'http://127.0.0.1:2/v1#Zx81']", "field models[0].endpoints[1]: the URL has a fragment"},
		{"database_url", "task: act", "task: act\nenvironment: database\ndatabase: postgres\ndatabase_url: postgres://runner:Zx81@127.0.0.1:5432/shop", "field database_url: the URL carries a password"},
		{"database_url scheme", "task: act", "task: act\nenvironment: database\ndatabase: postgres\ndatabase_url: mysql://runner@127.0.0.1/shop", "field database_url: want a postgres:// URL"},
		{"database_url sqlite", "task: act", "task: act\nenvironment: database\ndatabase_url: postgres://runner@127.0.0.1/shop", "field database_url: needs database: postgres"},
		{"database_url_env", "task: act", "task: act\nenvironment: database\ndatabase: postgres\ndatabase_url_env: 'Zx81 secret'", "field database_url_env: want the name of an environment variable"},
		{"database", "task: act", "task: act\nenvironment: database\ndatabase: mysql", "field database: want sqlite (the default) or postgres"},
		{"database elsewhere", "task: act", "task: act\nenvironment: lab\ndatabase: postgres", "field database: database, database_url and scenarios configure environment: database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(act, tc.old, tc.new, 1)
			if bad == act {
				t.Fatalf("%s: edit did not apply", tc.name)
			}
			_, err := Parse("m.yaml", []byte(bad))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v\n want it to contain %q", tc.name, err, tc.want)
			} else if strings.Contains(err.Error(), "Zx81") {
				t.Errorf("%s: the error repeats the secret: %v", tc.name, err)
			}
		})
	}
}

// TestManifestCap: Parse's cap and the reader's are one.
func TestManifestCap(t *testing.T) {
	if maxBytes != input.Manifest.Bytes {
		t.Errorf("MaxBytes %d, input.Manifest %d", maxBytes, input.Manifest.Bytes)
	}
}

// TestManifestEmbedsNothing: no struct a manifest decodes into embeds
// another, so yamlField, which reads a struct's own fields, sees every
// field asWritten must check.
func TestManifestEmbedsNothing(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			if f.Anonymous && yamlName(f) == "" {
				t.Errorf("%s embeds %s: yamlField would not see its fields", ty, f.Name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Manifest]())
	walk(reflect.TypeFor[setFields]())
	if len(seen) < 5 {
		t.Fatalf("walked %d struct types; the walk is broken", len(seen))
	}
}
