package checkmatrix

import (
	"context"
	"testing"
)

// want is the expected outcome per shape, in the order go-sdk listed,
// go-sdk cold, validating listed, validating cold. The Go SDK client
// (v1.8.0) does no client-side output check at all: its 12 cells all
// return the result as the server sent it. The validating columns
// reproduce seed 003's TypeScript v1.32.2 column and its cold control.
var want = map[string][4]string{
	"conforming_success":         {`returned {"value":7}`, `returned {"value":7}`, `returned {"value":7}`, `returned {"value":7}`},
	"offschema_success":          {`returned {"error":"unavailable"}`, `returned {"error":"unavailable"}`, "rejected -32602", `returned {"error":"unavailable"}`},
	"success_without_structured": {"returned", "returned", "rejected -32600", "returned"},
	"error_text_only":            {"returned isError", "returned isError", "returned isError", "returned isError"},
	"error_offschema":            {`returned isError {"error":"unavailable"}`, `returned isError {"error":"unavailable"}`, "rejected -32602", `returned isError {"error":"unavailable"}`},
	"error_conforming":           {`returned isError {"value":0}`, `returned isError {"value":0}`, `returned isError {"value":0}`, `returned isError {"value":0}`},
}

func TestMatrix(t *testing.T) {
	for _, pv := range []string{"", "2025-11-25", "2025-03-26"} {
		m, err := Run(context.Background(), pv)
		if err != nil {
			t.Fatalf("protocol %q: %v", pv, err)
		}
		if pv != "" && m.ProtocolVersion != pv {
			t.Errorf("pinned %s, negotiated %s", pv, m.ProtocolVersion)
		}
		if len(m.Cells) != 24 {
			t.Fatalf("protocol %q: %d cells, want 24 (12 per client)", pv, len(m.Cells))
		}
		for _, sh := range Shapes {
			w, ok := want[sh.Name]
			if !ok {
				t.Fatalf("no expectation for shape %s", sh.Name)
			}
			for i, col := range []struct {
				client     string
				discovered bool
			}{{GoSDK, true}, {GoSDK, false}, {Validating, true}, {Validating, false}} {
				c, ok := m.Cell(sh.Name, col.client, col.discovered)
				if !ok {
					t.Fatalf("protocol %q: no cell %s/%s/%v", pv, sh.Name, col.client, col.discovered)
				}
				if got := c.Outcome(); got != w[i] {
					t.Errorf("protocol %s: %s, %s, listed %v: got %q, want %q (%s)", m.ProtocolVersion, sh.Name, col.client, col.discovered, got, w[i], c.Error)
				}
				if !c.Returned && c.Error == "" {
					t.Errorf("%s %s: a rejection without a reason", sh.Name, col.client)
				}
			}
		}
	}
}
