package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/mcpstress/stress/internal/input"
)

// Silent is the surface of a failure the server hid entirely: a completed
// result with isError false or absent and nothing in it (no content, blank
// text, or JSON with only empty members). Only captured corpora have it.
const Silent Surface = "silent"

// MissingRequired is the probe that omits one required argument of a
// read-only tool (captured corpora only).
//
// Note: it yields invalid_type. The vocabulary
// (docs/specification.md section 1.3) has no separate cause for an absent
// argument; the value's JSON type is "undefined" where the schema requires
// one, the repair target is the parameter and the preferred policy
// (revise_arguments) is the same, so a new cause would only split a cell
// without changing any decision.
const MissingRequired Probe = "missing_required"

// LabCall is the call the recovery lab's recorder (stress lab record)
// makes: the armed scenario's own call, with valid arguments where the
// fault is not in them, to a lab the harness started. It yields every
// cause, since the lab arms the fault itself.
const LabCall Probe = "lab_call"

// ProxyCall is the call the database environment's recorder makes: the
// scenario's own call to a real MCP server, through the fault proxy,
// which arms the fault (or none, for the server's own failure).
const ProxyCall Probe = "proxy_call"

// Probes lists every probe kind: the paper's three, missing_required,
// lab_call and proxy_call.
var Probes = []Probe{NonexistentTool, WrongType, MissingRequired, Sentinel, LabCall, ProxyCall}

// The client views a captured observation can be in (Capture.View).
const (
	// ViewGoSDK is the Go SDK client's normalized view: a raised
	// *jsonrpc.Error or a decoded CallToolResult, with no output-schema
	// check (the Go SDK client does none).
	ViewGoSDK = "go-sdk"
	// ViewValidating is the Go SDK view after the capture's optional
	// client-side outputSchema check: a result the check rejects becomes a
	// raised error, as a validating client would raise it.
	ViewValidating = "go-sdk+output-validation"
)

// Views lists the known capture views.
var Views = []string{ViewGoSDK, ViewValidating}

// Capture is the provenance of a scenario that `stress capture` recorded
// from a live server. The paper corpus has none.
type Capture struct {
	// Frames is the file of raw JSON-RPC frames (JSON lines) the probe's
	// request and response are in, relative to the corpus file. It holds
	// real names and is private; the corpus is usable without it.
	Frames string `json:"frames"`
	// RequestID is the JSON-RPC id of the probe's tools/call request in
	// Frames, as it was on the wire.
	RequestID json.RawMessage `json:"request_id"`
	// Tool is the pseudonym of the probed tool ("" for a nonexistent tool,
	// whose made-up name is in the target).
	Tool string `json:"tool,omitempty"`
	// Arguments are the probe's arguments as sent (parameter names are
	// kept; they are schema members, not identifiers).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// SDK is the client library and version, e.g.
	// "github.com/modelcontextprotocol/go-sdk v1.8.0".
	SDK string `json:"sdk"`
	// View is the client view the observation is in (Views).
	View string `json:"view"`
	// WireSurface is the surface the raw response frame carries, before any
	// client normalization or output validation.
	WireSurface Surface `json:"wire_surface"`
	// TextCode is a JSON-RPC error code the failure text starts with, as
	// TypeScript SDK servers write argument-validation failures inside an
	// isError result ("MCP error -32602: …"); nil when there is none.
	TextCode *int `json:"text_code,omitempty"`
	// OutputValidation is the verdict of the optional client-side
	// outputSchema check; nil when the check was off or the server raised
	// a protocol error (there was no result to check).
	OutputValidation *OutputCheck `json:"output_validation,omitempty"`
	// Dropped lists, as JSON pointers into the SDK's result, the members
	// dropped from the observation as irrelevant to the failure.
	Dropped []string `json:"dropped,omitempty"`
	// Redacted counts the redactions made, by kind (token, email, path,
	// ip, host, url): credentials and private locators everywhere, other
	// locators outside the failure text.
	Redacted map[string]int `json:"redacted,omitempty"`
	// Flagged counts the generic locators (url, path, ip) left inside the
	// failure text, by kind.
	Flagged map[string]int `json:"flagged,omitempty"`
	// CauseRule says how the cause was set: from the probe kind, or by a
	// text rule (authentication).
	CauseRule string `json:"cause_rule"`
	// Proposed is true while the cause and the profile coding are
	// rule-based proposals that no person has confirmed.
	Proposed bool `json:"proposed"`
}

// OutputCheck is the verdict of a client-side outputSchema check.
type OutputCheck struct {
	Verdict string `json:"verdict"`          // accepted, rejected or no_schema
	Code    int    `json:"code,omitempty"`   // JSON-RPC code a validating client raises when rejected
	Reason  string `json:"reason,omitempty"` // why it was rejected
}

// Output-check verdicts.
const (
	OutputAccepted = "accepted"
	OutputRejected = "rejected"
	OutputNoSchema = "no_schema"
)

// checkCapture checks a record's capture provenance.
func checkCapture(c *Capture) []fieldErr {
	var errs []fieldErr
	bad := func(field, format string, a ...any) {
		errs = append(errs, fieldErr{"capture." + field, fmt.Errorf(format, a...)})
	}
	switch {
	case c.Frames == "":
		bad("frames", "missing")
	case path.IsAbs(c.Frames) || strings.Contains(c.Frames, `\`) || path.Clean(c.Frames) != c.Frames:
		bad("frames", "want a clean relative slash path, got %s", input.Quote(c.Frames))
	}
	if len(bytes.TrimSpace(c.RequestID)) == 0 {
		bad("request_id", "missing")
	} else if err := checkID(c.RequestID); err != nil {
		bad("request_id", "%v", err)
	}
	if strings.TrimSpace(c.SDK) == "" {
		bad("sdk", "missing")
	}
	if !validView(c.View) {
		bad("view", "unknown view %s (want one of %s)", input.Quote(c.View), strings.Join(Views, ", "))
	}
	if !c.WireSurface.Valid() {
		bad("wire_surface", "unknown surface %s (want one of %s)", input.Quote(string(c.WireSurface)), join(Surfaces))
	}
	if len(c.Arguments) > 0 {
		var m map[string]json.RawMessage
		if json.Unmarshal(c.Arguments, &m) != nil || m == nil {
			bad("arguments", "want a JSON object")
		}
	}
	if v := c.OutputValidation; v != nil {
		switch v.Verdict {
		case OutputAccepted, OutputNoSchema:
		case OutputRejected:
			if v.Code == 0 || v.Reason == "" {
				bad("output_validation", "a rejection needs a code and a reason")
			}
		default:
			bad("output_validation.verdict", "unknown verdict %s (want accepted, rejected or no_schema)", input.Quote(v.Verdict))
		}
	}
	if c.View == ViewValidating && c.OutputValidation == nil && c.WireSurface != ProtocolError {
		bad("output_validation", "view %s needs the check's verdict for a completed result", ViewValidating)
	}
	if strings.TrimSpace(c.CauseRule) == "" {
		bad("cause_rule", "missing")
	}
	return errs
}

func validView(v string) bool { return slices.Contains(Views, v) }

// checkID checks a JSON-RPC id: a string or an integer.
func checkID(raw json.RawMessage) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	switch x := v.(type) {
	case string:
		return nil
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return nil
		}
	}
	return errors.New("want a JSON-RPC id (a string or an integer)")
}

// emptyJSON reports whether v (decoded JSON) holds nothing: null, "", an
// empty array or object, or containers of only such values.
func emptyJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(x) == ""
	case []any:
		for _, e := range x {
			if !emptyJSON(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !emptyJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}

// EmptyText reports whether a result text says nothing: blank, or JSON
// holding only empty members (e.g. {"entities":[],"relations":[]}).
func EmptyText(text string) bool {
	t := strings.TrimSpace(text)
	if t == "" {
		return true
	}
	var v any
	if json.Unmarshal([]byte(t), &v) != nil {
		return false
	}
	return emptyJSON(v)
}

// EmptyJSON reports whether raw is absent or JSON holding only empty
// members.
func EmptyJSON(raw json.RawMessage) bool {
	if len(bytes.TrimSpace(raw)) == 0 {
		return true
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	return emptyJSON(v)
}

// MarshalJSON writes a view's coordinates in profile order (D, P, C, T, E,
// R), as the paper corpus lists them, then any others in sorted order.
func (v View) MarshalJSON() ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	keys := append([]string(nil), Coordinates...)
	var extra []string
	for k := range v {
		if !slices.Contains(Coordinates, k) {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	keys = append(keys, extra...)
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, k := range keys {
		bit, ok := v[k]
		if !ok {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(bit)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
