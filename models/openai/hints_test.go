package openai_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models/openai"
	"github.com/mcpstress/stress/runner"
)

// TestUnreachableOnce: two models on an OpenAI-compatible server nobody
// listens at stop the preflight with one error naming the server, both
// models, and what to do.
func TestUnreachableOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String() + "/v1"
	l.Close()
	m := manifest(t, manifests.Model{Name: "a", Backend: openai.Backend, Model: "tiny", Host: base})
	m.Models = append(m.Models, manifests.Model{Name: "b", Backend: openai.Backend, Model: "tiny", Host: base})
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = plan.Verify(context.Background())
	want := "cannot reach the OpenAI-compatible server at " + base + ` (models "a", "b"): connection refused: ` + openai.UnreachableHint
	if err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
	if !strings.Contains(want, "check the model's host in the manifest") {
		t.Errorf("hint %q does not point at the manifest's host", openai.UnreachableHint)
	}
}
