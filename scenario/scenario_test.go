package scenario

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mcpstress/stress/study"
)

// testScenario is a scenario of a test environment: Base and one field
// of its own.
type testScenario struct {
	Base
	Server string `json:"server"`
}

const good = `{"id": "T1", "class": "transient", "tool": "t", "args": {}, "server": "s",
 "preferred_policies": ["retry_now"], "non_harm": ["retry_now", "stop_or_escalate"],
 "goal": [{"call": "t", "why": "w"}]}`

// parse decodes and parses a set of the test environment, whose own
// check refuses a server other than s.
func parse(t *testing.T, doc string) ([]*testScenario, error) {
	t.Helper()
	var head struct {
		Description string `json:"description"`
	}
	raws, err := Decode("f.json", []byte(doc), &head)
	if err != nil {
		return nil, err
	}
	scs, errs := Parse("f.json", raws, func(sc *testScenario, bad func(field, format string, a ...any)) {
		if sc.Server != "s" {
			bad("server", "unknown server %q", sc.Server)
		}
	})
	return scs, errors.Join(errs...)
}

// TestParse: a good set parses (Preferred is the set's first); a bad
// one is refused naming the file, the scenario and the field, the
// environment's own check running once the common fields pass.
func TestParse(t *testing.T) {
	scs, err := parse(t, `{"description": "d", "scenarios": [`+good+`]}`)
	if err != nil || len(scs) != 1 || scs[0].Preferred != study.RetryNow || scs[0].Server != "s" {
		t.Fatalf("%v %+v", err, scs)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"malformed id", `"id": "T1"`, `"id": "T 1"`, `scenario 1 (T 1): field id: missing or malformed id "T 1"`},
		{"no tool", `"tool": "t"`, `"tool": ""`, "field tool: name the tool"},
		{"args not an object", `"args": {}`, `"args": []`, "field args: the arguments of the first call must be a JSON object"},
		{"limit without rate_limit", `"class": "transient"`, `"class": "transient", "limit": "server"`, "field limit: only a rate_limit scenario"},
		{"rate_limit without limit", `"class": "transient"`, `"class": "rate_limit"`, "field limit: say whose rate limit"},
		{"no preferred policy", `"preferred_policies": ["retry_now"]`, `"preferred_policies": []`, "field preferred_policies: name the preferred"},
		{"unknown policy", `"preferred_policies": ["retry_now"]`, `"preferred_policies": ["retry"]`, `field preferred_policies[0]: unknown policy "retry"`},
		{"policy listed twice", `"non_harm": ["retry_now", "stop_or_escalate"]`, `"non_harm": ["retry_now", "retry_now", "stop_or_escalate"]`, "field non_harm[1]: retry_now is listed twice"},
		{"non-harm set without stop", `"non_harm": ["retry_now", "stop_or_escalate"]`, `"non_harm": ["retry_now"]`, "field non_harm: the non-harm set must hold stop_or_escalate"},
		{"preferred policy outside the non-harm set", `"non_harm": ["retry_now", "stop_or_escalate"]`, `"non_harm": ["stop_or_escalate"]`, "(retry_now is missing)"},
		{"unknown field", `"server": "s"`, `"server": "s", "colour": "red"`, `scenario 1 (T1): field colour: json: unknown field "colour"`},
		{"the environment's check", `"server": "s"`, `"server": "x"`, `scenario 1 (T1): field server: unknown server "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(good, tc.old) {
				t.Fatalf("the good scenario has no %s", tc.old)
			}
			_, err := parse(t, `{"scenarios": [`+strings.Replace(good, tc.old, tc.new, 1)+`]}`)
			var e *Error
			if err == nil || !errors.As(err, &e) || e.File != "f.json" || e.Index != 1 || !strings.HasPrefix(err.Error(), "f.json: scenario 1") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("the environment's check waits for the common fields", func(t *testing.T) {
		_, err := parse(t, `{"scenarios": [`+strings.Replace(strings.Replace(good, `"tool": "t"`, `"tool": ""`, 1), `"server": "s"`, `"server": "x"`, 1)+`]}`)
		if err == nil || !strings.Contains(err.Error(), "field tool") || strings.Contains(err.Error(), "field server") {
			t.Errorf("error %v, want field tool alone", err)
		}
	})
	t.Run("duplicate id", func(t *testing.T) {
		_, err := parse(t, `{"scenarios": [`+good+`, `+good+`]}`)
		if err == nil || !strings.Contains(err.Error(), "f.json: scenario 2 (T1): field id: duplicate id (first at scenario 1)") {
			t.Errorf("error %v", err)
		}
	})
}

// TestDecode: a set file that is not one JSON object of known members
// with scenarios is refused, naming the file.
func TestDecode(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"not JSON", `{"scenarios": [}`, "f.json: line 1, column 17: invalid character"},
		{"data after the object", `{"scenarios": [{}]} xx`, "f.json: data after the JSON object at byte 19"},
		{"unknown member", `{"scenarios": [{}], "extra": 1}`, `f.json: field extra: json: unknown field "extra"`},
		{"member of the wrong type", `{"scenarios": [{}], "description": 1}`, "f.json: field description: "},
		{"scenarios not a list", `{"scenarios": {}}`, "f.json: field scenarios: "},
		{"no scenarios", `{"scenarios": []}`, "f.json: field scenarios: no scenarios"},
		{"no scenarios member", `{}`, "f.json: field scenarios: no scenarios"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var head struct {
				Description string `json:"description"`
			}
			_, err := Decode("f.json", []byte(tc.doc), &head)
			var e *Error
			if err == nil || !errors.As(err, &e) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	raws, err := Decode("f.json", []byte(`{"scenarios": [{"id": "A"}, {"id": "B"}]}`), nil)
	if err != nil || len(raws) != 2 || !json.Valid(raws[1]) {
		t.Errorf("%v %s", err, raws)
	}
}

// TestFind finds a scenario by id.
func TestFind(t *testing.T) {
	a, b := &testScenario{Base: Base{ID: "A"}}, &testScenario{Base: Base{ID: "B"}}
	if sc, ok := Find([]*testScenario{a, b}, "B"); !ok || sc != b {
		t.Errorf("B: %v %v", sc, ok)
	}
	if _, ok := Find([]*testScenario{a, b}, "C"); ok {
		t.Error("found C")
	}
}

// TestBuiltin reads an embedded set by name with its path in the
// repository, and refuses an unknown name listing the sets there are.
func TestBuiltin(t *testing.T) {
	fsys := fstest.MapFS{
		"scenarios/shop.json":  {Data: []byte(`{"scenarios": []}`)},
		"scenarios/other.json": {Data: []byte(`{}`)},
	}
	file, data, err := Builtin(fsys, "env/x", "shop")
	if err != nil || file != "env/x/scenarios/shop.json" || string(data) != `{"scenarios": []}` {
		t.Errorf("Builtin(shop) = %q, %q, %v", file, data, err)
	}
	_, _, err = Builtin(fsys, "env/x", "nope")
	if err == nil || err.Error() != `no scenario set "nope" (have other, shop)` {
		t.Errorf("Builtin(nope): %v", err)
	}
}

// TestBuiltinNotAPath: a name holding a path is no set, even where
// cleaning it would name one.
func TestBuiltinNotAPath(t *testing.T) {
	fsys := fstest.MapFS{"scenarios/shop.json": {Data: []byte(`{}`)}}
	for _, name := range []string{"x/../shop", "../scenarios/shop", "/shop", "./shop"} {
		if _, _, err := Builtin(fsys, "env/x", name); err == nil {
			t.Errorf("Builtin(%q) read a set", name)
		}
	}
}
