package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpstress/stress/internal/testserver/hostilemcp"
	"github.com/mcpstress/stress/study"
)

// corpusFiles returns every file a capture publishes: everything under
// corpus/ and the manifest.
func corpusFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(filepath.Join(dir, CorpusDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		out[p], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(dir, ManifestFile)
	if out[m], err = os.ReadFile(m); err != nil {
		t.Fatal(err)
	}
	return out
}

// nameForms are the spellings of a multi-word name a text may use:
// snake, kebab, dotted and run together (camelCase once lowered).
func nameForms(name string) []string {
	toks := nameTokens(name)
	if len(toks) < 2 {
		return []string{strings.ToLower(name)}
	}
	var out []string
	for _, sep := range []string{"", "_", "-", "."} {
		out = append(out, strings.Join(toks, sep))
	}
	return out
}

// assertNoCanaries fails on any canary, real name or configured secret in
// the published files, in any case, as written or JSON-escaped.
func assertNoCanaries(t *testing.T, files map[string][]byte) {
	t.Helper()
	needles := []string{hostileEcho, "hostile-lab"}
	for _, c := range hostilemcp.Canaries {
		needles = append(needles, c.Core)
	}
	needles = append(needles, nameForms(hostilemcp.ServerName)...)
	for _, tool := range hostilemcp.Tools {
		if len(nameTokens(tool)) > 1 { // a one-word name is a common word: see TestScrubNames
			needles = append(needles, nameForms(tool)...)
		}
	}
	for name, data := range files {
		low := bytes.ToLower(data)
		for _, n := range needles {
			esc, _ := json.Marshal(n)
			for _, form := range []string{n, string(esc[1 : len(esc)-1])} {
				if i := bytes.Index(low, []byte(strings.ToLower(form))); i >= 0 {
					t.Errorf("%s holds %q: …%s…", filepath.Base(name), n, data[max(0, i-60):min(len(data), i+len(form)+60)])
					break
				}
			}
		}
	}
}

// TestHostileNoLeak captures the hostile server's canaries (in tool names
// and descriptions, error messages, error.data keys and values,
// structuredContent, media types, output-schema violations and isError
// text) over stdio and streamable HTTP, with and without -validate-output
// and -redact-text, and greps everything published for each of them.
func TestHostileNoLeak(t *testing.T) {
	for _, tr := range []string{"stdio", "http"} {
		for _, validate := range []bool{false, true} {
			for _, redact := range []bool{false, true} {
				name := tr
				if validate {
					name += "+validate"
				}
				if redact {
					name += "+redact"
				}
				t.Run(name, func(t *testing.T) {
					target, _ := hostileTarget(t, tr)
					o := hostileOptions()
					o.ValidateOutput, o.RedactFailureText = validate, redact
					o.ProbeTool = hostilemcp.ToolGetItem
					o.ReadOnly = []string{hostilemcp.ToolRelativeTime}
					for _, tool := range []string{hostilemcp.ToolFindAccount, hostilemcp.ToolGetProfile, hostilemcp.ToolGetReport,
						hostilemcp.ToolLookupKeys, hostilemcp.ToolRelativeTime} {
						o.Sentinels = append(o.Sentinels, SentinelSpec{Tool: tool})
					}
					servers, err := Run(context.Background(), []Target{target}, o)
					if err != nil || servers[0].Err != nil {
						t.Fatal(err, servers[0].Err)
					}
					dir := filepath.Join(t.TempDir(), "out")
					w, err := Write(dir, servers, o)
					if err != nil {
						t.Fatal(err)
					}
					// Every probe makes a clean record: none needed quarantine.
					if w.Scenarios != 8 {
						t.Errorf("wrote %d records, want 8", w.Scenarios)
					}
					if q, _ := os.ReadDir(filepath.Join(dir, PrivateDir, "quarantine")); len(q) > 0 {
						t.Errorf("%d records quarantined", len(q))
					}
					files := corpusFiles(t, dir)
					assertNoCanaries(t, files)
					// A one-word tool name ("time") does not garble the word.
					all := bytes.Join(slices.Collect(maps.Values(files)), nil)
					if !bytes.Contains(all, []byte("It is about time you read them")) {
						t.Errorf("the word \"time\" was garbled or the text lost")
					}
					if _, err := study.LoadCorpus(os.DirFS(dir), CorpusDir); err != nil {
						t.Error(err)
					}
					// The -read-only override is recorded, privately.
					log, _ := json.Marshal(privateLog(t, dir))
					if !strings.Contains(string(log), `"basis":"allow-list (overrides annotation readOnlyHint, but not name rule)"`) {
						t.Errorf("the override of %s is not recorded: %s", hostilemcp.ToolRelativeTime, log)
					}
				})
			}
		}
	}
}
