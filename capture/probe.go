package capture

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"unicode"

	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// Tool is what capture knows of one advertised tool, read from the raw
// tools/list frames (the SDK's ToolAnnotations cannot tell an absent
// readOnlyHint from false).
type Tool struct {
	Name         string
	InputSchema  map[string]any
	OutputSchema any    // nil when the tool declares none
	ReadOnly     bool   // capture may call it
	Basis        string // which signal decided ReadOnly, in words
}

// Access rules: a tool is callable only when every signal says it is
// read-only (see access). Basis values say which signal decided.
const (
	basisAllowList    = "allow-list"                                 // the user named the tool with -read-only (callable)
	basisDestructive  = "annotation destructiveHint"                 // destructiveHint true or malformed (not callable)
	basisNotReadOnly  = "annotation readOnlyHint"                    // readOnlyHint false or malformed (not callable)
	basisAnnotation   = "annotation readOnlyHint and name rule"      // readOnlyHint true and the name rule agrees (callable)
	basisAnnotationNo = "annotation readOnlyHint, but not name rule" // readOnlyHint true and the name rule refuses (not callable)
	basisNameRule     = "name rule"                                  // no hints: the name rule allows (callable)
	basisNameRuleNot  = "name rule (not read-only)"                  // no hints: the name rule refuses (not callable)
)

// readVerbs start a tool name the name rule treats as read-only.
//
// Note: "check" and "resolve" are not read verbs (check_in, check_out,
// resolve_incident change state); "echo" is (it returns its input).
var readVerbs = set("get", "list", "read", "search", "find", "query", "describe", "show", "lookup", "view",
	"count", "stat", "info", "inspect", "browse", "fetch", "retrieve", "explain", "echo")

// writeWords anywhere in a name make the name rule refuse it. A word must
// be a whole part of the name (snake_case, kebab-case, camelCase or
// PascalCase parts, any case): after a read verb, an inflected form
// describes what is read (list_deleted_items, get_running_jobs), so only
// the verb itself counts.
//
// Note: the list leans towards refusal. Words that are mostly nouns in
// read tools' names (build, link, release, issue, comment, pull, download)
// are left out; post, order, book and store stay in, as they always were.
var writeWords = set(
	// create and change
	"create", "add", "insert", "append", "prepend", "put", "post", "patch", "update", "upsert", "set", "unset",
	"edit", "modify", "mutate", "alter", "replace", "overwrite", "write", "save", "store", "persist", "generate",
	"regenerate", "init", "initialize", "setup", "configure", "mark",
	// remove and destroy
	"delete", "del", "remove", "rm", "rmdir", "unlink", "destroy", "drop", "purge", "truncate", "wipe", "erase",
	"flush", "clear", "clean", "cleanup", "prune", "discard", "trash", "shred", "nuke", "reset", "revoke",
	"expire", "invalidate", "rotate", "renew",
	// move, copy and transfer files and data
	"move", "mv", "rename", "copy", "cp", "clone", "fork", "duplicate", "upload", "import", "export", "sync",
	"backup", "restore", "recover", "undelete", "archive", "unarchive", "mkdir", "touch", "chmod", "chown",
	"mount", "unmount", "umount", "attach", "detach", "gzip", "zip",
	// version control and deployment
	"commit", "push", "merge", "rebase", "checkout", "stash", "apply", "submit", "deploy", "publish", "rollout",
	"rollback", "revert", "undo", "redo", "promote", "provision", "deprovision", "migrate", "install",
	"uninstall", "upgrade", "downgrade", "scale", "resize",
	// run and control processes and machines
	"exec", "execute", "run", "eval", "evaluate", "invoke", "spawn", "launch", "trigger", "shell", "bash", "sh",
	"start", "stop", "restart", "reboot", "shutdown", "halt", "poweroff", "terminate", "kill", "suspend",
	"pause", "unpause", "abort", "cancel", "toggle", "enable", "disable", "activate", "deactivate",
	// decide, permit and authenticate
	"approve", "reject", "accept", "decline", "deny", "confirm", "dismiss", "close", "reopen", "lock", "unlock",
	"grant", "assign", "unassign", "authorize", "impersonate", "sudo", "escalate", "ban", "unban", "unblock",
	"kick", "mute", "unmute", "login", "logout", "signin", "signout", "signup", "sign", "register", "unregister",
	"subscribe", "unsubscribe", "invite", "join", "leave", "follow", "unfollow", "vote",
	// communicate
	"send", "email", "mail", "sms", "notify", "tweet", "reply", "broadcast", "dispatch", "emit", "enqueue",
	// money and bookings
	"pay", "charge", "refund", "transfer", "withdraw", "deposit", "buy", "sell", "purchase", "order", "book",
	"reserve", "schedule", "donate",
)

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// nameTokens splits a tool name into lower-case words at non-alphanumerics
// and camelCase boundaries: "getUser_by-ID" -> get, user, by, id.
func nameTokens(name string) []string {
	var out []string
	var cur []rune
	rs := []rune(name)
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = nil
		}
	}
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && len(cur) > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// nameRuleReadOnly is the conservative lexical rule: a tool name's first
// word is a read verb and no word is a write word.
func nameRuleReadOnly(name string) bool {
	toks := nameTokens(name)
	if len(toks) == 0 || !readVerbs[toks[0]] {
		return false
	}
	for _, t := range toks {
		if writeWords[t] {
			return false
		}
	}
	return true
}

// ReadOnlyAccess decides whether a client may call tool name, with the
// annotations its server listed, on a server it must not change: the
// capture rules without an allow-list (see access). basis says why.
func ReadOnlyAccess(name string, annotations map[string]any) (ok bool, basis string) {
	return access(name, annotations, false)
}

// access decides whether capture may call a tool and says why. Every
// signal must agree the tool is read-only: destructiveHint present and not
// false, or readOnlyHint present and not true, forbid it whatever the
// name; readOnlyHint true still needs the name rule; with no readOnlyHint
// the name rule decides. allowed (the user's -read-only) overrides all of
// them, and the basis records what it overrode.
func access(name string, ann map[string]any, allowed bool) (bool, string) {
	d, hasD := ann["destructiveHint"]
	r, hasR := ann["readOnlyHint"]
	ok := nameRuleReadOnly(name)
	var basis string
	switch {
	case hasD && d != false:
		ok, basis = false, fmt.Sprintf("%s %v", basisDestructive, d)
	case hasR && r != true:
		ok, basis = false, fmt.Sprintf("%s %v", basisNotReadOnly, r)
	case hasR && ok:
		basis = basisAnnotation
	case hasR:
		basis = basisAnnotationNo
	case ok:
		basis = basisNameRule
	default:
		basis = basisNameRuleNot
	}
	if allowed {
		if ok {
			return true, basisAllowList
		}
		return true, basisAllowList + " (overrides " + basis + ")"
	}
	return ok, basis
}

// parseTools reads tools from raw tools/list result frames and decides
// which capture may call.
func parseTools(results []json.RawMessage, allow map[string]bool) ([]Tool, error) {
	var tools []Tool
	for _, raw := range results {
		var page struct {
			Tools []struct {
				Name         string         `json:"name"`
				InputSchema  map[string]any `json:"inputSchema"`
				OutputSchema any            `json:"outputSchema"`
				Annotations  map[string]any `json:"annotations"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("tools/list result: %w", err)
		}
		for _, t := range page.Tools {
			tool := Tool{Name: t.Name, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema}
			tool.ReadOnly, tool.Basis = access(t.Name, t.Annotations, allow[t.Name])
			tools = append(tools, tool)
		}
	}
	return tools, nil
}

// field is one top-level property of an input schema.
type field struct {
	Name   string
	Type   string // string, number, integer, boolean, array or object; "" when unknown
	Schema map[string]any
}

// schemaType returns the JSON type a property schema declares: its type (the
// first non-null one of a list), or string for a string enum.
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if x, ok := x.(string); ok && x != "null" {
				return x
			}
		}
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		if _, ok := e[0].(string); ok {
			return "string"
		}
	}
	return ""
}

var knownTypes = set("string", "number", "integer", "boolean", "array", "object")

// requiredFields lists the required top-level fields of a tool, in the
// schema's required order.
func requiredFields(in map[string]any) []field {
	props, _ := in["properties"].(map[string]any)
	req, _ := in["required"].([]any)
	var out []field
	for _, r := range req {
		name, ok := r.(string)
		if !ok {
			continue
		}
		ps, _ := props[name].(map[string]any)
		ps = deref(in, ps)
		out = append(out, field{Name: name, Type: schemaType(ps), Schema: ps})
	}
	return out
}

// propertyField returns the named top-level property.
func propertyField(in map[string]any, name string) (field, bool) {
	props, _ := in["properties"].(map[string]any)
	ps, ok := props[name].(map[string]any)
	if !ok {
		return field{}, false
	}
	ps = deref(in, ps)
	return field{Name: name, Type: schemaType(ps), Schema: ps}, true
}

// deref follows a property schema's local $ref ("#/$defs/Id",
// "#/definitions/Id": how Pydantic and zod write nested types and enums)
// to the schema it names in root, with the property's other keywords
// kept over it; s itself when it has no $ref that resolves. At most 8
// hops, so a cycle ends.
func deref(root, s map[string]any) map[string]any {
	for range 8 {
		ref, ok := s["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#/") {
			return s
		}
		cur, _ := statediff.Resolve(root, ref[1:]) // the JSON pointer after #
		target, ok := cur.(map[string]any)
		if !ok {
			return s
		}
		merged := maps.Clone(target)
		for k, v := range s {
			if k != "$ref" {
				merged[k] = v
			}
		}
		s = merged
	}
	return s
}

// placeholder is a type-correct, harmless value for a required field the
// probe does not target: the first enum value, the minimum, or a zero.
func placeholder(f field) (any, bool) {
	if e, ok := f.Schema["enum"].([]any); ok && len(e) > 0 {
		return e[0], true
	}
	if c, ok := f.Schema["const"]; ok {
		return c, true
	}
	switch f.Type {
	case "string":
		return "stress-probe", true
	case "number", "integer":
		if m, ok := f.Schema["minimum"].(float64); ok {
			return m, true
		}
		return 1, true
	case "boolean":
		return false, true
	case "array":
		return []any{}, true
	case "object":
		return map[string]any{}, true
	}
	return nil, false
}

// wrongType is a value of another JSON type than t.
func wrongType(t string) any {
	if t == "string" {
		return 12345
	}
	return "stress-probe-not-a-" + t
}

// sentinelValue is the default type-correct, out-of-domain value for t.
func sentinelValue(t, tag string) (any, bool) {
	switch t {
	case "string":
		return "stress-probe-sentinel-" + tag, true
	case "number", "integer":
		return -987654321, true
	case "array":
		return []any{"stress-probe-sentinel-" + tag}, true
	}
	return nil, false
}

// Plan is one probe to send.
type Plan struct {
	Kind      study.Probe
	Tool      string         // the tool called (the made-up name for nonexistent_tool)
	Field     string         // the targeted parameter ("" for nonexistent_tool)
	Arguments map[string]any // as sent
}

// SentinelSpec allow-lists one tool for the out-of-domain sentinel probe,
// optionally naming the field and the JSON value ("tool", "tool:field" or
// "tool:field=JSON").
type SentinelSpec struct {
	Tool  string
	Field string
	Value json.RawMessage
}

// ParseSentinel parses a -sentinel flag value.
func ParseSentinel(s string) (SentinelSpec, error) {
	var sp SentinelSpec
	head, val, hasVal := strings.Cut(s, "=")
	sp.Tool, sp.Field, _ = strings.Cut(head, ":")
	if sp.Tool == "" {
		return sp, fmt.Errorf("sentinel %q: want TOOL, TOOL:FIELD or TOOL:FIELD=JSON", s)
	}
	if hasVal {
		if sp.Field == "" {
			return sp, fmt.Errorf("sentinel %q: a value needs a field (TOOL:FIELD=JSON)", s)
		}
		if !json.Valid([]byte(val)) {
			return sp, fmt.Errorf("sentinel %q: value %q is not JSON (quote strings: \"x\")", s, val)
		}
		sp.Value = json.RawMessage(val)
	}
	return sp, nil
}

// plan chooses the probes for a server: a nonexistent tool; a wrong type
// and a missing required field on the first callable tool (in list order,
// or the one the user named) with a required field of a known type; and a
// sentinel for each allow-listed tool. Skipped probes come back as notes.
func plan(tools []Tool, nonexistent string, probeTool string, sentinels []SentinelSpec, tag string) ([]Plan, []string) {
	plans := []Plan{{Kind: study.NonexistentTool, Tool: nonexistent, Arguments: map[string]any{}}}
	var notes []string
	byName := map[string]*Tool{}
	for i := range tools {
		byName[tools[i].Name] = &tools[i]
	}

	// Wrong type and missing required field.
	var chosen *Tool
	var target field
	candidates := tools
	if probeTool != "" {
		t, ok := byName[probeTool]
		if !ok {
			notes = append(notes, fmt.Sprintf("wrong_type, missing_required: tool %q is not advertised", probeTool))
			candidates = nil
		} else {
			candidates = []Tool{*t}
		}
	}
	for i := range candidates {
		t := &candidates[i]
		if !t.ReadOnly {
			if probeTool != "" {
				notes = append(notes, fmt.Sprintf("wrong_type, missing_required: tool %q is not read-only (%s); name it with -read-only to allow it", t.Name, t.Basis))
			}
			continue
		}
		for _, f := range requiredFields(t.InputSchema) {
			if knownTypes[f.Type] {
				chosen, target = t, f
				break
			}
		}
		if chosen != nil {
			break
		}
		if probeTool != "" {
			notes = append(notes, fmt.Sprintf("wrong_type, missing_required: tool %q has no required field of a known JSON type", t.Name))
		}
	}
	if chosen == nil && probeTool == "" {
		notes = append(notes, "wrong_type, missing_required: no read-only tool with a required field of a known JSON type")
	}
	if chosen != nil {
		others, missing := otherRequired(chosen.InputSchema, target.Name)
		if missing != "" {
			notes = append(notes, fmt.Sprintf("wrong_type, missing_required: tool %q: no placeholder for required field %q", chosen.Name, missing))
		} else {
			wt := maps.Clone(others)
			wt[target.Name] = wrongType(target.Type)
			plans = append(plans,
				Plan{Kind: study.WrongType, Tool: chosen.Name, Field: target.Name, Arguments: wt},
				Plan{Kind: study.MissingRequired, Tool: chosen.Name, Field: target.Name, Arguments: maps.Clone(others)})
		}
	}

	// Sentinels, only for allow-listed tools.
	for _, sp := range sentinels {
		t, ok := byName[sp.Tool]
		if !ok {
			notes = append(notes, fmt.Sprintf("out_of_domain_sentinel: tool %q is not advertised", sp.Tool))
			continue
		}
		if !t.ReadOnly {
			notes = append(notes, fmt.Sprintf("out_of_domain_sentinel: tool %q is not read-only (%s); name it with -read-only to allow it", t.Name, t.Basis))
			continue
		}
		var f field
		if sp.Field != "" {
			var ok bool
			if f, ok = propertyField(t.InputSchema, sp.Field); !ok {
				notes = append(notes, fmt.Sprintf("out_of_domain_sentinel: tool %q has no field %q", t.Name, sp.Field))
				continue
			}
		} else {
			req := requiredFields(t.InputSchema)
			sort.SliceStable(req, func(i, j int) bool { return req[i].Type == "string" && req[j].Type != "string" })
			if len(req) == 0 {
				notes = append(notes, fmt.Sprintf("out_of_domain_sentinel: tool %q has no required field; name one (TOOL:FIELD)", t.Name))
				continue
			}
			f = req[0]
		}
		var v any
		if sp.Value != nil {
			if err := json.Unmarshal(sp.Value, &v); err != nil {
				notes = append(notes, fmt.Sprintf("out_of_domain_sentinel: tool %q: %v", t.Name, err))
				continue
			}
		} else {
			var ok bool
			if v, ok = sentinelValue(f.Type, tag); !ok {
				notes = append(notes, fmt.Sprintf("out_of_domain_sentinel: tool %q field %q has type %q; give a value (TOOL:FIELD=JSON)", t.Name, f.Name, f.Type))
				continue
			}
		}
		args, missing := otherRequired(t.InputSchema, f.Name)
		if missing != "" {
			notes = append(notes, fmt.Sprintf("out_of_domain_sentinel: tool %q: no placeholder for required field %q", t.Name, missing))
			continue
		}
		args[f.Name] = v
		plans = append(plans, Plan{Kind: study.Sentinel, Tool: t.Name, Field: f.Name, Arguments: args})
	}
	return plans, notes
}

// otherRequired gives a placeholder value to every required field of
// schema but skip; missing names the first field that has none (and the
// arguments are then incomplete).
func otherRequired(schema map[string]any, skip string) (args map[string]any, missing string) {
	args = map[string]any{}
	for _, f := range requiredFields(schema) {
		if f.Name == skip {
			continue
		}
		v, ok := placeholder(f)
		if !ok {
			return args, f.Name
		}
		args[f.Name] = v
	}
	return args, ""
}
