package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// printable reports whether s is valid UTF-8 made of printable runes and
// line breaks only.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r != '\n' && !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

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
		_, _, err := runCmd(t, tc.args...)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if msg := err.Error(); len(msg) > 1024 || !printable(msg) {
			t.Errorf("%s: error of %d bytes (printable %v), want under 1 KiB and printable:\n%.600q", tc.name, len(msg), printable(msg), msg)
		}
	}
}
