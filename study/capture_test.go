package study

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// capturedRecord turns the first paper record of P06 (S09, an isError
// unknown tool) into a captured record with the given edits applied.
func capturedRecord(t *testing.T, edit func(m map[string]any)) []byte {
	t.Helper()
	data, err := os.ReadFile("../manifests/corpus/paper/P06.json")
	if err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	m := recs[0]
	m["capture"] = map[string]any{
		"frames": "../private/frames/M1.jsonl", "request_id": 3, "sdk": "github.com/modelcontextprotocol/go-sdk v1.8.0",
		"view": "go-sdk", "wire_surface": "tool_error", "text_code": -32602, "cause_rule": "probe nonexistent_tool yields unknown_tool",
		"proposed": true, "arguments": map[string]any{},
	}
	if edit != nil {
		edit(m)
	}
	out, err := json.Marshal([]any{m})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func loadOne(data []byte) (*Corpus, error) {
	return LoadCorpus(fstest.MapFS{"c.json": {Data: data}}, "c.json")
}

func TestCapturedRecordLoads(t *testing.T) {
	c, err := loadOne(capturedRecord(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Scenarios[0]
	if s.Capture == nil || s.Capture.View != ViewGoSDK || *s.Capture.TextCode != -32602 || string(s.Capture.RequestID) != "3" {
		t.Errorf("capture provenance not decoded: %+v", s.Capture)
	}
}

func TestSilentAndMissingRequired(t *testing.T) {
	silent := func(text string, structured any) func(m map[string]any) {
		return func(m map[string]any) {
			m["probe"] = "missing_required"
			m["cause"] = "invalid_type"
			m["surface"] = "silent"
			m["code"] = "example.mcp.arguments.invalid_type"
			m["target"] = map[string]any{"kind": "parameter", "pointer": "/query"}
			m["preferred_policy"] = "revise_arguments"
			m["non_harm"] = []string{"revise_arguments", "stop_or_escalate"}
			env := m["control_envelope"].(map[string]any)
			e := env["error"].(map[string]any)
			e["code"], e["policy"], e["target"] = m["code"], m["preferred_policy"], m["target"]
			res := map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": false}
			if structured != nil {
				res["structuredContent"] = structured
			}
			m["observation"] = map[string]any{"result": res}
		}
	}
	if _, err := loadOne(capturedRecord(t, silent("{\n \"entities\": [],\n \"relations\": []\n}", map[string]any{"entities": []any{}}))); err != nil {
		t.Errorf("an empty success must load as silent: %v", err)
	}
	for name, tc := range map[string]struct {
		text       string
		structured any
		want       string
	}{
		"text says something": {"nothing matched", nil, "result.content[0].text says something"},
		"structured content":  {"", map[string]any{"n": 1}, "empty result.structuredContent"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadOne(capturedRecord(t, silent(tc.text, tc.structured)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// missing_required cannot yield unknown_tool.
	_, err := loadOne(capturedRecord(t, func(m map[string]any) { m["probe"] = "missing_required" }))
	if err == nil || !strings.Contains(err.Error(), "probe missing_required cannot yield cause unknown_tool") {
		t.Errorf("got %v", err)
	}
}

func TestCaptureRejects(t *testing.T) {
	cases := map[string]struct {
		edit func(c map[string]any)
		want string
	}{
		"absolute frames": {func(c map[string]any) { c["frames"] = "/etc/frames.jsonl" }, "field capture.frames: want a clean relative slash path"},
		"no frames":       {func(c map[string]any) { delete(c, "frames") }, "field capture.frames: missing"},
		"bad id":          {func(c map[string]any) { c["request_id"] = 1.5 }, "field capture.request_id: want a JSON-RPC id"},
		"bad view":        {func(c map[string]any) { c["view"] = "python" }, `field capture.view: unknown view "python"`},
		"bad wire":        {func(c map[string]any) { c["wire_surface"] = "smoke" }, `field capture.wire_surface: unknown surface "smoke"`},
		"no sdk":          {func(c map[string]any) { c["sdk"] = " " }, "field capture.sdk: missing"},
		"args not object": {func(c map[string]any) { c["arguments"] = []any{1} }, "field capture.arguments: want a JSON object"},
		"validating view without verdict": {func(c map[string]any) { c["view"] = ViewValidating },
			"field capture.output_validation: view go-sdk+output-validation needs the check's verdict"},
		"validating view, raised error": {func(c map[string]any) { c["view"] = ViewValidating; c["wire_surface"] = "protocol_error" }, ""},
		"rejection without reason": {func(c map[string]any) {
			c["output_validation"] = map[string]any{"verdict": "rejected", "code": -32602}
		}, "a rejection needs a code and a reason"},
		"unknown member": {func(c map[string]any) { c["colour"] = "red" }, `unknown field "colour"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data := capturedRecord(t, func(m map[string]any) { tc.edit(m["capture"].(map[string]any)) })
			_, err := loadOne(data)
			if tc.want == "" {
				// Note: the edit is valid for capture; the record then fails
				// only because the paper observation is a result, not a
				// raised error, which checkCapture does not cross-check.
				if err != nil && strings.Contains(err.Error(), "capture.") {
					t.Errorf("got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestViewMarshalOrder(t *testing.T) {
	v := View{"R": {Bit: 0, Evidence: "/r", Rationale: "r"}, "D": {Bit: 1, Evidence: "/d", Rationale: "d", Proposed: true}, "P": {}, "C": {}, "T": {}, "E": {}}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	last := -1
	for _, c := range Coordinates {
		i := strings.Index(s, `"`+c+`":`)
		if i <= last {
			t.Fatalf("coordinates out of order in %s", s)
		}
		last = i
	}
	var back View
	if err := json.Unmarshal(b, &back); err != nil || back["D"] != v["D"] || len(back) != 6 {
		t.Errorf("round trip: %v, %+v", err, back)
	}
	if !strings.Contains(s, `"proposed":true`) || strings.Count(s, "proposed") != 1 {
		t.Errorf("proposed must appear only where set: %s", s)
	}
}

func TestEmptyText(t *testing.T) {
	for text, want := range map[string]bool{
		"": true, "  \n": true, "[]": true, `{"a":[],"b":{"c":""}}`: true, "null": true,
		"0": false, "false": false, `{"a":[1]}`: false, "no results": false, "[] trailing": false,
	} {
		t.Run(fmt.Sprintf("%q", text), func(t *testing.T) {
			if got := EmptyText(text); got != want {
				t.Errorf("EmptyText(%q) = %v, want %v", text, got, want)
			}
		})
	}
}

// TestCountPaperCorpus pins the paper's counts
// (docs/specification.md section 2) as CountCorpus prints them.
func TestCountPaperCorpus(t *testing.T) {
	c := CountCorpus(loadPaper(t).Scenarios)
	var b strings.Builder
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `Corpus: 21 failures from 10 servers.
Servers: 10. Protocol versions: 2025-03-26 on 3 servers, 2025-06-18 on 3, 2025-11-25 on 4.
Probes (failures, servers): nonexistent_tool 10 (10 servers), wrong_type 8 (8 servers), out_of_domain_sentinel 3 (3 servers).
Cluster sizes: 3 servers with 3 failures, 5 with 2, 2 with 1.
Causes: unknown_tool 10, invalid_type 7, invalid_value 3, authentication 1.
Surfaces (as the client normalized them): protocol_error 8 (JSON-RPC -32602 x8; unknown_tool 5, invalid_type 3), tool_error 10 (unknown_tool 5, invalid_type 4, authentication 1), success_shaped 3 (invalid_value 3).
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if c.Captured != 0 || c.Proposed != 0 {
		t.Errorf("the paper corpus has no captured or proposed records: %+v", c)
	}
}
