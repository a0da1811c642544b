package results

import (
	"reflect"
	"testing"

	"github.com/mcpstress/stress/simulator"
)

func TestFingerprint(t *testing.T) {
	rows := []Row{
		{Model: "m", Condition: "normalized", Scenario: "S01", Replicate: 1, Status: "ok", Outcome: simulator.Values{}.WithFlag(simulator.Strict, true)},
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
	rows[1].Outcome.Set(simulator.Cover, 1)
	for i := range rows {
		c.Add(&rows[i])
	}
	if a == c {
		t.Error("a changed flag left the fingerprint equal")
	}
	check := ParquetCheck{Rows: a.N, RowsSum: a.Hex()}
	if got, err := check.Fingerprint(); err != nil || got != a {
		t.Errorf("recorded fingerprint reads back as %v, %v; want %v", got, err, a)
	}
	check.RowsSum = "zz"
	if _, err := check.Fingerprint(); err == nil {
		t.Error("a bad recorded sum was accepted")
	}
}

// TestFingerprintFields: the fingerprint's encoding covers every field
// of a row and every outcome column: changing any one changes it, and so
// does a lab column's absence.
func TestFingerprintFields(t *testing.T) {
	if n := reflect.TypeFor[Row]().NumField(); n != 14 {
		t.Fatalf("Row has %d fields: encodeRow covers 14; add the new ones", n)
	}
	var base Row
	for c := range simulator.Columns {
		base.Outcome.Set(simulator.Col(c), 1)
	}
	var ref Fingerprint
	ref.Add(&base)
	v := reflect.ValueOf(&base).Elem()
	changed := func(what string, r *Row) {
		var got Fingerprint
		got.Add(r)
		if got == ref {
			t.Errorf("%s does not change the fingerprint", what)
		}
	}
	for i := range v.NumField() {
		r := base
		fv := reflect.ValueOf(&r).Elem().Field(i)
		switch fv.Kind() {
		case reflect.String:
			fv.SetString("x")
		case reflect.Int64:
			fv.SetInt(5)
		default:
			continue // Outcome, below
		}
		changed("field "+v.Type().Field(i).Name, &r)
	}
	for c := range simulator.Columns {
		r := base
		r.Outcome.Set(simulator.Col(c), 0)
		changed("column "+simulator.Columns[c].Name, &r)
		if simulator.Columns[c].Kind.Lab() {
			r.Outcome.Clear(simulator.Col(c))
			changed("absent column "+simulator.Columns[c].Name, &r)
		}
	}
}
