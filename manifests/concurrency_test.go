package manifests

import (
	"fmt"
	"strings"
	"testing"
)

const concBase = `name: t
corpus: c
prompts: [{name: p, path: p.tmpl}]
conditions: [normalized]
replicates: 1
models:
`

// TestConcurrencyFields checks parallel, endpoints and max_in_flight: their
// defaults, the derived slot counts, and errors naming the field.
func TestConcurrencyFields(t *testing.T) {
	m, err := Parse("x.yaml", []byte(concBase+`  - {name: a, backend: b, model: m}
  - {name: c, backend: b, model: m, parallel: 3, endpoints: [h1, h2]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Models[0].Slots() != 1 || m.Models[1].Slots() != 6 || m.InFlight() != 7 {
		t.Errorf("slots %d, %d, in flight %d; want 1, 6, 7", m.Models[0].Slots(), m.Models[1].Slots(), m.InFlight())
	}
	if h := m.Models[0].Hosts(); len(h) != 1 || h[0] != "" {
		t.Errorf("hosts of a model without endpoints: %q", h)
	}
	if h := m.Models[1].Hosts(); len(h) != 2 || h[1] != "h2" {
		t.Errorf("hosts: %q", h)
	}
	m.MaxInFlight = 4
	if m.InFlight() != 4 {
		t.Errorf("in flight %d with max_in_flight 4", m.InFlight())
	}
	for _, tc := range []struct{ models, top, want string }{
		{`  - {name: a, backend: b, model: m, parallel: -1}`, "", "field models[0].parallel: want 1 to 1024"},
		{`  - {name: a, backend: b, model: m, parallel: 5000}`, "", "field models[0].parallel"},
		{`  - {name: a, backend: b, model: m, host: h, endpoints: [h1]}`, "", "field models[0].endpoints: set either host or endpoints"},
		{`  - {name: a, backend: b, model: m, endpoints: [h1, h1]}`, "", `field models[0].endpoints[1]: duplicate endpoint "h1"`},
		{`  - {name: a, backend: b, model: m, endpoints: [""]}`, "", "field models[0].endpoints[0]: empty endpoint"},
		{`  - {name: a, backend: b, model: m}`, "max_in_flight: -2\n", "field max_in_flight: want 1 to 4096"},
		{`  - {name: a, backend: b, model: m}`, "max_in_flight: 100000\n", "field max_in_flight"},
		// An explicit 0 is out of range; only an absent field takes the default.
		{`  - {name: a, backend: b, model: m, parallel: 0}`, "", "field models[0].parallel: want 1 to 1024 calls in flight per endpoint, got 0"},
		{`  - {name: a, backend: b, model: m}
  - {name: c, backend: b, model: m, parallel: 0}`, "", "field models[1].parallel: want 1 to 1024"},
		{`  - {name: a, backend: b, model: m}`, "max_in_flight: 0\n", "field max_in_flight: want 1 to 4096 calls in flight, got 0"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.top+concBase+tc.models+"\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s%s: error %v, want %q", tc.top, tc.models, err, tc.want)
			}
		})
	}
	// The same in a JSON manifest.
	const js = `{"name": "t", "corpus": "c", "prompts": [{"name": "p", "path": "p.tmpl"}], "conditions": ["normalized"], "replicates": 1, %s
		"models": [{"name": "a", "backend": "b", "model": "m"}, {"name": "c", "backend": "b", "model": "m", "parallel": %s}]}`
	if _, err := Parse("x.json", []byte(fmt.Sprintf(js, `"max_in_flight": 0,`, "0"))); err == nil ||
		!strings.Contains(err.Error(), "field max_in_flight: want 1 to 4096") || !strings.Contains(err.Error(), "field models[1].parallel: want 1 to 1024") {
		t.Errorf("JSON manifest with max_in_flight and parallel 0: error %v", err)
	}
	m, err = Parse("x.json", []byte(fmt.Sprintf(js, `"max_in_flight": 2,`, "2")))
	if err != nil || m.MaxInFlight != 2 || m.Models[1].Parallel != 2 || m.Models[0].Parallel != 0 {
		t.Errorf("JSON manifest with max_in_flight and parallel 2: %v", err)
	}
	// null is absent.
	if _, err := Parse("x.yaml", []byte("max_in_flight: null\n"+concBase+"  - {name: a, backend: b, model: m, parallel: null}\n")); err != nil {
		t.Errorf("parallel and max_in_flight null: %v", err)
	}
}
