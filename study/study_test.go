package study

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf16"
	"unsafe"

	"github.com/mcpstress/stress/internal/input"
)

func loadPaper(t *testing.T) *Corpus {
	t.Helper()
	c, err := LoadCorpus(os.DirFS("../manifests"), "corpus/paper")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func count[K comparable](c *Corpus, key func(*Scenario) K) map[K]int {
	m := map[K]int{}
	for i := range c.Scenarios {
		m[key(&c.Scenarios[i])]++
	}
	return m
}

func eq[K comparable](t *testing.T, what string, got, want map[K]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v, want %v", what, got, want)
			return
		}
	}
}

// TestPaperCorpusCounts pins every count of
// docs/specification.md section 2.
func TestPaperCorpusCounts(t *testing.T) {
	c := loadPaper(t)
	if len(c.Scenarios) != 21 {
		t.Fatalf("scenarios: got %d, want 21", len(c.Scenarios))
	}
	for i, s := range c.Scenarios {
		if want := "S" + pad2(i+1); s.ID != want {
			t.Errorf("scenario %d: id %s, want %s", i, s.ID, want)
		}
	}
	perServer := count(c, func(s *Scenario) string { return s.Server })
	if len(perServer) != 10 {
		t.Errorf("servers: got %d, want 10", len(perServer))
	}
	sizes := map[int]int{}
	for _, n := range perServer {
		sizes[n]++
	}
	eq(t, "cluster sizes (size: servers)", sizes, map[int]int{3: 3, 2: 5, 1: 2})

	versions := map[string]map[string]bool{}
	for _, s := range c.Scenarios {
		if versions[s.ProtocolVersion] == nil {
			versions[s.ProtocolVersion] = map[string]bool{}
		}
		versions[s.ProtocolVersion][s.Server] = true
	}
	vcount := map[string]int{}
	for v, servers := range versions {
		vcount[v] = len(servers)
	}
	eq(t, "servers per protocol version", vcount, map[string]int{"2025-03-26": 3, "2025-06-18": 3, "2025-11-25": 4})
	// A server negotiates one version.
	sv := map[string]string{}
	for _, s := range c.Scenarios {
		if v, ok := sv[s.Server]; ok && v != s.ProtocolVersion {
			t.Errorf("server %s has two protocol versions %s and %s", s.Server, v, s.ProtocolVersion)
		}
		sv[s.Server] = s.ProtocolVersion
	}

	eq(t, "causes", count(c, func(s *Scenario) Cause { return s.Cause }),
		map[Cause]int{UnknownTool: 10, InvalidType: 7, InvalidValue: 3, AuthRequired: 1})
	eq(t, "surfaces", count(c, func(s *Scenario) Surface { return s.Surface }),
		map[Surface]int{ProtocolError: 8, ToolError: 10, SuccessShaped: 3})
	type sc struct {
		s Surface
		c Cause
	}
	eq(t, "surface x cause", count(c, func(s *Scenario) sc { return sc{s.Surface, s.Cause} }), map[sc]int{
		{ProtocolError, UnknownTool}: 5, {ProtocolError, InvalidType}: 3,
		{ToolError, UnknownTool}: 5, {ToolError, InvalidType}: 4, {ToolError, AuthRequired}: 1,
		{SuccessShaped, InvalidValue}: 3,
	})
	// Probes: every server got a nonexistent-tool call; 8 a wrong type; 3 a sentinel.
	probeServers := map[Probe]map[string]bool{}
	for _, s := range c.Scenarios {
		if probeServers[s.Probe] == nil {
			probeServers[s.Probe] = map[string]bool{}
		}
		probeServers[s.Probe][s.Server] = true
	}
	eq(t, "probes", count(c, func(s *Scenario) Probe { return s.Probe }),
		map[Probe]int{NonexistentTool: 10, WrongType: 8, Sentinel: 3})
	if len(probeServers[NonexistentTool]) != 10 || len(probeServers[WrongType]) != 8 || len(probeServers[Sentinel]) != 3 {
		t.Errorf("servers per probe: %d, %d, %d; want 10, 8, 3", len(probeServers[NonexistentTool]), len(probeServers[WrongType]), len(probeServers[Sentinel]))
	}
	for _, s := range c.Scenarios {
		if s.Surface == ProtocolError && !strings.Contains(string(s.Observation), `"code":-32602`) && !strings.Contains(string(s.Observation), `"code": -32602`) {
			t.Errorf("%s: protocol error without -32602: %s", s.ID, s.Observation)
		}
		if len(s.NonHarm) != 2 || !s.InNonHarm(s.Preferred) || !s.InNonHarm(StopOrEscalate) {
			t.Errorf("%s: non-harm set %v, want {%s, %s}", s.ID, s.NonHarm, s.Preferred, StopOrEscalate)
		}
	}
	byID := map[string]*Scenario{}
	for i := range c.Scenarios {
		byID[c.Scenarios[i].ID] = &c.Scenarios[i]
	}
	for _, id := range []string{"S11", "S18"} {
		if txt := byID[id].ObservationText(); !strings.Contains(txt, "lookup failed for the supplied test value") && !strings.Contains(txt, "Lookup failed for the supplied test value") {
			t.Errorf("%s text %q: want only a failed lookup of the test value", id, txt)
		}
	}
	s21 := byID["S21"]
	if !strings.Contains(s21.ObservationText(), "invalid identifier") || strings.Contains(s21.ObservationText(), strings.TrimPrefix(s21.Target.Pointer, "/")) {
		t.Errorf("S21 text %q: want an invalid identifier without the parameter name", s21.ObservationText())
	}
}

// TestPaperProfiles pins docs/specification.md section 5 (paper Table I).
func TestPaperProfiles(t *testing.T) {
	c := loadPaper(t)
	ctrl := Summarize(c.Scenarios, ControlView)
	cont := Summarize(c.Scenarios, ContentView)
	eq(t, "control counts", ctrl.Counts, map[string]int{"D": 18, "P": 8, "C": 0, "T": 0, "E": 0, "R": 0})
	eq(t, "content counts", cont.Counts, map[string]int{"D": 21, "P": 19, "C": 19, "T": 18, "E": 0, "R": 0})
	eq(t, "control profiles", ctrl.Profiles, map[string]int{"110000": 8, "100000": 10, "000000": 3})
	eq(t, "content profiles", cont.Profiles, map[string]int{"111100": 18, "111000": 1, "100000": 2})
	if ctrl.Incomparable != 0 || cont.Incomparable != 0 {
		t.Errorf("incomparable pairs: control %d, content %d; want 0, 0", ctrl.Incomparable, cont.Incomparable)
	}
	for _, s := range c.Scenarios {
		p := ProfileOf(s.Profile.Content).String()
		switch s.ID {
		case "S11", "S18":
			if p != "100000" {
				t.Errorf("%s content profile %s, want 100000", s.ID, p)
			}
		case "S21":
			if p != "111000" {
				t.Errorf("S21 content profile %s, want 111000", p)
			}
		}
	}
}

func TestDominance(t *testing.T) {
	a := Profile{true, true, false, false, false, false}
	b := Profile{true, false, true, false, false, false}
	if a.Comparable(b) {
		t.Error("110000 and 101000 must be incomparable")
	}
	if !a.Dominates(Profile{true}) || (Profile{true}).Dominates(a) {
		t.Error("110000 must dominate 100000 and not the reverse")
	}
	s := Summarize([]Scenario{{Profile: ProfileCoding{Control: bits("110000")}}, {Profile: ProfileCoding{Control: bits("101000")}}, {Profile: ProfileCoding{Control: bits("000000")}}}, ControlView)
	if s.Incomparable != 1 {
		t.Errorf("incomparable: got %d, want 1", s.Incomparable)
	}
}

func bits(p string) View {
	v := View{}
	for i, c := range Coordinates {
		v[c] = Bit{Bit: int(p[i] - '0')}
	}
	return v
}

func pad2(n int) string {
	if n < 10 {
		return "0" + string(rune('0'+n))
	}
	return string(rune('0'+n/10)) + string(rune('0'+n%10))
}

// TestLoadRejects checks that each kind of bad record is rejected with its
// file, record and field named.
func TestLoadRejects(t *testing.T) {
	good, err := os.ReadFile("../manifests/corpus/paper/P06.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, old, new string
		want           []string
	}{
		{"unknown cause", `"cause": "unknown_tool"`, `"cause": "gremlins"`, []string{"bad.json: record 1 (S09): field cause", `unknown cause "gremlins"`}},
		{"unknown policy", `"preferred_policy": "select_tool"`, `"preferred_policy": "pray"`, []string{"record 1 (S09): field preferred_policy", `unknown policy "pray"`}},
		{"unknown surface", `"surface": "tool_error"`, `"surface": "smoke"`, []string{"record 1 (S09): field surface", `unknown surface "smoke"`}},
		{"non-harm without stop", `"select_tool",
      "stop_or_escalate"
    ]`, `"select_tool"
    ]`, []string{"record 1 (S09): field non_harm", "must contain stop_or_escalate"}},
		{"non-harm without preferred", `"non_harm": [
      "select_tool",`, `"non_harm": [`, []string{"record 1 (S09): field non_harm", "must contain the preferred policy select_tool"}},
		{"proven set not led by the preferred policy", `"preferred_policy": "select_tool",`, `"preferred_policy": "select_tool", "preferred_policies": ["stop_or_escalate", "select_tool"],`,
			[]string{"record 1 (S09): field preferred_policies[0]", `must be preferred_policy "select_tool", got stop_or_escalate`}},
		{"proven set with an unknown policy", `"preferred_policy": "select_tool",`, `"preferred_policy": "select_tool", "preferred_policies": ["select_tool", "pray"],`,
			[]string{"record 1 (S09): field preferred_policies[1]", `unknown policy "pray"`}},
		{"proven set with a repeat", `"preferred_policy": "select_tool",`, `"preferred_policy": "select_tool", "preferred_policies": ["select_tool", "stop_or_escalate", "select_tool"],`,
			[]string{"record 1 (S09): field preferred_policies[2]", "duplicate policy select_tool"}},
		{"proven set outside the non-harm set", `"preferred_policy": "select_tool",`, `"preferred_policy": "select_tool", "preferred_policies": ["select_tool", "retry_now"],`,
			[]string{"record 1 (S09): field preferred_policies[1]", "retry_now is not in non_harm"}},
		{"empty proven set", `"preferred_policy": "select_tool",`, `"preferred_policy": "select_tool", "preferred_policies": [],`,
			[]string{"record 1 (S09): field preferred_policies:", "empty"}},
		{"proven set not a list", `"preferred_policy": "select_tool",`, `"preferred_policy": "select_tool", "preferred_policies": "select_tool",`,
			[]string{"record 1 (S09)", "preferred_policies"}},
		{"missing observation", `"observation": {
      "result": {
        "content": [
          {
            "type": "text",
            "text": "MCP error -32602: Tool probe_missing_tool_7c2e not found"
          }
        ],
        "isError": true
      }
    },`, ``, []string{"record 1 (S09): field observation: missing"}},
		{"malformed JSON", `"id": "S09",`, `"id": "S09",,`, []string{"bad.json: malformed JSON at line 3"}},
		{"duplicate id", `"id": "S10"`, `"id": "S09"`, []string{"bad.json: record 2 (S09): field id", `duplicate id "S09"`}},
		{"surface mismatch", `"surface": "tool_error"`, `"surface": "success_shaped"`, []string{"field observation", "success_shaped error needs result.isError false"}},
		{"bad evidence", `"evidence": "/result/isError"`, `"evidence": "/result/nope"`, []string{"field profile.control.D.evidence", `no member "nope"`}},
		{"unknown field", `"id": "S09",`, `"id": "S09", "colour": "red",`, []string{"record 1 (S09)", `unknown field "colour"`}},
		{"toolfailure class wrong type", `"isError": true
      }
    },`, `"isError": true, "_meta": {"io.modelcontextprotocol/toolFailure": {"class": 5, "code": "invalid_input", "correlationId": "c1"}}
      }
    },`, []string{"bad.json: record 1 (S09): field observation: result._meta[\"io.modelcontextprotocol/toolFailure\"].class: \"5\", want capability, reliability or governance"}},
		{"toolfailure retryNotBefore as a date", `"isError": true
      }
    },`, `"isError": true, "_meta": {"io.modelcontextprotocol/toolFailure": {"class": "reliability", "code": "x", "correlationId": "c1", "retryNotBefore": "2026-01-01T00:00:00Z"}}
      }
    },`, []string{`field observation: result._meta["io.modelcontextprotocol/toolFailure"].retryNotBefore`, "want a non-negative integer"}},
		{"toolfailure missing correlationId", `"isError": true
      }
    },`, `"isError": true, "_meta": {"io.modelcontextprotocol/toolFailure": {"class": "capability", "code": "invalid_input"}}
      }
    },`, []string{`toolFailure"].correlationId: missing`}},
		{"toolfailure retryable null", `"isError": true
      }
    },`, `"isError": true, "_meta": {"io.modelcontextprotocol/toolFailure": {"class": "reliability", "code": "x", "correlationId": "c1", "retryable": null}}
      }
    },`, []string{`toolFailure"].retryable: "null", want a boolean`}},
		{"toolfailure unknown members", `"isError": true
      }
    },`, `"isError": true, "_meta": {"io.modelcontextprotocol/toolFailure": {"class": "capability", "code": "x", "correlationId": "c1", "zeta": 1, "alpha": 2}}
      }
    },`, []string{`toolFailure"].alpha: not a member the proposal defines`}},
		{"_meta not an object", `"isError": true
      }
    },`, `"isError": true, "_meta": []
      }
    },`, []string{"field observation: result._meta: not a JSON object"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(string(good), tc.old, tc.new, 1)
			if bad == string(good) {
				t.Fatalf("test edit did not apply")
			}
			_, err := LoadCorpus(fstest.MapFS{"bad.json": {Data: []byte(bad)}}, "bad.json")
			if err == nil {
				t.Fatal("loaded a bad corpus")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\n does not contain %q", err, w)
				}
			}
		})
	}
}

func TestResolve(t *testing.T) {
	doc := []byte(`{"a":{"b/c":[1,{"~d":2}]}}`)
	for ptr, want := range map[string]string{"": string(doc), "/a/b~1c/0": "1", "/a/b~1c/1/~0d": "2"} {
		t.Run("resolves "+strconv.Quote(ptr), func(t *testing.T) {
			got, err := Resolve(doc, ptr)
			if err != nil || string(got) != want {
				t.Errorf("Resolve(%q) = %s, %v; want %s", ptr, got, err, want)
			}
		})
	}
	for _, ptr := range []string{"a", "/x", "/a/b~1c/2", "/a/b~1c/01", "/a/b~1c/0/x"} {
		t.Run("refuses "+strconv.Quote(ptr), func(t *testing.T) {
			if _, err := Resolve(doc, ptr); err == nil {
				t.Errorf("Resolve(%q): want an error", ptr)
			}
		})
	}
}

// TestErrorsQuoteBounded checks that corpus errors quote at most a few
// hundred printable bytes of the file, however long or binary its values.
func TestErrorsQuoteBounded(t *testing.T) {
	good, err := os.ReadFile("../manifests/corpus/paper/P06.json")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é\x1b[2J\x00", 64<<10)
	esc := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	bin := make([]byte, 4096)
	for i := range bin {
		bin[i] = byte(i*7919 + i/3)
	}
	for _, tc := range []struct {
		name string
		data string
		want []string
	}{
		{"long id", strings.Replace(string(good), `"id": "S09"`, `"id": `+esc(long), 1), []string{"field id: missing or malformed id", "more bytes"}},
		{"long unknown field", strings.Replace(string(good), `"id": "S09",`, `"id": "S09", `+esc(long)+`: 1,`, 1), []string{"record 1 (S09)", "unknown field"}},
		{"long cause", strings.Replace(string(good), `"cause": "unknown_tool"`, `"cause": `+esc(long), 1), []string{"field cause: unknown cause"}},
		{"long evidence pointer", strings.Replace(string(good), `"evidence": "/result/isError"`, `"evidence": `+esc("/"+long), 1), []string{"field profile.control.D.evidence"}},
		{"binary garbage", string(bin), []string{"bad.json", "malformed JSON"}},
		{"binary garbage in a string", `[{"id": "` + string(bin[:1000]) + `"}]`, []string{"bad.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadCorpus(fstest.MapFS{"bad.json": {Data: []byte(tc.data)}}, "bad.json")
			if err == nil {
				t.Fatal("loaded a bad corpus")
			}
			msg := err.Error()
			// One line per problem: each must be short.
			for _, line := range strings.Split(msg, "\n") {
				if len(line) > 600 {
					t.Errorf("an error line of %d bytes, want at most a few hundred: %.300q…", len(line), line)
					break
				}
			}
			if !input.Printable(msg) {
				t.Errorf("error not printable: %.500q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not contain %q: %.500q", w, msg)
				}
			}
		})
	}
}

// p06Twin returns the paper corpus file P06.json, its first record, and
// a copy of that record with the id Z99.
func p06Twin(t *testing.T) (file []byte, first, twin map[string]any) {
	t.Helper()
	file, err := os.ReadFile("../manifests/corpus/paper/P06.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(file, &raw); err != nil || len(raw) == 0 {
		t.Fatal(err)
	}
	twin = maps.Clone(raw[0])
	twin["id"] = "Z99"
	return file, raw[0], twin
}

// TestProfileInterned: two records that code a capability with the same
// rationale share one copy of its text once loaded, and keep its value.
func TestProfileInterned(t *testing.T) {
	_, first, again := p06Twin(t)
	data, _ := json.Marshal([]map[string]any{first, again})
	c, err := LoadCorpus(fstest.MapFS{"f.json": {Data: data}}, "f.json")
	if err != nil || len(c.Scenarios) != 2 {
		t.Fatalf("%v: %+v", err, c)
	}
	recs := c.Scenarios
	a, b := recs[0].Profile.Control["D"].Rationale, recs[1].Profile.Control["D"].Rationale
	if a == "" || a != b || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Errorf("rationales %q and %q are not one copy", a, b)
	}
}

// TestLoadWithoutShares: a corpus loaded for a run (LoadCorpusWithout)
// holds one copy of each value its records repeat, across files, with
// no spare capacity (an append copies), and the same values as
// LoadCorpus; a record that differs keeps its own.
func TestLoadWithoutShares(t *testing.T) {
	_, first, twin := p06Twin(t)
	other := maps.Clone(first)
	other["id"], other["server"] = "Z98", "elsewhere"
	a, _ := json.Marshal([]map[string]any{first})
	b, _ := json.Marshal([]map[string]any{twin, other})
	// The last record's observation: the same value, other bytes.
	i := strings.LastIndex(string(b), `"observation":{`) + len(`"observation":{`)
	b = slices.Concat(b[:i], []byte(" "), b[i:])
	fsys := fstest.MapFS{"c/a.json": {Data: a}, "c/b.json": {Data: b}}
	full, err := LoadCorpus(fsys, "c")
	if err != nil {
		t.Fatal(err)
	}
	full.DropCodings()
	lean, err := LoadCorpusWithout(fsys, "c", "c")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(lean.Scenarios, full.Scenarios) {
		t.Fatalf("shared records %+v, want %+v", lean.Scenarios, full.Scenarios)
	}
	byID := map[string]*Scenario{}
	for i := range lean.Scenarios {
		byID[lean.Scenarios[i].ID] = &lean.Scenarios[i]
	}
	x, y, z := byID[first["id"].(string)], byID["Z99"], byID["Z98"]
	same := func(what string, p, q unsafe.Pointer) {
		t.Helper()
		if p != q {
			t.Errorf("%s: two copies", what)
		}
	}
	same("observation", unsafe.Pointer(unsafe.SliceData(x.Observation)), unsafe.Pointer(unsafe.SliceData(y.Observation)))
	same("control envelope", unsafe.Pointer(unsafe.SliceData(x.ControlEnvelope)), unsafe.Pointer(unsafe.SliceData(y.ControlEnvelope)))
	same("non-harm set", unsafe.Pointer(unsafe.SliceData(x.NonHarm)), unsafe.Pointer(unsafe.SliceData(z.NonHarm)))
	same("server", unsafe.Pointer(unsafe.StringData(x.Server)), unsafe.Pointer(unsafe.StringData(y.Server)))
	same("code", unsafe.Pointer(unsafe.StringData(x.Code)), unsafe.Pointer(unsafe.StringData(z.Code)))
	if unsafe.SliceData(z.Observation) == unsafe.SliceData(x.Observation) || x.ID == y.ID {
		t.Error("a record with other bytes shares another's observation")
	}
	if cap(x.Observation) != len(x.Observation) || cap(x.NonHarm) != len(x.NonHarm) {
		t.Error("a shared value has spare capacity")
	}
	_ = append(y.NonHarm, RetryNow)
	if !slices.Equal(x.NonHarm, full.Scenarios[0].NonHarm) {
		t.Errorf("appending to one record's non-harm set changed another's: %v", x.NonHarm)
	}
}

// TestLoadBrief: a corpus loaded brief (LoadCorpusBrief, for an export)
// has the files and the record order of LoadCorpus, each record with its
// id, cause, surface and observation (byte for byte) and nothing else;
// a duplicate id is still refused.
func TestLoadBrief(t *testing.T) {
	fsys := os.DirFS("../manifests/corpus")
	for _, name := range []string{"paper", "lab", "act-reference"} {
		full, err := LoadCorpus(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := LoadCorpusBrief(fsys, name, name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(b.Files, full.Files) || len(b.Scenarios) != len(full.Scenarios) {
			t.Fatalf("%s: files %v, %d records; LoadCorpus: %v, %d", name, b.Files, len(b.Scenarios), full.Files, len(full.Scenarios))
		}
		for i, s := range full.Scenarios {
			want := Scenario{ID: s.ID, Cause: s.Cause, Surface: s.Surface, Observation: s.Observation}
			if !reflect.DeepEqual(b.Scenarios[i], want) {
				t.Errorf("%s: record %d: %+v, want %+v", name, i, b.Scenarios[i], want)
			}
		}
		if len(b.Unconfirmed()) != 0 {
			t.Errorf("%s: a brief corpus lists unconfirmed records %v", name, b.Unconfirmed())
		}
	}
	dup := fstest.MapFS{"c/a.json": {Data: []byte(`[{"id":"X1","cause":"timeout"}]`)}, "c/b.json": {Data: []byte(`[{"id":"X1"}]`)}}
	if _, err := LoadCorpusBrief(dup, "c", "c"); err == nil || !strings.Contains(err.Error(), `duplicate id "X1"`) {
		t.Errorf("a duplicate id: %v", err)
	}
	if _, err := LoadCorpusBrief(fstest.MapFS{"f.json": {Data: []byte(`{"id":"X1"}`)}}, "f.json", "f.json"); err == nil {
		t.Error("a file that is no array of records read")
	}
}

// TestEncodings checks that a corpus file may start with a UTF-8
// byte-order mark and that UTF-16 is refused naming the file.
func TestEncodings(t *testing.T) {
	good, err := os.ReadFile("../manifests/corpus/paper/P06.json")
	if err != nil {
		t.Fatal(err)
	}
	recs, errs := ParseScenarios("f.json", append([]byte("\xef\xbb\xbf"), good...))
	if len(errs) != 0 || len(recs) == 0 {
		t.Errorf("with a UTF-8 byte-order mark: %d records, errors %v", len(recs), errs)
	}
	utf16BE := []byte{}
	for _, u := range utf16.Encode([]rune(string(good))) {
		utf16BE = append(utf16BE, byte(u>>8), byte(u))
	}
	_, err = LoadCorpus(fstest.MapFS{"f.json": {Data: utf16BE}}, "f.json")
	if err == nil || err.Error() != "f.json: file is UTF-16 (big-endian); save it as UTF-8" {
		t.Errorf("UTF-16 without a byte-order mark: %v", err)
	}
}

// TestNotAnArray checks the message for a corpus file that holds valid JSON
// other than an array of records.
func TestNotAnArray(t *testing.T) {
	for data, got := range map[string]string{
		`{"id": "S01"}`:       "an object",
		` "S01" `:             "a string",
		`42`:                  "a number",
		`true`:                "a boolean",
		`null`:                "null",
		"\xef\xbb\xbf{\n}\n":  "an object",
		`[{"id": "S01"}, 42]`: "",
	} {
		t.Run(strconv.Quote(data), func(t *testing.T) {
			_, errs := ParseScenarios("dir/f.json", []byte(data))
			want := "dir/f.json: expected a JSON array of scenario records, got " + got
			if got == "" {
				// An element that is not an object is that record's problem.
				want = "dir/f.json: record 2: expected a scenario record (a JSON object), got a number"
			}
			if len(errs) == 0 || !strings.Contains(errors.Join(errs...).Error(), want) {
				t.Errorf("errors %v, want %q", errs, want)
			}
		})
	}
}

// TestDropCodings: a corpus without its codings, dropped after loading or
// as it loads (LoadCorpusWithout), keeps everything else of each record
// and still reports its unconfirmed records.
func TestDropCodings(t *testing.T) {
	good, first, proposed := p06Twin(t)
	var prof map[string]map[string]map[string]any
	b, _ := json.Marshal(first["profile"])
	json.Unmarshal(b, &prof)
	prof["content"]["T"]["proposed"] = true
	proposed["profile"] = prof
	other, _ := json.Marshal([]map[string]any{proposed})
	fsys := fstest.MapFS{"c/a.json": {Data: good}, "c/b.json": {Data: other}}

	full, err := LoadCorpus(fsys, "c")
	if err != nil {
		t.Fatal(err)
	}
	un := full.Unconfirmed()
	if len(un) != 1 || un[0].ID != "Z99" {
		t.Fatalf("unconfirmed: %+v", un)
	}
	lean, err := LoadCorpusWithout(fsys, "c", "c")
	if err != nil {
		t.Fatal(err)
	}
	before := slices.Clone(full.Scenarios)
	full.DropCodings()
	full.DropCodings() // a second time changes nothing
	for _, tc := range []struct {
		name string
		c    *Corpus
	}{{"dropped after loading", full}, {"dropped as it loads", lean}} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			if len(c.Scenarios) != len(before) {
				t.Fatalf("%d records without codings, %d with", len(c.Scenarios), len(before))
			}
			for i, s := range c.Scenarios {
				want := before[i]
				want.Profile = ProfileCoding{}
				if s.Profile.Control != nil || s.Profile.Content != nil || !reflect.DeepEqual(s, want) {
					t.Fatalf("record %s without codings: %+v, want %+v", s.ID, s, want)
				}
			}
			if got := c.Unconfirmed(); !reflect.DeepEqual(got, un) {
				t.Errorf("unconfirmed without codings: %+v, want %+v", got, un)
			}
		})
	}
}

// TestProvenSet: a record may declare its proven preferred policies,
// preferred_policy first, and they load as written; without them the set
// is {preferred_policy}.
func TestProvenSet(t *testing.T) {
	good, err := os.ReadFile("../manifests/corpus/paper/P06.json")
	if err != nil {
		t.Fatal(err)
	}
	with := strings.Replace(string(good), `"preferred_policy": "select_tool",`, `"preferred_policy": "select_tool", "preferred_policies": ["select_tool", "stop_or_escalate"],`, 1)
	for _, tc := range []struct {
		name string
		data string
		want []Policy
	}{
		{"undeclared set is the preferred policy", string(good), []Policy{SelectTool}},
		{"declared set loads as written", with, []Policy{SelectTool, StopOrEscalate}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadCorpus(fstest.MapFS{"c.json": {Data: []byte(tc.data)}}, "c.json")
			if err != nil {
				t.Fatal(err)
			}
			if s := &c.Scenarios[0]; !slices.Equal(s.ProvenSet(), tc.want) {
				t.Errorf("%s: proven set %v (declared %v), want %v", s.ID, s.ProvenSet(), s.PreferredSet, tc.want)
			}
		})
	}
}
