package models_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
)

// TestJoinErrors: the errors of one unreachable server become one naming
// every model on it (an error wrapping one included); other servers and
// other errors stay.
func TestJoinErrors(t *testing.T) {
	down := func(host, model string) error {
		return &models.UnreachableError{Server: "Ollama", Host: host, Note: "the default host", Models: []string{model}, Reason: "connection refused", Hint: "start it"}
	}
	err := models.JoinErrors(
		down("http://a:1", "m1"),
		errors.New("digest mismatch"),
		fmt.Errorf("model %q endpoint http://a:1: %w", "m2", down("http://a:1", "m2")),
		down("http://b:1", "m3"),
		down("http://a:1", "m1"),
		nil,
	)
	want := `cannot reach Ollama at http://a:1 (the default host; models "m1", "m2"): connection refused: start it
digest mismatch
cannot reach Ollama at http://b:1 (the default host; model "m3"): connection refused: start it`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	if models.JoinErrors(nil, nil) != nil {
		t.Error("JoinErrors of nils is not nil")
	}
}

// TestUnpinnedSaysHowToPin: a pinned backend's model without a digest is
// refused with the command that lists the digests (with -host when the
// manifest names the server, its password masked), the field to copy the
// digest into and the way to check it.
func TestUnpinnedSaysHowToPin(t *testing.T) {
	for _, tc := range []struct {
		name string
		md   manifests.Model
		want []string
	}{
		{"no host", manifests.Model{Name: "llama", Backend: "pinned-test", Model: "llama3.2:3b"},
			[]string{`manifest m.yaml: field models[2].digest: model "llama" (llama3.2:3b) has no digest: run "stress models", copy the digest it lists for llama3.2:3b into models[2].digest and check it with "stress verify m.yaml"; or pass -allow-unpinned`}},
		{"host with a password", manifests.Model{Name: "llama", Backend: "pinned-test", Model: "llama3.2:3b", Host: "http://u:secret@gpu:11434"},
			[]string{`run "stress models -host http://u:xxxxx@gpu:11434"`}},
		{"endpoints", manifests.Model{Name: "llama", Backend: "pinned-test", Model: "llama3.2:3b", Endpoints: []string{"http://gpu1:11434", "http://gpu2:11434"}},
			[]string{`run "stress models -host http://gpu1:11434"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := models.LookupModel("m.yaml", 2, tc.md, false)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%+v: error %v, want %q", tc.md, err, w)
				}
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

func init() {
	models.Register("pinned-test", models.Backend{Pinned: true, New: func(s models.Spec) (models.Model, error) { return nil, errors.New("not built") }})
}
