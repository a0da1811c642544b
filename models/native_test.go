package models_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpstress/stress/models"
)

func TestThink(t *testing.T) {
	for _, c := range []struct {
		opts map[string]any
		v    any
		set  bool
		err  bool
	}{
		{nil, nil, false, false},
		{map[string]any{"think": nil}, nil, false, false},
		{map[string]any{"think": false}, false, true, false},
		{map[string]any{"think": true}, true, true, false},
		{map[string]any{"think": "medium"}, "medium", true, false},
		{map[string]any{"think": "off"}, nil, false, true},
		{map[string]any{"think": 0}, nil, false, true},
	} {
		t.Run(fmt.Sprint(c.opts), func(t *testing.T) {
			v, set, err := models.Think(c.opts)
			if v != c.v || set != c.set || (err != nil) != c.err {
				t.Errorf("%v: %v %v %v", c.opts, v, set, err)
			}
		})
	}
}

func TestParseToolCalls(t *testing.T) {
	for _, c := range []struct {
		raw, want, err string
	}{
		{``, `null`, ""},
		{`null`, `null`, ""},
		{`[{"id":"a","function":{"index":0,"name":"f","arguments":{"x":1}}}]`, `[{"id":"a","name":"f","arguments":{"x":1}}]`, ""},
		{`[{"id":"b","type":"function","function":{"name":"g","arguments":"{\"y\": [1]}"}}]`, `[{"id":"b","name":"g","arguments":{"y":[1]}}]`, ""},
		{`[{"function":{"name":"h","arguments":""}}]`, `[{"name":"h","arguments":{}}]`, ""},
		{`[{"function":{"name":"h","arguments":"[1]"}}]`, ``, "not a JSON object"},
		{`[{"function":{"arguments":{}}}]`, ``, "no function name"},
		{`{}`, ``, "tool_calls"},
	} {
		t.Run(c.raw, func(t *testing.T) {
			got, err := models.ParseToolCalls(json.RawMessage(c.raw))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("%s: error %v, want %q", c.raw, err, c.err)
				}
				return
			}
			b, _ := json.Marshal(got)
			if err != nil || string(b) != c.want {
				t.Errorf("%s: %s, %v; want %s", c.raw, b, err, c.want)
			}
		})
	}
}

func TestWireTools(t *testing.T) {
	got, err := models.WireTools([]models.Tool{{Name: "f", Description: "d", Parameters: json.RawMessage(`{"type":"object","x-kept":1}`)}, {Name: "g"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","x-kept":1}}},{"type":"function","function":{"name":"g","parameters":{"type":"object","properties":{}}}}]`
	if string(b) != want {
		t.Errorf("%s\nwant %s", b, want)
	}
	for _, tc := range []struct {
		name string
		bad  models.Tool
	}{{"no name", models.Tool{}}, {"damaged parameters", models.Tool{Name: "f", Parameters: json.RawMessage(`{`)}}} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := models.WireTools([]models.Tool{tc.bad}); err == nil {
				t.Errorf("%+v: no error", tc.bad)
			}
		})
	}
}
