package labenv

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// served is the part of an observation the error shapes change.
type served struct {
	Exception *struct {
		Error struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
			Data    *struct {
				RetryAfterMs *int64 `json:"retryAfterMs"`
			} `json:"data"`
		} `json:"error"`
	} `json:"exception"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Meta map[string]*study.ToolFailure `json:"_meta"`
	} `json:"result"`
	// The stored renderings are the bare result or error object.
	Code    int64  `json:"code"`
	Message string `json:"message"`
	IsError bool   `json:"isError"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	Meta map[string]*study.ToolFailure `json:"_meta"`
	Data *struct {
		RetryAfterMs *int64 `json:"retryAfterMs"`
	} `json:"data"`
}

// TestShapesServed starts every lab corpus scenario under every error
// shape and checks that the lab serves, on the wire and through Observe,
// what the stored condition shows for the same record: the same channel
// (a JSON-RPC error or an isError result), the same first text block
// (the lab keeps the scenario's contract beside it), the same
// RateLimited wait and the same ToolFailure classification (the
// correlation id aside: the lab numbers its calls); where the stored
// condition changes nothing, the lab serves what it serves without the
// shape.
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
	changed := map[study.Condition]int{}
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
			want, _, ok, err := conditions.ShapeResult(rec, c)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				if string(got) != string(base) {
					t.Errorf("%s %s: the stored condition changes nothing, the lab serves\n%s\ninstead of\n%s", rec.ID, c, got, base)
				}
				continue
			}
			changed[c]++
			var g, w served
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if c == study.RateLimited {
				if g.Exception == nil || g.Exception.Error.Code != study.RateLimitedCode || g.Exception.Error.Message != w.Message ||
					g.Exception.Error.Data == nil || *g.Exception.Error.Data.RetryAfterMs != *w.Data.RetryAfterMs {
					t.Errorf("%s ratelimited: lab serves %s, stored %s", rec.ID, got, want)
				}
				continue
			}
			if g.Result == nil || !g.Result.IsError || len(g.Result.Content) == 0 || g.Result.Content[0].Text != w.Content[0].Text {
				t.Errorf("%s %s: lab serves %s, stored %s", rec.ID, c, got, want)
				continue
			}
			gt, wt := g.Result.Meta[study.ToolFailureKey], w.Meta[study.ToolFailureKey]
			if (gt == nil) != (wt == nil) {
				t.Errorf("%s %s: classification %v, stored %v", rec.ID, c, gt, wt)
				continue
			}
			if gt != nil {
				gt.CorrelationID, wt.CorrelationID = "", ""
				gb, _ := json.Marshal(gt)
				wb, _ := json.Marshal(wt)
				if string(gb) != string(wb) {
					t.Errorf("%s %s: classification %s, stored %s", rec.ID, c, gb, wb)
				}
			}
		}
	}
	if changed[study.SEP2145] != 12 || changed[study.ToolFailureShape] != 13 || changed[study.RateLimited] != 2 || changed[study.ToolFailureSEP2145] != 25 {
		t.Errorf("changed %v; want sep2145 12, toolfailure 13, ratelimited 2, toolfailure+sep2145 25", changed)
	}
}

// TestShapedReplays checks later calls are served in the shape too: a
// rate limit replayed at once under ratelimited answers -32023 again.
func TestShapedReplays(t *testing.T) {
	ctx := context.Background()
	f, err := Factory("")
	if err != nil {
		t.Fatal(err)
	}
	e, err := f.(simulator.ShapedEnvFactory).NewShapedEnv(ctx, "X05", 1, study.RateLimited)
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
	var g served
	if json.Unmarshal(obs, &g) != nil || g.Exception == nil || g.Exception.Error.Code != study.RateLimitedCode {
		t.Errorf("replay under ratelimited: %s", obs)
	}
	if w, ok := lab.RetryAfter(obs); !ok || w <= 0 {
		t.Errorf("replay announces no wait: %s", obs)
	}
}
