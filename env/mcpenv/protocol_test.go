package mcpenv

import (
	"context"
	"fmt"
	"testing"
)

// TestProtocolRecorded starts a reference server with the Go SDK's
// default version and with 2025-06-18 asked for, and checks each
// decision's outcome records the version the real server negotiated.
func TestProtocolRecorded(t *testing.T) {
	mods := modules(t)
	set, err := BuiltinSet("")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ ask, want string }{{"", ""}, {"2025-06-18", "2025-06-18"}} {
		t.Run(fmt.Sprintf("asked %q", tc.ask), func(t *testing.T) {
			e := New(set.Scenarios[0], Options{Modules: mods, CallTimeout: loadedTimeout, ProtocolVersion: tc.ask})
			if _, err := e.Start(ctx); err != nil {
				t.Fatal(err)
			}
			out, err := e.Final(ctx)
			e.Close()
			if err != nil {
				t.Fatal(err)
			}
			if out.Protocol == "" || (tc.want != "" && out.Protocol != tc.want) {
				t.Errorf("asked %q: negotiated %q, want %q", tc.ask, out.Protocol, tc.want)
			}
			t.Logf("asked %q: %s negotiated %s", tc.ask, set.Scenarios[0].Server, out.Protocol)
		})
	}
}
