package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpstress/stress/results"
)

// TestVersion runs stress version on the test binary: what it prints is
// results.BinaryInfo, whose sha256 is that of the executable.
func TestVersion(t *testing.T) {
	js, _, err := runCmd(t, "version", "-json")
	if err != nil {
		t.Fatal(err)
	}
	var b results.Binary
	if err := json.Unmarshal([]byte(js), &b); err != nil {
		t.Fatalf("version -json: %v\n%s", err, js)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(must(os.ReadFile(exe)))
	if b != results.BinaryInfo() || b.Module != "github.com/mcpstress/stress" || b.SHA256 != hex.EncodeToString(sum[:]) || b.GoVersion != runtime.Version() {
		t.Errorf("version -json: %+v", b)
	}
	out, _, err := runCmd(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			got[f[0]] = f[1]
		} else {
			t.Errorf("version prints the line %q, want a name and a value", line)
		}
	}
	if got["module"] != b.Module || got["version"] != b.Version || got["sha256"] != b.SHA256 || got["go"] != runtime.Version() {
		t.Errorf("version prints\n%s\nwant the values of %+v", out, b)
	}
	if _, _, err := runCmd(t, "version", "extra"); err == nil || !strings.Contains(err.Error(), "version takes no arguments") {
		t.Errorf("version extra: %v", err)
	}
}

// TestVersionGolden pins both forms for a build with a VCS stamp, and one
// without anything known but the module.
func TestVersionGolden(t *testing.T) {
	stamped := results.Binary{Module: "github.com/mcpstress/stress", Version: "v0.0.0-20260101000000-85b520f1c2d3+dirty", GoVersion: "go1.26.0",
		Revision: "85b520f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7", Modified: true, SHA256: strings.Repeat("ab", 32)}
	bare := results.Binary{Module: "github.com/mcpstress/stress", Version: "(unknown)"}
	var out strings.Builder
	for _, b := range []results.Binary{stamped, bare} {
		for _, asJSON := range []bool{false, true} {
			if err := writeVersion(&out, b, asJSON); err != nil {
				t.Fatal(err)
			}
			out.WriteString("--\n")
		}
	}
	golden(t, "version.golden", out.String())
}
