package labenv

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// wire returns an observation as its server sent it, for comparison: a
// result or JSON-RPC error object (an observation's exception's error),
// decoded, without resultType (the client's normalization drops it) and
// the classification's correlationId (the lab numbers its calls).
func wire(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if r, ok := m["result"].(map[string]any); ok {
		m = r
	} else if e, ok := m["exception"].(map[string]any); ok {
		m, _ = e["error"].(map[string]any)
	}
	delete(m, "resultType")
	if meta, ok := m["_meta"].(map[string]any); ok {
		if tf, ok := meta[study.ToolFailureKey].(map[string]any); ok {
			delete(tf, "correlationId")
		}
	}
	return m
}

// TestShapesServed starts every lab corpus scenario under every error
// shape and checks that the lab serves, on the wire and through Observe,
// exactly what the stored condition shows for the same record (the
// correlation id aside): the same channel (a JSON-RPC error or a result),
// the same content, the same RateLimited wait, the same ToolFailure
// classification with its agentGuidance or applied, and no category
// contract; where the stored condition has no answer to reshape (a
// client-side timeout), the lab serves what it serves without the shape.
func TestShapesServed(t *testing.T) {
	ctx := context.Background()
	m, err := manifests.LoadBuiltin("lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ForCorpus("", m.Corpus.Scenarios)
	if err != nil {
		t.Fatal(err)
	}
	sf := f.(simulator.ShapedEnvFactory)
	limited := 0
	for i := range m.Corpus.Scenarios {
		rec := &m.Corpus.Scenarios[i]
		plain, err := f.NewEnv(ctx, rec.ID, 7)
		if err != nil {
			t.Fatal(err)
		}
		base, err := plain.Start(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range study.ShapeConditions {
			e, err := sf.NewShapedEnv(ctx, rec.ID, 7, c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Start(ctx)
			if err != nil {
				t.Fatalf("%s %s: %v", rec.ID, c, err)
			}
			want, label, ok, err := conditions.ShapeResult(rec, c)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				if string(got) != string(base) {
					t.Errorf("%s %s: the stored condition has no answer to reshape, the lab serves\n%s\ninstead of\n%s", rec.ID, c, got, base)
				}
				continue
			}
			if bytes.Contains(got, []byte("errorCategory")) {
				t.Errorf("%s %s: the lab serves the category contract: %s", rec.ID, c, got)
			}
			g, w := wire(t, got), wire(t, want)
			var gotErr struct {
				Exception json.RawMessage `json:"exception"`
			}
			json.Unmarshal(got, &gotErr)
			if (gotErr.Exception != nil) != (label == conditions.ShapeErrorLabel) || !reflect.DeepEqual(g, w) {
				t.Errorf("%s %s: lab serves %s, stored %s", rec.ID, c, got, want)
			}
			if c == study.RateLimited && w["code"] == float64(study.RateLimitedCode) {
				limited++
			}
		}
	}
	if limited != 1 {
		t.Errorf("%d -32023 errors under ratelimited, want 1 (X40, the lab's own limit; the upstream limits stay results)", limited)
	}
}

// TestShapedReplays checks later calls are served in the shape too: the
// lab's own rate limit replayed at once under ratelimited answers -32023
// again.
func TestShapedReplays(t *testing.T) {
	ctx := context.Background()
	f, err := Factory("")
	if err != nil {
		t.Fatal(err)
	}
	e, err := f.(simulator.ShapedEnvFactory).NewShapedEnv(ctx, "X40", 1, study.RateLimited)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	obs, _, err := e.Execute(ctx, 0, simulator.Answer{Status: study.Failed, Policy: study.RetryNow, Valid: true})
	if err != nil {
		t.Fatal(err)
	}
	if g := wire(t, obs); g["code"] != float64(study.RateLimitedCode) {
		t.Errorf("replay under ratelimited: %s", obs)
	}
	if w, ok := lab.RetryAfter(obs); !ok || w <= 0 {
		t.Errorf("replay announces no wait: %s", obs)
	}
}
