package capture

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/internal/testserver/hostilemcp"
	"github.com/mcpstress/stress/study"
)

// TestQuarantine captures a record the corpus loader rejects (isError true
// with no content) beside good records from the same and another server:
// the bad record goes to private/quarantine with the reason, the rest is
// written and loads.
func TestQuarantine(t *testing.T) {
	target, _ := hostileTarget(t, "http")
	o := hostileOptions()
	o.ProbeTool = hostilemcp.ToolGetItem
	o.Sentinels = []SentinelSpec{{Tool: hostilemcp.ToolReadBlob}, {Tool: hostilemcp.ToolFindAccount}}
	url, _ := fixtureHTTP(t)
	good := Target{Label: "acme", URL: url}
	servers, err := Run(context.Background(), []Target{target, good}, o)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	w, err := Write(dir, servers, o)
	if err != nil {
		t.Fatalf("one bad record failed the whole write: %v", err)
	}
	c, err := study.LoadCorpus(os.DirFS(dir), CorpusDir)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, sc := range c.Scenarios {
		per[sc.Server]++
	}
	if per[servers[0].Pseudonym] != 4 || per[servers[1].Pseudonym] == 0 || w.Scenarios != len(c.Scenarios) {
		t.Errorf("records per server %v (wrote %d)", per, w.Scenarios)
	}
	q, err := os.ReadDir(filepath.Join(dir, PrivateDir, "quarantine"))
	if err != nil || len(q) != 1 {
		t.Fatalf("quarantine: %v, %v", q, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, PrivateDir, "quarantine", q[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"reason"`, "at least one text block", hostilemcp.ToolReadBlob} {
		if !strings.Contains(string(data), want) {
			t.Errorf("quarantine file lacks %q:\n%s", want, data)
		}
	}
}

// TestVetRecord checks the last gate before a record is published: the
// corpus loader must accept it and the scrubber must find nothing more in
// it. The reason says where, never what.
func TestVetRecord(t *testing.T) {
	c, err := study.LoadCorpus(os.DirFS("../manifests"), "corpus/paper")
	if err != nil {
		t.Fatal(err)
	}
	sc := newScrubber(map[string]string{"relative_time": "tool_r1", "time": "tool_t1"}, false).withSecrets("opaque-secret-value")
	if why := vet(c.Scenarios[0], sc); why != "" {
		t.Errorf("a clean record: %s", why)
	}
	for leak, want := range map[string]string{
		"key sk-live-abc123def here":   "a private token at /profile/control/D/rationale",
		"see invalid_relative_time":    "a real name at /profile/control/D/rationale",
		"x opaque-secret-value y":      "a known secret at /profile/control/D/rationale",
		"in /home/alice/notes.txt":     "a private path at /profile/control/D/rationale",
		"it is about time, tool_r1 ok": "",
	} {
		t.Run(leak, func(t *testing.T) {
			rec := c.Scenarios[0]
			rec.Profile.Control = maps.Clone(rec.Profile.Control)
			d := rec.Profile.Control["D"]
			d.Rationale = leak
			rec.Profile.Control["D"] = d
			why := vet(rec, sc)
			if !strings.Contains(why, want) || (want == "") != (why == "") || strings.Contains(why, leak) {
				t.Errorf("%q: %q, want %q", leak, why, want)
			}
		})
	}
	// Keys count where the server chose them, such as the arguments'.
	rec := c.Scenarios[0]
	rec.Capture = &study.Capture{Frames: "f.jsonl", RequestID: json.RawMessage("1"), SDK: "sdk", View: study.ViewGoSDK,
		WireSurface: rec.Surface, CauseRule: "rule", Arguments: json.RawMessage(`{"relativeTime": 1}`)}
	if why := vet(rec, sc); why != "the scrubber still finds a real name (in a key) at /capture/arguments" {
		t.Errorf("argument key: %q", why)
	}
	// What the loader rejects.
	rec = c.Scenarios[0]
	rec.Preferred = "bogus"
	if why := vet(rec, sc); !strings.HasPrefix(why, "the corpus loader rejects it: field preferred_policy: unknown policy") {
		t.Errorf("invalid record: %q", why)
	}
}
