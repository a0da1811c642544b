package manifests

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// BaselinesPrompt is where WriteBaselines puts its copy of the built-in
// prompt template, relative to the manifest's directory.
const BaselinesPrompt = "prompts/default.tmpl"

// WriteBaselines writes file, a manifest running the three built-in
// baselines (all four paired conditions) on the corpus at corpus (relative
// to the manifest), and a copy of the built-in prompt template next to it
// at BaselinesPrompt. header becomes the manifest's leading comment.
func WriteBaselines(file, name, header, corpus string, replicates int, seed uint64) error {
	tmpl, err := fs.ReadFile(Builtin, BaselinesPrompt)
	if err != nil {
		return err
	}
	prompt := filepath.Join(filepath.Dir(file), filepath.FromSlash(BaselinesPrompt))
	if err := os.MkdirAll(filepath.Dir(prompt), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(prompt, tmpl, 0o644); err != nil {
		return err
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		b.WriteString("# " + line + "\n")
	}
	fmt.Fprintf(&b, `name: %s
corpus: %s
prompts:
  - name: default
    path: %s
conditions: [normalized, code_only, structured, prose]
replicates: %d
seed: %d
temperature: 0.7
replay_cap: %d
models:
  - name: always_stop
    backend: baseline
    model: always_stop
  - name: code_registry
    backend: baseline
    model: code_registry
  - name: explicit_policy
    backend: baseline
    model: explicit_policy
`, name, corpus, BaselinesPrompt, replicates, seed, defaultReplayCap)
	if _, err := Parse(file, []byte(b.String())); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}
