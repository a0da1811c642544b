package results

import (
	"reflect"
	"testing"
)

func TestFingerprint(t *testing.T) {
	rows := []Row{
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
	base := Row{Recovered: &f, Harm: &f, HarmDuplicate: &f, HarmWrongValue: &f, HarmCollateral: &f, HarmDataLoss: &f, HarmIncomplete: &f,
		InvalidAction: &f, Calls: &one, LabMS: &one}
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
