package dbenv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestShapedEnv: under an error shape every later failure reaches the
// model in that shape: the server's own rate limit (D03) as -32023 with
// retryAfterMs under ratelimited, a JSON-RPC error moved into an isError
// result under sep2145 (D02), the ToolFailure classification in _meta
// of DBHub's own isError result under toolfailure (D07), which leaves a
// JSON-RPC error as it is (D02); unshaped, the proxy's error as sent.
func TestShapedEnv(t *testing.T) {
	_, f := factory(t, SQLite, true)
	ctx := context.Background()
	for _, c := range []struct {
		id    string
		shape study.Condition
		want  string
	}{
		{"D03", "ratelimited", `"code":-32023`},
		{"D03", "ratelimited", `"retryAfterMs":30000`},
		{"D02", "sep2145", `"content":[{"type":"text","text":"set_order_status failed`},
		{"D02", "sep2145", `"isError":true`},
		{"D07", "toolfailure", `"` + study.ToolFailureKey + `"`},
		{"D02", "toolfailure", `{"exception":{"type":"jsonrpc.Error","error":{"code":-31050`},
		{"D02", "", `{"exception":{"type":"jsonrpc.Error","error":{"code":-31050`},
	} {
		t.Run(fmt.Sprintf("%s under %q contains %s", c.id, c.shape, c.want), func(t *testing.T) {
			env, err := f.NewShapedEnv(ctx, c.id, 1, c.shape)
			if err != nil {
				t.Fatal(err)
			}
			e := env.(*Env)
			if _, err := e.Start(ctx); err != nil {
				t.Fatal(err)
			}
			obs, more, err := e.Send(ctx, 1, e.First(), 0) // at once: the fault still holds
			e.Close()
			if err != nil || !more {
				t.Fatalf("%s %s: %v, more %v", c.id, c.shape, err, more)
			}
			if !strings.Contains(string(obs), c.want) {
				t.Errorf("%s under %q: %s\nwant it to contain %s", c.id, c.shape, obs, c.want)
			}
			if !json.Valid(obs) {
				t.Errorf("%s: not JSON: %s", c.id, obs)
			}
		})
	}
	if _, err := f.NewShapedEnv(ctx, "D01", 1, "normalized"); err == nil {
		t.Error("a condition that is no shape was accepted")
	}
	var _ simulator.ShapedEnvFactory = f
}
