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
// of a row: changing any one changes it.
func TestFingerprintFields(t *testing.T) {
	if n := reflect.TypeFor[Row]().NumField(); n != 29 {
		t.Fatalf("Row has %d fields: encodeRow covers 29; add the new ones", n)
	}
	tr, f, one := true, false, int64(1)
	base := Row{Outcome: simulator.Values{}.WithFlag(simulator.Recovered, f).WithFlag(simulator.Harm, f).WithFlag(simulator.HarmDuplicate, f).WithFlag(simulator.HarmWrongValue, f).WithFlag(simulator.HarmCollateral, f).WithFlag(simulator.HarmDataLoss, f).WithFlag(simulator.HarmIncomplete, f).WithFlag(simulator.InvalidAction, f).With(simulator.Calls, one).With(simulator.LabMS, one)}
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
