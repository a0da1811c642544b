package results

import (
	"reflect"
	"slices"
	"testing"
)

// TestColumnsCoverRowAndCell checks that the column set is the one list of
// outcome columns: every bool of Row and every count of Cell (but N, Extra
// and Errors) is a Column, in the same order, with the same JSON and
// Parquet names, and each Column reads and writes its own fields.
func TestColumnsCoverRowAndCell(t *testing.T) {
	var rowBools, rowNames, cellInts []string
	rt := reflect.TypeFor[Row]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Type.Kind() == reflect.Bool {
			rowBools = append(rowBools, f.Tag.Get("json"))
			rowNames = append(rowNames, f.Tag.Get("parquet"))
		}
	}
	ct := reflect.TypeFor[Cell]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if name := f.Tag.Get("json"); f.Type.Kind() == reflect.Int && !slices.Contains([]string{"n", "extra", "errors"}, name) {
			cellInts = append(cellInts, name)
		}
	}
	var names []string
	for _, c := range Columns {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, rowBools) || !slices.Equal(names, rowNames) || !slices.Equal(names, cellInts) {
		t.Fatalf("columns %v; Row bools %v (parquet %v); Cell counts %v", names, rowBools, rowNames, cellInts)
	}
	for i := range Columns {
		c := &Columns[i]
		var r Row
		c.Set(&r, true)
		n := 0
		for j := range Columns {
			if Columns[j].Of(&r) {
				n++
			}
		}
		if !c.Of(&r) || n != 1 {
			t.Errorf("column %s sets %d columns of a row", c.Name, n)
		}
		tl := NewTally()
		r.Status = StatusOK
		tl.Add(&r)
		cell := tl.Cells()[0]
		if c.Count(&cell) != 1 || cell.N != 1 {
			t.Errorf("column %s: a row with it counts %d in its cell", c.Name, c.Count(&cell))
		}
	}
}
