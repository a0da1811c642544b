package capture

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpstress/stress/internal/testserver/hostilemcp"
)

// TestScrubPatterns runs every canary kind through the scrubber, inside the
// failure text (with and without -redact-text) and outside it: none may
// survive. Ordinary failure wording must.
func TestScrubPatterns(t *testing.T) {
	for _, c := range hostilemcp.Canaries {
		for _, mode := range []string{"text", "text+redact", "other"} {
			t.Run(c.Kind+" "+mode, func(t *testing.T) {
				sc := newScrubber(nil, mode == "text+redact")
				in := "lookup failed (" + c.Text + "), retry later"
				got := sc.other(in)
				if mode != "other" {
					got = sc.text(in)
				}
				if strings.Contains(strings.ToLower(got), strings.ToLower(c.Core)) {
					t.Errorf("%s, %s: %q survives in %q", c.Kind, mode, c.Core, got)
				}
				if !strings.HasPrefix(got, "lookup failed (") || !strings.HasSuffix(got, "), retry later") {
					t.Errorf("%s, %s: the text around it was damaged: %q", c.Kind, mode, got)
				}
			})
		}
	}
	// Failure wording that looks a little like a secret is kept.
	sc := newScrubber(nil, false)
	for _, keep := range []string{
		"Invalid token: expected string, received number",
		"Basic authentication required",
		"Bearer token missing",
		"the password field is required; token: undefined",
		"skipping validation of the skateboarding field",
		"version 1.2.3 at 12:30:45",
		"process.env.HOME is unset",
		"MCP error -32602: Input validation error: Invalid arguments for tool x",
		"a time-consuming task, e.g. a sync",
		"see /query and the pointer /a/0",
	} {
		t.Run(keep, func(t *testing.T) {
			if got := sc.text(keep); got != keep {
				t.Errorf("failure text changed:\n got %q\nwant %q", got, keep)
			}
		})
	}
	// Other URLs and paths are kept (and flagged) in the failure text, and
	// redacted outside it and with -redact-text.
	generic := "see https://docs.example.com/errors#e1 and /var/lib/acme/users.db"
	sc = newScrubber(nil, false)
	if got := sc.text(generic); got != generic || sc.flagged[kindURL] != 1 || sc.flagged[kindPath] != 1 {
		t.Errorf("generic locators in the failure text: %q, flagged %v", got, sc.flagged)
	}
	for _, got := range []string{sc.other(generic), newScrubber(nil, true).text(generic)} {
		if strings.Contains(got, "docs.example") || strings.Contains(got, "/var/lib") {
			t.Errorf("generic locators not redacted: %q", got)
		}
	}
	// JSON values: keys are scrubbed, values under credential keys go whole.
	v := sc.value(map[string]any{
		"password": "x", "api_key": 12345678, "credentials": map[string]any{"user": "svc"}, "alice@example.com": 1,
		"owner": "alice@example.com", "max_tokens": 5, "next": []any{"10.1.2.3", "db.corp"},
	})
	b, _ := json.Marshal(v)
	for _, gone := range []string{`"x"`, "12345678", "svc", "alice", "10.1.2.3", "db.corp"} {
		if strings.Contains(string(b), gone) {
			t.Errorf("%s survives in %s", gone, b)
		}
	}
	if !strings.Contains(string(b), `"max_tokens":5`) {
		t.Errorf("an ordinary member was redacted: %s", b)
	}
}

// TestScrubNames checks the pseudonym rule: real names are found in any
// case and inside longer identifiers; a one-word name only where it stands
// as an identifier, so the ordinary word is left alone.
func TestScrubNames(t *testing.T) {
	names := map[string]string{
		"relative_time": "tool_r1", "time": "tool_t1", "get-resource-reference": "tool_g1", "echo": "tool_e1",
		"acme-inventory": "M1", "acme": "M1", "tool": "tool_x1",
	}
	for in, want := range map[string]string{
		"invalid_relative_time: RELATIVE_TIME, relativeTime and Relative-Time": "invalid_tool_r1: tool_r1, tool_r1 and tool_r1",
		"getResourceReference failed (get_resource_reference)":                 "tool_g1 failed (tool_g1)",
		"It is about time; the time is 12:00, a time-consuming runtime":        "It is about time; the time is 12:00, a time-consuming runtime",
		"timestamp and sometime and times":                                     "timestamp and sometime and times",
		"Unknown tool: time":                                                   "Unknown tool: tool_t1",
		"tool 'time' failed; call \"TIME\" or `time` or tools/time or time()":  "tool 'tool_t1' failed; call \"tool_t1\" or `tool_t1` or tools/tool_t1 or tool_t1()",
		"time": "tool_t1",
		"Invalid arguments for tool echo: expected string":       "Invalid arguments for tool tool_e1: expected string",
		"the echo of a voice":                                    "the echo of a voice",
		"served by acme-inventory at acme.example and ACME_HOME": "served by M1 at M1.example and M1_HOME",
		"the acme of perfection":                                 "the acme of perfection",
		// Pseudonyms are never rewritten (a real tool is named "tool").
		"tool_r1 and tool_x1 stay":                   "tool_r1 and tool_x1 stay",
		"tool: tool_x1, tools/tool_t1 and tool_t1()": "tool: tool_x1, tools/tool_t1 and tool_t1()",
		"the echo tool (echo) and the (time) of day": "the tool_e1 tool (tool_e1) and the (tool_t1) of day",
	} {
		t.Run(in, func(t *testing.T) {
			sc := newScrubber(names, false)
			if got := sc.text(in); got != want {
				t.Errorf("names(%q):\n got %q\nwant %q", in, got, want)
			}
			// Scrubbing twice changes nothing more.
			if got := sc.text(sc.text(in)); got != want {
				t.Errorf("names twice (%q):\n got %q\nwant %q", in, got, want)
			}
		})
	}
}
