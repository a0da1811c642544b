package analysis

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
)

const (
	callLine  = `{"key":{"model":"m","prompt":"p","condition":"normalized","scenario":"%s","replicate":1},"server":"P01","preferred":"select_tool","non_harm":["select_tool","stop_or_escalate"],"turn":%d,"seed":1,"response":"%s","response_sha256":"%s"}`
	answerOK  = `{\"operation_status\": \"failed\", \"recovery_policy\": \"select_tool\"}`
	answerRep = `{\"operation_status\": \"failed\", \"recovery_policy\": \"retry_now\"}`
)

func line(scenario string, turn int, answer string) string {
	raw := strings.ReplaceAll(answer, `\"`, `"`)
	return fmt.Sprintf(callLine, scenario, turn, answer, results.SHA256([]byte(raw)))
}

// TestRescoreEachStreams checks that streaming re-scoring gives the rows
// Rescore gives, and that a split decision comes out twice (so that the
// fingerprint check catches it).
func TestRescoreEachStreams(t *testing.T) {
	text := strings.Join([]string{
		line("S01", 0, answerRep), line("S01", 1, answerOK),
		line("S02", 0, answerOK),
		"{broken",
		line("S03", 0, answerOK),
	}, "\n") + "\n"
	all, problems, err := Rescore(strings.NewReader(text), "calls.jsonl")
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0].Error(), "calls.jsonl:4:") {
		t.Fatalf("Rescore: %v %v", err, problems)
	}
	var streamed []results.Row
	problems, err = rescoreEach(strings.NewReader(text), "calls.jsonl", func(r *results.Row) error { streamed = append(streamed, *r); return nil })
	if err != nil || len(problems) != 1 {
		t.Fatalf("RescoreEach: %v %v", err, problems)
	}
	if len(streamed) != 3 || len(all) != 3 {
		t.Fatalf("rows: %d streamed, %d in memory; want 3", len(streamed), len(all))
	}
	for i := range all {
		if all[i] != streamed[i] {
			t.Errorf("row %d: %+v vs %+v", i, all[i], streamed[i])
		}
	}
	if streamed[0].Replays != 1 || !streamed[0].Outcome.Of(simulator.Strict) || !streamed[0].Outcome.Of(simulator.Retry) {
		t.Errorf("S01: %+v", streamed[0])
	}
	split := line("S01", 0, answerOK) + "\n" + line("S02", 0, answerOK) + "\n" + line("S01", 0, answerOK) + "\n"
	n := 0
	_, _ = rescoreEach(strings.NewReader(split), "calls.jsonl", func(*results.Row) error { n++; return nil })
	if n != 3 {
		t.Errorf("a split decision gave %d rows, want 3 (S01 twice)", n)
	}
}

// rescoreEach is Read for the rows alone.
func rescoreEach(r io.Reader, name string, fn func(*results.Row) error) (problems []error, err error) {
	_, problems, err = readCalls(r, name, func(_ *results.Group, row *results.Row) error { return fn(row) })
	return problems, err
}
