package capture

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/failclosed"
	"github.com/mcpstress/stress/study"
)

var testSalt = []byte("capture-test-salt-0123456789")

func TestSDKVersionMatchesGoMod(t *testing.T) {
	data, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(sdkModule) + `\s+(\S+)`).FindSubmatch(data)
	if m == nil || string(m[1]) != sdkRequired {
		t.Fatalf("go.mod requires %s %s; sdkRequired is %s", sdkModule, m, sdkRequired)
	}
	if got := SDKVersion(); got != sdkModule+" "+sdkRequired {
		t.Errorf("SDKVersion() = %q", got)
	}
}

func TestNameRule(t *testing.T) {
	for name, want := range map[string]bool{
		"get_status": true, "listFiles": true, "search-nodes": true, "read_text_file": true, "lookupItem": true,
		"GetUserProfile": true, "FETCH_URL": true, "get-resource-reference": true, "list_directory_with_sizes": true,
		"echo": true, "get_deleted_items": true, "list_posts": true,
		"getAndDeleteItem": false, "delete_item": false, "create_entities": false, "read_and_write": false,
		"update": false, "status": false, "": false, "getURLForUpload": false, "query_sql_run": false,
		// Yesterday's holes: "check" and "resolve" change state too often to
		// count as read verbs, and the write vocabulary was too narrow.
		"check_and_restart_service": false, "checkAndRestartService": false, "CheckAndRestartService": false,
		"check_status": false, "resolve_incident": false, "trigger-long-running-operation": false,
		"purge_all_records": false, "open_nodes": false, "relative_time": false, "time": false,
	} {
		t.Run(cmp.Or(name, "empty name"), func(t *testing.T) {
			if got := nameRuleReadOnly(name); got != want {
				t.Errorf("NameRuleReadOnly(%q) = %v, want %v (tokens %v)", name, got, want, nameTokens(name))
			}
		})
	}
	if got := nameTokens("getHTTPResponse_v2-x"); !slices.Equal(got, []string{"get", "http", "response", "v2", "x"}) {
		t.Errorf("nameTokens: %v", got)
	}
	// Every write word is found as a part of a snake, kebab, camel or
	// Pascal case name after a read verb.
	words := strings.Fields(`restart wipe erase flush shutdown terminate kill rm drop purge reset revoke send post
		publish deploy charge pay transfer create update delete write set put patch insert remove move rename upload
		commit push merge execute run exec install approve cancel refund grant lock unlock enable disable start stop
		reboot scale truncate destroy overwrite`)
	for _, w := range words {
		title := strings.ToUpper(w[:1]) + w[1:]
		for _, name := range []string{"get_and_" + w, "get-and-" + w + "-now", "getAnd" + title, "GetAnd" + title + "Records", "LIST_THEN_" + strings.ToUpper(w)} {
			t.Run(name, func(t *testing.T) {
				if nameRuleReadOnly(name) {
					t.Errorf("NameRuleReadOnly(%q) = true: %q is a write word", name, w)
				}
			})
		}
	}
}

// TestAccessRules checks which signals make a tool callable: every signal
// must agree it is read-only; only the user's -read-only overrides them.
func TestAccessRules(t *testing.T) {
	tool := func(name string, ann map[string]any) map[string]any {
		m := map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}}
		if ann != nil {
			m["annotations"] = ann
		}
		return m
	}
	cases := []struct {
		tool  map[string]any
		want  bool
		basis string // a word of the recorded basis
	}{
		{tool("purge_all_records", map[string]any{"readOnlyHint": true, "destructiveHint": true}), false, "destructiveHint"},
		{tool("get_records", map[string]any{"readOnlyHint": true, "destructiveHint": true}), false, "destructiveHint"},
		{tool("get_records2", map[string]any{"destructiveHint": true}), false, "destructiveHint"},
		{tool("get_records3", map[string]any{"readOnlyHint": false}), false, "readOnlyHint"},
		{tool("get_records4", map[string]any{"readOnlyHint": "true"}), false, "readOnlyHint"},
		{tool("get_records5", map[string]any{"readOnlyHint": true, "destructiveHint": "no"}), false, "destructiveHint"},
		{tool("sync_now", map[string]any{"readOnlyHint": true}), false, "name rule"},
		{tool("check_and_restart_service", nil), false, "name rule"},
		{tool("get_records6", map[string]any{"readOnlyHint": true, "destructiveHint": false}), true, "readOnlyHint"},
		{tool("echo", map[string]any{"readOnlyHint": true}), true, "readOnlyHint"},
		{tool("get_status", nil), true, "name rule"},
		{tool("get_status2", map[string]any{"idempotentHint": true}), true, "name rule"},
	}
	var tools []map[string]any
	for _, c := range cases {
		tools = append(tools, c.tool)
	}
	page, _ := json.Marshal(map[string]any{"tools": tools})
	parsed, err := parseTools([]json.RawMessage{page}, nil)
	if err != nil || len(parsed) != len(cases) {
		t.Fatal(err, len(parsed))
	}
	for i, c := range cases {
		t.Run(c.tool["name"].(string), func(t *testing.T) {
			if p := parsed[i]; p.ReadOnly != c.want || !strings.Contains(p.Basis, c.basis) {
				t.Errorf("%s %v: read-only %v (%s), want %v (%s)", p.Name, c.tool["annotations"], p.ReadOnly, p.Basis, c.want, c.basis)
			}
		})
	}
	// The user's -read-only overrides every signal, and the basis says so.
	parsed, _ = parseTools([]json.RawMessage{page}, map[string]bool{"purge_all_records": true})
	if p := parsed[0]; !p.ReadOnly || !strings.Contains(p.Basis, "allow-list") || !strings.Contains(p.Basis, "destructiveHint") {
		t.Errorf("override: %+v", p)
	}
}

func TestParseSentinel(t *testing.T) {
	sp, err := ParseSentinel(`find:id="x"`)
	if err != nil || sp.Tool != "find" || sp.Field != "id" || string(sp.Value) != `"x"` {
		t.Errorf("got %+v, %v", sp, err)
	}
	for _, bad := range []string{"", ":id", "find=1", "find:id=not json"} {
		t.Run(fmt.Sprintf("rejects %q", bad), func(t *testing.T) {
			if _, err := ParseSentinel(bad); err == nil {
				t.Errorf("ParseSentinel(%q): want an error", bad)
			}
		})
	}
}

// TestPlanSafety checks that only read-only tools are ever planned, that
// the allow-list overrides, and that sentinels need the allow-list.
func TestPlanSafety(t *testing.T) {
	schema := func(req ...string) map[string]any {
		props := map[string]any{}
		var r []any
		for _, f := range req {
			props[f] = map[string]any{"type": "string"}
			r = append(r, f)
		}
		return map[string]any{"type": "object", "properties": props, "required": r}
	}
	page := func(tools ...map[string]any) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"tools": tools})
		return b
	}
	tool := func(name string, ann map[string]any, req ...string) map[string]any {
		m := map[string]any{"name": name, "inputSchema": schema(req...)}
		if ann != nil {
			m["annotations"] = ann
		}
		return m
	}
	pages := []json.RawMessage{page(
		tool("delete_item", nil, "id"),
		tool("get_secret", map[string]any{"readOnlyHint": false}, "id"),
		tool("sync_now", map[string]any{"readOnlyHint": true}, "id"),
		tool("lookup_now", map[string]any{"readOnlyHint": true}, "id"),
		tool("get_noargs", nil),
		tool("find_item", nil, "id", "region"),
	)}
	tools, err := parseTools(pages, nil)
	if err != nil {
		t.Fatal(err)
	}
	basis := map[string]string{}
	for _, tl := range tools {
		basis[tl.Name] = tl.Basis
		if want := tl.Name == "lookup_now" || tl.Name == "get_noargs" || tl.Name == "find_item"; tl.ReadOnly != want {
			t.Errorf("%s: read-only %v, want %v (%s)", tl.Name, tl.ReadOnly, want, tl.Basis)
		}
	}
	if basis["lookup_now"] != basisAnnotation || basis["sync_now"] != basisAnnotationNo || basis["get_secret"] != basisNotReadOnly+" false" || basis["find_item"] != basisNameRule {
		t.Errorf("bases: %v", basis)
	}
	plans, notes := plan(tools, "probe_missing_tool_0000", "", []SentinelSpec{{Tool: "delete_item"}, {Tool: "find_item"}, {Tool: "nope"}}, "abcd")
	var got []string
	for _, p := range plans {
		got = append(got, string(p.Kind)+":"+p.Tool+":"+p.Field)
		if p.Tool == "delete_item" || p.Tool == "get_secret" || p.Tool == "sync_now" {
			t.Errorf("planned a call to %s, which is not read-only", p.Tool)
		}
	}
	want := []string{"nonexistent_tool:probe_missing_tool_0000:", "wrong_type:lookup_now:id", "missing_required:lookup_now:id", "out_of_domain_sentinel:find_item:id"}
	if !slices.Equal(got, want) {
		t.Errorf("plans %v, want %v", got, want)
	}
	if !strings.Contains(strings.Join(notes, "\n"), `tool "delete_item" is not read-only`) || !strings.Contains(strings.Join(notes, "\n"), `tool "nope" is not advertised`) {
		t.Errorf("notes: %q", notes)
	}
	// The sentinel fills the other required field with a placeholder.
	if a := plans[3].Arguments; a["id"] != "stress-probe-sentinel-abcd" || a["region"] != "stress-probe" {
		t.Errorf("sentinel arguments %v", a)
	}
	// Wrong type: the targeted field gets another JSON type; missing: it is absent.
	if plans[1].Arguments["id"] != 12345 {
		t.Errorf("wrong type arguments %v", plans[1].Arguments)
	}
	if _, ok := plans[2].Arguments["id"]; ok {
		t.Errorf("missing-field arguments %v", plans[2].Arguments)
	}

	// The user's allow-list makes a tool callable; naming a probe tool picks it.
	tools, _ = parseTools(pages, map[string]bool{"delete_item": true})
	plans, _ = plan(tools, "probe_missing_tool_0000", "delete_item", nil, "abcd")
	if len(plans) != 3 || plans[1].Tool != "delete_item" {
		t.Errorf("allow-listed probe tool: %+v", plans)
	}
	// A named probe tool that is not read-only is refused with a note.
	tools, _ = parseTools(pages, nil)
	plans, notes = plan(tools, "probe_missing_tool_0000", "get_secret", nil, "abcd")
	if len(plans) != 1 || !strings.Contains(strings.Join(notes, " "), "name it with -read-only") {
		t.Errorf("plans %+v, notes %q", plans, notes)
	}
}

func TestScrub(t *testing.T) {
	sc := newScrubber(map[string]string{"find_user": "tool_1", "acme": "M1", "find": "tool_2"}, false)
	text := "Invalid region for find_user (acme): see /srv/acme/x.db and https://acme.example/a; my_find_user, findUser; find me"
	got := sc.text(text)
	// Names are pseudonymized inside paths, URLs and longer identifiers
	// too; paths and URLs are only flagged, not redacted, in the failure
	// text. The one-word name "find" is left alone in running text.
	want := "Invalid region for tool_1 (M1): see /srv/M1/x.db and https://M1.example/a; my_tool_1, tool_1; find me"
	if got != want {
		t.Errorf("text:\n got %s\nwant %s", got, want)
	}
	if sc.flagged[kindPath] != 1 || sc.flagged[kindURL] != 1 || len(sc.redacted) != 0 {
		t.Errorf("flagged %v, redacted %v", sc.flagged, sc.redacted)
	}
	other := sc.other("mail ops@acme.example, key sk-live0123456789abcdef, jwt eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl, " +
		"Bearer abcdefgh12345678, path ~/notes/a.txt and C:\\Users\\x, pointer /query stays, 1/2 stays, " +
		"hash 0123456789abcdef0123456789abcdef01234567")
	for _, keep := range []string{"/query stays", "1/2 stays"} {
		if !strings.Contains(other, keep) {
			t.Errorf("%q lost in %s", keep, other)
		}
	}
	for _, gone := range []string{"ops@", "sk-live", "eyJ", "abcdefgh1234", "notes", "Users", "0123456789abcdef0123"} {
		if strings.Contains(other, gone) {
			t.Errorf("%q not redacted in %s", gone, other)
		}
	}
	if sc.redacted[kindEmail] != 1 || sc.redacted[kindToken] != 4 || sc.redacted[kindPath] != 2 {
		t.Errorf("redacted %v in %s", sc.redacted, other)
	}
	// Redacting the failure text too.
	sc = newScrubber(nil, true)
	if got := sc.text("open '/tmp/a/b'"); got != "open '<redacted:path>'" || sc.redacted[kindPath] != 1 {
		t.Errorf("redacted text %q, %v", got, sc.redacted)
	}
}

func TestLineSplitterExact(t *testing.T) {
	rec := &Recorder{}
	s := lineSplitter{rec: rec, dir: dirRecv}
	stream := "{\"a\":1}\n\n{\"b\":\"\u00e9\"}\r\n{\"c\":"
	for i := 0; i < len(stream); i += 3 { // odd chunking
		s.feed([]byte(stream[i:min(i+3, len(stream))]))
	}
	s.feed([]byte("2}\n"))
	s.feed([]byte{'{', 0xff, '}', '\n'})
	fr := rec.Frames()
	want := []string{`{"a":1}`, "{\"b\":\"\u00e9\"}\r", `{"c":2}`, "{\xff}"}
	if len(fr) != len(want) {
		t.Fatalf("%d frames, want %d: %+v", len(fr), len(want), fr)
	}
	for i, w := range want {
		if string(fr[i].Bytes()) != w {
			t.Errorf("frame %d: %q, want %q", i, fr[i].Bytes(), w)
		}
	}
	if fr[3].RawBase64 == nil || fr[3].Raw != "" {
		t.Errorf("invalid UTF-8 must be kept as base64: %+v", fr[3])
	}
	var b bytes.Buffer
	if err := WriteFrames(&b, fr); err != nil {
		t.Fatal(err)
	}
	back, err := readFrames("x", &b)
	if err != nil || len(back) != 4 || string(back[3].Bytes()) != "{\xff}" || string(back[1].Bytes()) != want[1] {
		t.Errorf("round trip: %v %+v", err, back)
	}
}

func TestSSETee(t *testing.T) {
	rec := &Recorder{}
	body := "id: prime\ndata:\n\nevent: message\r\ndata: {\"id\":1,\r\ndata: \"x\":2}\r\n\r\n: comment\n\ndata:{\"id\":2}\n\n"
	s := &sseTee{body: nopRC{strings.NewReader(body)}, rec: rec, info: HTTPInfo{Method: "POST", Status: 200}}
	buf := make([]byte, 5)
	for {
		if _, err := s.Read(buf); err != nil {
			break
		}
	}
	fr := rec.Frames()
	if len(fr) != 2 || fr[0].Raw != "{\"id\":1,\n\"x\":2}" || fr[0].HTTP.Event != "message" || fr[1].Raw != `{"id":2}` {
		t.Errorf("frames %+v", fr)
	}
}

type nopRC struct{ *strings.Reader }

func (nopRC) Close() error { return nil }

func TestHostAllowed(t *testing.T) {
	for _, h := range []string{"localhost", "127.0.0.1", "127.9.9.9", "::1"} {
		t.Run("allows "+h, func(t *testing.T) {
			if err := hostAllowed(h, nil); err != nil {
				t.Errorf("%s: %v", h, err)
			}
		})
	}
	for _, h := range []string{"example.com", "10.0.0.1", "192.168.1.1", "0.0.0.0"} {
		t.Run("refuses "+h, func(t *testing.T) {
			if err := hostAllowed(h, nil); err == nil {
				t.Errorf("%s: allowed without being named", h)
			}
		})
	}
	if err := hostAllowed("mcp.example.com", []string{"MCP.example.com"}); err != nil {
		t.Errorf("named host refused: %v", err)
	}
	o := Options{Salt: testSalt}
	err := o.Check([]Target{{Label: "x", URL: "http://example.com/mcp"}})
	if err == nil || !strings.Contains(err.Error(), "-allow-host") {
		t.Errorf("remote URL: %v", err)
	}
	err = (&Options{}).Check([]Target{{Label: "a", Command: []string{"x"}, URL: "http://127.0.0.1/"}, {Label: "a", Command: []string{"y"}}})
	for _, want := range []string{"salt", "want exactly one of a command and a URL", "duplicate label"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v, want %q", err, want)
		}
	}
}

func TestCheckOutput(t *testing.T) {
	tool := &Tool{Name: "t", OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "number"}}, "required": []any{"v"}}}
	cases := []struct {
		name string
		res  *mcp.CallToolResult
		tool *Tool
		want string
		code int
	}{
		{"conforming success accepted", &mcp.CallToolResult{StructuredContent: map[string]any{"v": 1}}, tool, study.OutputAccepted, 0},
		{"off-schema success rejected", &mcp.CallToolResult{StructuredContent: map[string]any{"w": 1}}, tool, study.OutputRejected, -32602},
		{"success without structuredContent rejected", &mcp.CallToolResult{}, tool, study.OutputRejected, -32600},
		{"isError without structuredContent accepted", &mcp.CallToolResult{IsError: true}, tool, study.OutputAccepted, 0},
		{"off-schema isError rejected", &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"w": 1}}, tool, study.OutputRejected, -32602},
		{"tool without outputSchema not checked", &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"w": 1}}, nil, study.OutputNoSchema, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CheckOutput(c.tool, c.res)
			if got.Verdict != c.want || got.Code != c.code {
				t.Errorf("%+v, want %s %d", got, c.want, c.code)
			}
		})
	}
}

// fixtureHTTP serves the fixture over streamable HTTP on the loopback.
func fixtureHTTP(t *testing.T) (string, *callLog) {
	t.Helper()
	calls := &callLog{}
	srv := fixtureServer(calls)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL, calls
}

func fixtureOptions() Options {
	return Options{
		Salt: testSalt, Interval: 5 * time.Millisecond, ProbeTool: "lookup_item", Timeout: 10 * time.Second,
		Sentinels: []SentinelSpec{{Tool: "lookup_item"}, {Tool: "find_user"}, {Tool: "list_things"}, {Tool: "delete_item"}, {Tool: "read_secret"}},
	}
}

func outcomeOf(t *testing.T, s *Server, kind study.Probe, tool string) *Outcome {
	t.Helper()
	for i := range s.Outcomes {
		if s.Outcomes[i].Kind == kind && (tool == "" || s.Outcomes[i].Tool == tool) {
			return &s.Outcomes[i]
		}
	}
	t.Fatalf("no %s outcome for %q", kind, tool)
	return nil
}

// TestGoServerOverHTTP captures from a Go SDK server over loopback HTTP and
// checks every probe's surfaces, the frames, the safety rules and the
// written corpus.
func TestGoServerOverHTTP(t *testing.T) {
	url, calls := fixtureHTTP(t)
	o := fixtureOptions()
	servers, err := Run(context.Background(), []Target{{Label: "acme", URL: url}}, o)
	if err != nil {
		t.Fatal(err)
	}
	s := servers[0]
	if s.Err != nil {
		t.Fatalf("capture: %v (notes %q)", s.Err, s.Notes)
	}
	if s.Name != "acme-inventory" || s.Version != "3.1.4" || s.ProtocolVersion == "" || s.SDK != sdkModule+" "+sdkRequired {
		t.Errorf("server info: %q %q %q %q", s.Name, s.Version, s.ProtocolVersion, s.SDK)
	}
	// Go SDK servers raise a real JSON-RPC error for an unknown tool.
	nx := outcomeOf(t, s, study.NonexistentTool, "")
	if nx.Surface != study.ProtocolError || nx.Wire != study.ProtocolError || nx.RPC == nil || nx.RPC.Code != -32602 || !strings.Contains(nx.RPC.Message, nx.Tool) {
		t.Errorf("nonexistent tool: %+v", nx)
	}
	// The Go SDK validates typed arguments and returns isError results.
	for _, k := range []study.Probe{study.WrongType, study.MissingRequired} {
		o := outcomeOf(t, s, k, "lookup_item")
		if o.Surface != study.ToolError || o.Wire != study.ToolError || o.Field != "id" {
			t.Errorf("%s: surface %s, wire %s, field %s", k, o.Surface, o.Wire, o.Field)
		}
	}
	want := map[string]study.Surface{"lookup_item": study.SuccessShaped, "find_user": study.ProtocolError, "list_things": study.Silent}
	for tool, surf := range want {
		if o := outcomeOf(t, s, study.Sentinel, tool); o.Surface != surf || o.Status != statusFailure {
			t.Errorf("sentinel %s: %s (%s), want %s", tool, o.Surface, o.Status, surf)
		}
	}
	for _, tl := range []string{"delete_item", "read_secret"} {
		for _, o := range s.Outcomes {
			if o.Tool == tl {
				t.Errorf("probed %s, which is not read-only", tl)
			}
		}
		if !strings.Contains(strings.Join(s.Notes, "\n"), `"`+tl+`" is not read-only`) {
			t.Errorf("no note for refusing %s: %q", tl, s.Notes)
		}
	}
	// Executed tools: the SDK rejects bad arguments before lookup_item runs.
	if got := calls.list(); !slices.Equal(got, []string{"lookup_item", "find_user", "list_things"}) {
		t.Errorf("executed tools %v", got)
	}
	if s.Calls != 1+len(s.Outcomes) {
		t.Errorf("calls %d for %d probes", s.Calls, len(s.Outcomes))
	}
	// Frames: each probe's request and response, byte for byte as sent.
	for _, o := range s.Outcomes {
		if o.Request == nil || o.Response == nil || o.Request.HTTP == nil || o.Response.HTTP == nil {
			t.Fatalf("%s: frames missing: %+v %+v", o.Kind, o.Request, o.Response)
		}
		for _, f := range []*Frame{o.Request, o.Response} {
			if _, err := f.Message(); err != nil {
				t.Errorf("%s frame %d does not parse: %v", o.Kind, f.Seq, err)
			}
		}
		var req struct {
			Params struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal(o.Request.Bytes(), &req); err != nil || req.Params.Name != o.Tool {
			t.Errorf("%s: request frame %s", o.Kind, o.Request.Raw)
		}
	}

	dir := filepath.Join(t.TempDir(), "out")
	w, err := Write(dir, servers, o)
	if err != nil {
		t.Fatal(err)
	}
	if w.Scenarios != 6 || w.Servers != 1 {
		t.Errorf("wrote %d scenarios from %d servers, want 6 from 1", w.Scenarios, w.Servers)
	}
	c, err := study.LoadCorpus(os.DirFS(dir), CorpusDir)
	if err != nil {
		t.Fatal(err)
	}
	byProbe := map[string]*study.Scenario{}
	for i := range c.Scenarios {
		sc := &c.Scenarios[i]
		key := string(sc.Probe)
		if sc.Probe == study.Sentinel {
			key += ":" + string(sc.Surface)
		}
		byProbe[key] = sc
		if sc.Capture == nil || !sc.Capture.Proposed || sc.Capture.View != study.ViewGoSDK || sc.Capture.Frames != "../private/frames/"+s.Pseudonym+".jsonl" {
			t.Errorf("%s: capture %+v", sc.ID, sc.Capture)
		}
	}
	// Every counterfactual control envelope passes the fail-closed client
	// (docs/specification.md section 6) with the preferred policy, in both
	// modes.
	for _, sc := range c.Scenarios {
		for _, mode := range []failclosed.Mode{failclosed.Registry, failclosed.ExplicitAction} {
			if d := failclosed.Decide(sc.ControlEnvelope, mode); d.Policy != sc.Preferred {
				t.Errorf("%s %s: fail-closed client chose %s (%s: %s)", sc.ID, mode, d.Policy, d.Reason, d.Message)
			}
		}
	}
	ss := byProbe["out_of_domain_sentinel:success_shaped"]
	if ss == nil || ss.Cause != study.InvalidValue || study.ProfileOf(ss.Profile.Control).String() != "000000" || study.ProfileOf(ss.Profile.Content).String() != "100000" {
		t.Errorf("success-shaped lookup (like paper S11): %+v", ss)
	}
	pe := byProbe["out_of_domain_sentinel:protocol_error"]
	if pe == nil || pe.Capture.Redacted[kindURL] != 1 || pe.Capture.Redacted[kindEmail] != 1 || pe.Capture.Redacted[kindPath] != 1 || pe.Capture.Redacted[kindToken] != 1 {
		t.Fatalf("redactions in error data: %+v", pe.Capture)
	}
	if study.ProfileOf(pe.Profile.Control).String() != "110000" {
		t.Errorf("-32602 protocol error control profile %s, want 110000", study.ProfileOf(pe.Profile.Control))
	}
	if !strings.Contains(pe.Profile.Control["T"].Rationale, "check them by hand") {
		t.Errorf("typed members not flagged: %q", pe.Profile.Control["T"].Rationale)
	}
	nxs := byProbe["nonexistent_tool"]
	if nxs.Target.Kind != "tool" || !strings.HasPrefix(nxs.Target.Name, "probe_missing_tool_") || study.ProfileOf(nxs.Profile.Content).String() != "111100" {
		t.Errorf("unknown tool record: %+v %s", nxs.Target, study.ProfileOf(nxs.Profile.Content))
	}
	if sil := byProbe["out_of_domain_sentinel:silent"]; sil == nil || study.ProfileOf(sil.Profile.Content).String() != "000000" {
		t.Errorf("silent record: %+v", sil)
	}
	// Nothing identifying in the corpus.
	corpus, err := os.ReadFile(filepath.Join(dir, w.Files[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"acme", "lookup_item", "find_user", "list_things", "ops@", "/var/lib", "sk-live", "docs.acme", "127.0.0.1"} {
		if bytes.Contains(corpus, []byte(secret)) {
			t.Errorf("corpus contains %q", secret)
		}
	}
	// The private frames file parses and holds every probe's request id.
	f, err := os.Open(filepath.Join(dir, framesName(s.Pseudonym)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	frames, err := readFrames(f.Name(), f)
	if err != nil || len(frames) != len(s.Frames) {
		t.Fatalf("frames file: %v, %d frames, want %d", err, len(frames), len(s.Frames))
	}
	ids := map[string]bool{}
	for _, fr := range frames {
		if _, err := fr.Message(); err != nil {
			t.Errorf("frame %d: %v", fr.Seq, err)
		}
		if fr.Dir == dirSend {
			ids[string(fr.RequestID())] = true
		}
	}
	for _, sc := range c.Scenarios {
		if !ids[string(sc.Capture.RequestID)] {
			t.Errorf("%s: request id %s not in the frames", sc.ID, sc.Capture.RequestID)
		}
	}
	// A second Write into the same directory is refused.
	if _, err := Write(dir, servers, o); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("rewrite: %v", err)
	}
}

// TestValidatingView captures an off-schema isError result with the
// client-side outputSchema check on.
func TestValidatingView(t *testing.T) {
	url, _ := fixtureHTTP(t)
	o := fixtureOptions()
	o.Sentinels = []SentinelSpec{{Tool: "get_reading"}}
	o.ValidateOutput = true
	servers, err := Run(context.Background(), []Target{{Label: "acme", URL: url}}, o)
	if err != nil || servers[0].Err != nil {
		t.Fatal(err, servers[0].Err)
	}
	out := outcomeOf(t, servers[0], study.Sentinel, "get_reading")
	if out.Wire != study.ToolError || out.Surface != study.ProtocolError || out.Check == nil || out.Check.Code != -32602 {
		t.Fatalf("get_reading: wire %s, surface %s, check %+v", out.Wire, out.Surface, out.Check)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := Write(dir, servers, o); err != nil {
		t.Fatal(err)
	}
	c, err := study.LoadCorpus(os.DirFS(dir), CorpusDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range c.Scenarios {
		if sc.Capture.View != study.ViewValidating || (sc.Capture.OutputValidation == nil) != (sc.Capture.WireSurface == study.ProtocolError) {
			t.Errorf("%s: view %s, check %+v", sc.ID, sc.Capture.View, sc.Capture.OutputValidation)
		}
		if sc.Probe == study.Sentinel && (sc.Surface != study.ProtocolError || sc.Capture.WireSurface != study.ToolError ||
			!strings.Contains(string(sc.Observation), exceptionOutputSchema)) {
			t.Errorf("rejected record: %s %s %s", sc.Surface, sc.Capture.WireSurface, sc.Observation)
		}
	}
}

func TestCallCap(t *testing.T) {
	url, calls := fixtureHTTP(t)
	o := fixtureOptions()
	o.MaxCalls = 3
	o.Interval = 100 * time.Millisecond
	start := time.Now()
	servers, err := Run(context.Background(), []Target{{Label: "acme", URL: url}}, o)
	// A lower bound only: three requests need two intervals between them.
	if elapsed := time.Since(start); elapsed < 2*o.Interval {
		t.Errorf("3 requests took %v, less than two intervals of %v", elapsed, o.Interval)
	}
	if err != nil || servers[0].Err != nil {
		t.Fatal(err, servers[0].Err)
	}
	s := servers[0]
	var done, skipped int
	for _, out := range s.Outcomes {
		if out.Status == statusSkipped {
			skipped++
		} else {
			done++
		}
	}
	if s.Calls != 3 || done != 2 || skipped != len(s.Outcomes)-2 || len(calls.list()) != 0 {
		t.Errorf("calls %d, probes done %d, skipped %d, executed %v", s.Calls, done, skipped, calls.list())
	}
}

// helperTarget runs this test binary as a stdio Go SDK server.
func helperTarget(t *testing.T, mode string) (Target, string) {
	t.Helper()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Target{Label: "helper-" + mode, Command: []string{exe, "-test.run=^$"}, Env: []string{
		"CAPTURE_HELPER=" + mode, "CAPTURE_HELPER_PID=" + filepath.Join(dir, "pid"),
		"CAPTURE_HELPER_CALLS=" + filepath.Join(dir, "calls"), "CAPTURE_HELPER_WIRE=" + filepath.Join(dir, "wire"),
	}}, dir
}

func helperPID(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestStdioFramesExact checks, over stdio, that the recorded frames are the
// bytes the server read and wrote, and that a well-behaved server exits on
// EOF.
func TestStdioFramesExact(t *testing.T) {
	target, dir := helperTarget(t, "serve")
	o := fixtureOptions()
	o.Sentinels = nil
	o.ProtocolVersion = "2025-06-18"
	servers, err := Run(context.Background(), []Target{target}, o)
	if err != nil || servers[0].Err != nil {
		t.Fatal(err, servers[0].Err)
	}
	s := servers[0]
	if s.Exit != exitClean || s.ProtocolVersion != "2025-06-18" {
		t.Errorf("exit %q, protocol %q", s.Exit, s.ProtocolVersion)
	}
	var sent, recv bytes.Buffer
	for _, f := range s.Frames {
		b := &sent
		if f.Dir == dirRecv {
			b = &recv
		}
		b.Write(f.Bytes())
		b.WriteByte('\n')
	}
	in, err1 := os.ReadFile(filepath.Join(dir, "wire.in"))
	out, err2 := os.ReadFile(filepath.Join(dir, "wire.out"))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !bytes.Equal(sent.Bytes(), in) {
		t.Errorf("sent frames differ from the bytes the server read:\n%s\n---\n%s", sent.Bytes(), in)
	}
	if !bytes.Equal(recv.Bytes(), out) {
		t.Errorf("received frames differ from the bytes the server wrote:\n%s\n---\n%s", recv.Bytes(), out)
	}
	// The first request is initialize at the pinned version, with no roots.
	var first struct {
		Method string `json:"method"`
		Params struct {
			ProtocolVersion string         `json:"protocolVersion"`
			Capabilities    map[string]any `json:"capabilities"`
		} `json:"params"`
	}
	if err := json.Unmarshal(s.Frames[0].Bytes(), &first); err != nil || first.Method != "initialize" || first.Params.ProtocolVersion != "2025-06-18" || len(first.Params.Capabilities) != 0 {
		t.Errorf("first frame %s", s.Frames[0].Raw)
	}
	if !waitGone(t, helperPID(t, dir), 30*time.Second) {
		t.Error("the server is still running")
	}
}

// TestStubbornServerKilled checks that a server ignoring stdin EOF and
// SIGTERM is killed.
func TestStubbornServerKilled(t *testing.T) {
	target, dir := helperTarget(t, "stubborn")
	o := fixtureOptions()
	o.Sentinels = nil
	o.Grace = 100 * time.Millisecond
	servers, err := Run(context.Background(), []Target{target}, o)
	if err != nil || servers[0].Err != nil {
		t.Fatal(err, servers[0].Err)
	}
	if servers[0].Exit != exitKilled {
		t.Errorf("exit %q, want %q", servers[0].Exit, exitKilled)
	}
	if !waitGone(t, helperPID(t, dir), 30*time.Second) {
		t.Error("the server is still running")
	}
	if !bytes.Contains(servers[0].Stderr, []byte("helper: session ended")) {
		t.Errorf("stderr not kept: %q", servers[0].Stderr)
	}
}

func TestConnectFailureKeepsStderr(t *testing.T) {
	o := fixtureOptions()
	servers, err := Run(context.Background(), []Target{{Label: "broken", Command: []string{"sh", "-c", "echo not-json; echo oops >&2; read request; exit 3"}}}, o)
	if err != nil {
		t.Fatal(err)
	}
	s := servers[0]
	if s.Err == nil || !bytes.Contains(s.Stderr, []byte("oops")) || len(s.Frames) == 0 || s.Frames[len(s.Frames)-1].Raw != "not-json" && s.Frames[0].Raw != "not-json" {
		t.Errorf("err %v, stderr %q, frames %+v", s.Err, s.Stderr, s.Frames)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := Write(dir, servers, o); err == nil || !strings.Contains(err.Error(), "no failures captured") {
		t.Errorf("Write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, LogFile)); err != nil {
		t.Errorf("the private log must be written anyway: %v", err)
	}
}

// TestPlanFollowsRefs: a required field whose schema is a local $ref (as
// Pydantic writes a nested type or an enum) is probed by the type it
// names, and a field it does not target gets the enum's first value; a
// $ref that does not resolve, or a cycle, leaves the field of unknown
// type.
func TestPlanFollowsRefs(t *testing.T) {
	in := map[string]any{
		"type": "object",
		"$defs": map[string]any{
			"Id":    map[string]any{"type": "string"},
			"Color": map[string]any{"enum": []any{"red", "blue"}, "type": "string"},
			"Loop":  map[string]any{"$ref": "#/$defs/Loop"},
		},
		"definitions": map[string]any{"Count": map[string]any{"type": "integer", "minimum": 3.0}},
		"properties": map[string]any{
			"id":    map[string]any{"$ref": "#/$defs/Id", "description": "the item"},
			"color": map[string]any{"$ref": "#/$defs/Color"},
			"n":     map[string]any{"$ref": "#/definitions/Count"},
			"loop":  map[string]any{"$ref": "#/$defs/Loop"},
			"gone":  map[string]any{"$ref": "#/$defs/Missing"},
		},
		"required": []any{"id", "color", "n", "loop", "gone"},
	}
	var got []string
	for _, f := range requiredFields(in) {
		got = append(got, f.Name+":"+f.Type)
	}
	if want := "id:string color:string n:integer loop: gone:"; strings.Join(got, " ") != want {
		t.Errorf("fields %q, want %q", strings.Join(got, " "), want)
	}
	fs := requiredFields(in)
	if v, ok := placeholder(fs[1]); !ok || v != "red" {
		t.Errorf("placeholder of color: %v %v, want the enum's first value", v, ok)
	}
	if v, ok := placeholder(fs[2]); !ok || v != 3.0 {
		t.Errorf("placeholder of n: %v %v, want the minimum", v, ok)
	}
	if fs[0].Schema["description"] != "the item" {
		t.Errorf("the property's own keywords were lost: %v", fs[0].Schema)
	}
}
