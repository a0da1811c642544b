package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/mcpstress/stress/internal/input"
)

// TestErrorsQuoteBounded checks that the errors stress prints quote at most
// a few hundred printable bytes of a manifest or prompt file, however large
// or binary.
func TestErrorsQuoteBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	junk := []byte(strings.Repeat("QsIaQ85OZwvK7de7ni5uZ3tGGwThcqzO2hO4vd4U/", 50<<20/40))
	bin := make([]byte, 3000)
	for i := range bin {
		bin[i] = byte(i*7919 + i/3)
	}
	ident := strings.Repeat("f", 256<<10)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"50 MB junk manifest", []string{"run", write("junk.yaml", junk)}},
		{"binary manifest", []string{"profile", "-manifest", write("bin.yaml", bin)}},
		{"long function name in a prompt", []string{"render", "-scenario", "S07", "-condition", "prose", "-prompt", write("fn.tmpl", []byte(`{{define "system"}}{{`+ident+`}}{{end}}`))}},
		{"control characters in a prompt", []string{"render", "-scenario", "S07", "-condition", "prose", "-prompt", write("ctl.tmpl", []byte("{{define \"system\"}}{{\x1b[2J\x00}}{{end}}"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCmd(t, tc.args...)
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
				return
			}
			if msg := err.Error(); len(msg) > 1024 || !input.Printable(msg) {
				t.Errorf("%s: error of %d bytes (printable %v), want under 1 KiB and printable:\n%.600q", tc.name, len(msg), input.Printable(msg), msg)
			}
		})
	}
}

// TestErrorsNamePathsAsGiven checks that corpus and prompt errors name the
// files as the command line or the manifest wrote them, absolute paths
// with their leading slash.
func TestErrorsNamePathsAsGiven(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("[1, 2,]"), 0o644)
	paper, _ := filepath.Abs("../../manifests/corpus/paper")
	m := strings.NewReplacer("corpus: corpus/paper", "corpus: "+paper, "path: prompts/default.tmpl", "path: "+dir+"/none.tmpl").
		Replace(string(must(os.ReadFile("../../manifests/baselines.yaml"))))
	manifest := filepath.Join(dir, "m.yaml")
	os.WriteFile(manifest, []byte(m), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"summary", "-corpus", bad}, bad + ": malformed JSON"},
		{[]string{"summary", "-corpus", dir + "/nowhere.json"}, "stat " + dir + "/nowhere.json: no such file"},
		{[]string{"summary", "-corpus", "testdata/nowhere"}, "corpus testdata/nowhere: stat testdata/nowhere: no such file"},
		{[]string{"run", manifest}, "field prompts[0].path: open " + dir + "/none.tmpl: no such file"},
		{[]string{"render", "-scenario", "S07", "-condition", "prose", "-prompt", dir + "/none.tmpl"}, "flag -prompt: open " + dir + "/none.tmpl: no such file"},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			_, _, err := runCmd(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("stress %q: error %v, want it to contain %q", tc.args, err, tc.want)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestPromptEncodings checks that render -prompt takes a prompt file with a
// UTF-8 byte-order mark as the same prompt, and refuses UTF-16 naming the
// file.
func TestPromptEncodings(t *testing.T) {
	prompt := must(os.ReadFile("../../manifests/prompts/default.tmpl"))
	dir := t.TempDir()
	want, _, err := runCmd(t, "render", "-scenario", "S07", "-condition", "prose")
	if err != nil {
		t.Fatal(err)
	}
	bom := filepath.Join(dir, "bom.tmpl")
	os.WriteFile(bom, append([]byte("\xef\xbb\xbf"), prompt...), 0o644)
	got, _, err := runCmd(t, "render", "-scenario", "S07", "-condition", "prose", "-prompt", bom)
	if err != nil || got != want {
		t.Errorf("render -prompt with a byte-order mark: %v\n%s", err, diff(want, got))
	}
	wide := filepath.Join(dir, "wide.tmpl")
	u16 := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(string(prompt))) {
		u16 = append(u16, byte(u), byte(u>>8))
	}
	os.WriteFile(wide, u16, 0o644)
	if _, _, err := runCmd(t, "render", "-scenario", "S07", "-condition", "prose", "-prompt", wide); err == nil ||
		!strings.Contains(err.Error(), "flag -prompt: "+wide+": file is UTF-16 (little-endian); save it as UTF-8") {
		t.Errorf("render -prompt in UTF-16: %v", err)
	}
}
