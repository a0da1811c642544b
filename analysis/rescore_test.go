package analysis

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpstress/stress/results"
)

func TestFingerprint(t *testing.T) {
	rows := []results.Row{
		{Model: "m", Condition: "normalized", Scenario: "S01", Replicate: 1, Status: "ok", Strict: true},
		{Model: "m", Condition: "normalized", Scenario: "S02", Replicate: 1, Status: "ok"},
		{Model: "m", Condition: "prose", Scenario: "S01", Replicate: 2, Status: "error", Error: "x"},
	}
	var a, b, c Fingerprint
	for i := range rows {
		a.Add(&rows[i])
		b.Add(&rows[len(rows)-1-i])
	}
	if a != b || a.N != 3 {
		t.Errorf("order changed the fingerprint: %v vs %v", a, b)
	}
	rows[1].Cover = true
	for i := range rows {
		c.Add(&rows[i])
	}
	if a == c {
		t.Error("a changed flag left the fingerprint equal")
	}
}

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
	problems, err = RescoreEach(strings.NewReader(text), "calls.jsonl", func(r *results.Row) error { streamed = append(streamed, *r); return nil })
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
	if streamed[0].Replays != 1 || !streamed[0].Strict || !streamed[0].Retry {
		t.Errorf("S01: %+v", streamed[0])
	}
	split := line("S01", 0, answerOK) + "\n" + line("S02", 0, answerOK) + "\n" + line("S01", 0, answerOK) + "\n"
	n := 0
	_, _ = RescoreEach(strings.NewReader(split), "calls.jsonl", func(*results.Row) error { n++; return nil })
	if n != 3 {
		t.Errorf("a split decision gave %d rows, want 3 (S01 twice)", n)
	}
}

// TestFingerprintFields: the fingerprint's encoding covers every field
// of a row: changing any one changes it.
func TestFingerprintFields(t *testing.T) {
	if n := reflect.TypeFor[results.Row]().NumField(); n != 24 {
		t.Fatalf("results.Row has %d fields: encodeRow covers 24; add the new ones", n)
	}
	tr, f, one := true, false, int64(1)
	base := results.Row{Recovered: &f, Harm: &f, InvalidAction: &f, Calls: &one, LabMS: &one}
	var ref Fingerprint
	ref.Add(&base)
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		r := base
		fv := reflect.ValueOf(&r).Elem().Field(i)
		switch fv.Kind() {
		case reflect.String:
			fv.SetString("x")
		case reflect.Int64:
			fv.SetInt(5)
		case reflect.Bool:
			fv.SetBool(true)
		case reflect.Pointer:
			if fv.Type().Elem().Kind() == reflect.Bool {
				fv.Set(reflect.ValueOf(&tr))
			} else {
				fv.Set(reflect.ValueOf(new(int64)))
			}
		}
		var got Fingerprint
		got.Add(&r)
		if got == ref {
			t.Errorf("field %s does not change the fingerprint", v.Type().Field(i).Name)
		}
	}
}
