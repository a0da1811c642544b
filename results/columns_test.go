package results

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestColumnsCoverRowAndCell checks that the column set is the one list of
// outcome columns: every bool of Row is a Flag column, every *bool a
// LabFlag and every *int64 a LabSum, in the same order, with the same JSON
// and Parquet names (the lab ones optional: null in Parquet, omitted in
// JSON when absent); every count of Cell (but N, LabN, Extra and Errors)
// is a Column; and each Column reads and writes its own fields.
func TestColumnsCoverRowAndCell(t *testing.T) {
	var rowCols, rowNames, cellInts []string
	kinds := map[reflect.Type]Kind{reflect.TypeFor[bool](): Flag, reflect.TypeFor[*bool](): LabFlag, reflect.TypeFor[*int64](): LabSum}
	var rowKinds []Kind
	rt := reflect.TypeFor[Row]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		k, ok := kinds[f.Type]
		if !ok {
			continue
		}
		json, pq := f.Tag.Get("json"), f.Tag.Get("parquet")
		if k.Lab() {
			if !strings.HasSuffix(json, ",omitempty") || !strings.HasSuffix(pq, ",optional") {
				t.Errorf("Row.%s: json %q, parquet %q; want omitempty and optional", f.Name, json, pq)
			}
			json, pq = strings.TrimSuffix(json, ",omitempty"), strings.TrimSuffix(pq, ",optional")
		}
		rowCols, rowNames, rowKinds = append(rowCols, json), append(rowNames, pq), append(rowKinds, k)
	}
	ct := reflect.TypeFor[Cell]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if name := f.Tag.Get("json"); f.Type.Kind() == reflect.Int && !slices.Contains([]string{"n", "lab_n", "extra", "errors"}, name) {
			cellInts = append(cellInts, name)
		}
	}
	var names []string
	var colKinds []Kind
	for _, c := range Columns {
		names, colKinds = append(names, c.Name), append(colKinds, c.Kind)
	}
	if !slices.Equal(names, rowCols) || !slices.Equal(names, rowNames) || !slices.Equal(names, cellInts) || !slices.Equal(colKinds, rowKinds) {
		t.Fatalf("columns %v (kinds %v); Row fields %v (parquet %v, kinds %v); Cell counts %v", names, colKinds, rowCols, rowNames, rowKinds, cellInts)
	}
	for i := range Columns {
		c := &Columns[i]
		var r Row
		c.Set(&r, 3)
		n := 0
		for j := range Columns {
			if _, ok := Columns[j].Value(&r); ok && Columns[j].Kind.Lab() {
				n++
			}
			if Columns[j].Of(&r) && j != i {
				n++
			}
		}
		want := int64(1)
		if c.Kind == LabSum {
			want = 3
		}
		if v, ok := c.Value(&r); !ok || v != want || !c.Of(&r) || n != b2iInt(c.Kind.Lab()) || r.Lab() != c.Kind.Lab() {
			t.Errorf("column %s: set to 3 reads %d, %v; %d other columns set; lab %v", c.Name, v, ok, n, r.Lab())
		}
		tl := NewTally()
		r.Status = StatusOK
		tl.Add(&r)
		cell := tl.Cells()[0]
		if c.Count(&cell) != int(want) || cell.N != 1 || c.Denominator(&cell) != 1 || cell.LabN != b2iInt(c.Kind.Lab()) {
			t.Errorf("column %s: a row with it counts %d in its cell (N %d, LabN %d)", c.Name, c.Count(&cell), cell.N, cell.LabN)
		}
		c.Clear(&r)
		if _, ok := c.Value(&r); ok != !c.Kind.Lab() || c.Of(&r) || r.Lab() {
			t.Errorf("column %s: cleared, it still reads as set", c.Name)
		}
	}
}

func b2iInt(b bool) int { return int(b2i(b)) }

// TestCellJSON: a stored-replay cell prints its fields in order without
// the lab ones; a cell with lab outcomes adds lab_n and every lab column,
// zeros included; both read back as they were.
func TestCellJSON(t *testing.T) {
	stored := Cell{Model: "m", Prompt: "p", Condition: "code_only", N: 3, Strict: 1, Cover: 2, Retry: 1, Extra: 4, Errors: 1}
	b, err := json.Marshal(stored)
	want := `{"model":"m","prompt":"p","condition":"code_only","n":3,"strict":1,"cover":2,"retry":1,"invalid":0,"any_fs":0,"terminal_fs":0,"extra":4,"errors":1}`
	if err != nil || string(b) != want {
		t.Errorf("stored cell: %s (%v)\nwant %s", b, err, want)
	}
	live := stored
	live.LabN, live.Recovered, live.Harm, live.HarmDuplicate, live.Calls, live.LabMS = 3, 2, 1, 1, 7, 2160
	b, err = json.Marshal(live)
	want = strings.TrimSuffix(want, "}") + `,"lab_n":3,"recovered":2,"harm":1,"harm_duplicate":1,"harm_wrong_value":0,"harm_collateral":0,"harm_data_loss":0,"harm_incomplete":0,"invalid_action":0,"calls":7,"lab_ms":2160,"label_action":{"strict_recovered":0,"strict_unrecovered":0,"other_recovered":0,"other_unrecovered":0}}`
	if err != nil || string(b) != want {
		t.Errorf("live cell: %s (%v)\nwant %s", b, err, want)
	}
	for _, c := range []Cell{stored, live} {
		b, _ := json.Marshal(c)
		var back Cell
		if err := json.Unmarshal(b, &back); err != nil || back != c {
			t.Errorf("%s reads back as %+v (%v)", b, back, err)
		}
	}
}

// TestRowEqual compares the lab columns by value.
func TestRowEqual(t *testing.T) {
	mk := func(rec bool, calls int64) Row {
		r := Row{Model: "m", Status: StatusOK}
		Columns[ColumnIndex("recovered")].Set(&r, b2i(rec))
		Columns[ColumnIndex("calls")].Set(&r, calls)
		return r
	}
	a, b := mk(true, 2), mk(true, 2)
	if !a.Equal(&b) || a.Recovered == b.Recovered {
		t.Error("equal rows with distinct pointers are not Equal")
	}
	for _, o := range []Row{mk(false, 2), mk(true, 3), {Model: "m", Status: StatusOK}} {
		if a.Equal(&o) || o.Equal(&a) {
			t.Errorf("%+v Equal %+v", a, o)
		}
	}
	if r := (Row{Model: "m"}); !r.Equal(&Row{Model: "m"}) {
		t.Error("stored rows")
	}
}
