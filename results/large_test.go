package results_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
)

// huge answers every turn with a 10 MB answer that would parse as a valid
// false success, and sends it as its body too (as the exec backend does).
type huge struct{}

func (huge) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	text := `{"operation_status": "succeeded", "recovery_policy": "stop_or_escalate", "pad": "` + strings.Repeat("é", 5<<20) + `"}`
	body, _ := json.Marshal(map[string]string{"text": text})
	return models.Reply{Text: text, Body: body}, nil
}

// TestLargeAnswer: an answer over simulator.MaxAnswerBytes is invalid
// (too_large, so not a false success), and its call line keeps it once,
// clipped on a character boundary, with its size and sha256 and the
// body's, never the body; the line re-scores to the decision's row.
func TestLargeAnswer(t *testing.T) {
	d, s := runS01(t, huge{}, nil)
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	if a := d.Turns[0].Answer; a.Valid || a.Reason != simulator.ReasonTooLarge || d.Outcome.Values.Of(simulator.AnyFS) || !d.Outcome.Values.Of(simulator.Invalid) {
		t.Fatalf("answer %+v, outcome %+v", a, d.Outcome)
	}
	full, _ := huge{}.Generate(context.Background(), models.Request{})
	var b bytes.Buffer
	for _, c := range results.CallsOf(&d, s) {
		if c.ResponseSize != len(full.Text) || c.OriginalResponseSHA256 != results.SHA256([]byte(full.Text)) ||
			c.BodySize != len(full.Body) || c.OriginalBodySHA256 != results.SHA256(full.Body) || c.Body != nil || c.BodySHA256 != "" {
			t.Errorf("line: response_size %d, original sha %s, body_size %d, body %d bytes", c.ResponseSize, c.OriginalResponseSHA256, c.BodySize, len(c.Body))
		}
		if len(c.Response) > simulator.MaxAnswerBytes || len(c.Response) < simulator.MaxAnswerBytes-1 || !strings.HasPrefix(full.Text, c.Response) ||
			c.ResponseSHA256 != results.SHA256([]byte(c.Response)) || !utf8.ValidString(c.Response) {
			t.Errorf("the stored response is %d bytes, not the answer's first %d on a character boundary", len(c.Response), simulator.MaxAnswerBytes)
		}
		if err := json.NewEncoder(&b).Encode(&c); err != nil {
			t.Fatal(err)
		}
	}
	if b.Len() > simulator.MaxAnswerBytes+64<<10 {
		t.Errorf("the line is %d bytes for a %d-byte answer", b.Len(), len(full.Text))
	}
	var g results.Group
	if err := results.ParseGroup(b.Bytes(), &g, nil); err != nil {
		t.Fatal(err)
	}
	row, err := g.Row()
	if err != nil {
		t.Fatal(err)
	}
	if ran := results.RowOf(&d); row != ran || !row.Outcome.Of(simulator.Invalid) || row.Outcome.Of(simulator.AnyFS) {
		t.Errorf("re-scored row %+v, the run's %+v", row, ran)
	}
}
