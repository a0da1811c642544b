package csvcell

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"slices"
	"testing"
)

// TestRoundTrip: every value that could start a formula is written with
// one apostrophe in front, a value starting with an apostrophe too, and
// every value reads back unchanged through encoding/csv.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct{ value, cell string }{
		{"", ""},
		{"plain", "plain"},
		{"=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"},
		{"+1", "'+1"},
		{"-2+3", "'-2+3"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tx", "'\tx"},
		{"\rx", "'\rx"},
		{"'quoted", "''quoted"},
		{"''", "'''"},
		{"a=b", "a=b"},
		{"O'Brien", "O'Brien"},
		{" =x", " =x"},
	} {
		t.Run(fmt.Sprintf("%q", tc.value), func(t *testing.T) {
			if got := escape(tc.value); got != tc.cell {
				t.Errorf("Escape(%q) = %q, want %q", tc.value, got, tc.cell)
			}
			if got := unescape(tc.cell); got != tc.value {
				t.Errorf("Unescape(%q) = %q, want %q", tc.cell, got, tc.value)
			}
		})
	}
	row := []string{"=1+1", "'x", "-", "src/=a.ts", "note, with \"quotes\"\nand a line"}
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	cw.Write(EscapeRow(row))
	cw.Flush()
	rec, err := csv.NewReader(&b).Read()
	if err != nil {
		t.Fatal(err)
	}
	if rec[0] != "'=1+1" {
		t.Errorf("written cell %q, want '=1+1", rec[0])
	}
	if got := UnescapeRow(rec); !slices.Equal(got, row) {
		t.Errorf("read back %q, want %q", got, row)
	}
	// A hand-written apostrophe is taken off, as a spreadsheet would.
	if got := unescape("'-J. Doe"); got != "-J. Doe" {
		t.Errorf("Unescape('-J. Doe) = %q", got)
	}
}
