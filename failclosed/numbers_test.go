package failclosed

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

// TestIntegral pins integral against each way JSON writes a number: the
// whole numbers in any form, and the refusals (a fraction, a value past
// int64, an exponent that would build a huge number).
func TestIntegral(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1000", 1000, true}, {"1000.0", 1000, true}, {"1e3", 1000, true}, {"1E+3", 1000, true}, {"1.0e3", 1000, true},
		{"10e2", 1000, true}, {"100000e-2", 1000, true}, {"1.76722563e12", 1767225630000, true}, {"1767225630000.000", 1767225630000, true},
		{"0", 0, true}, {"-0", 0, true}, {"0.0", 0, true}, {"0e999999999999999999999", 0, true}, {"0.000e-5", 0, true},
		{"-32023", -32023, true}, {"-32023.0", -32023, true}, {"-3.2023e4", -32023, true},
		{"9223372036854775807", 1<<63 - 1, true}, {"9.223372036854775807e18", 1<<63 - 1, true},
		{"0.00000000000000000000001e25", 100, true},
		{"1000.5", 0, false}, {"1.5e0", 0, false}, {"1e-3", 0, false}, {"0.1", 0, false}, {"1767225630000.5", 0, false},
		{"9223372036854775808", 0, false}, {"1e19", 0, false}, {"1e999999999", 0, false}, {"1e-999999999", 0, false},
		{"1e99999999999999999999", 0, false}, {"-1e99999999999999999999", 0, false},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, ok := integral(json.Number(c.in))
			if got != c.want || ok != c.ok {
				t.Errorf("integral(%s) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
			}
		})
	}
}

// FuzzIntegral checks integral against math/big's exact reading of every
// JSON number that is not too long to read exactly: the value is whole
// and within int64 exactly when integral says so, and then equal.
func FuzzIntegral(f *testing.F) {
	for _, s := range []string{"1000.0", "1e3", "1.76722563e12", "1000.5", "-0.0e1", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var n json.Number
		if json.Unmarshal([]byte(s), &n) != nil || len(s) > 64 {
			return // not a JSON number, or too long for the reference below
		}
		if i := strings.IndexAny(s, "eE"); i >= 0 && len(strings.TrimLeft(s[i+1:], "+-0")) > 3 {
			return // math/big would build 10^exponent
		}
		got, ok := integral(n)
		r, rok := new(big.Rat).SetString(string(n))
		if !rok {
			t.Fatalf("big.Rat cannot read %s", n)
		}
		want := r.IsInt() && r.Num().IsInt64()
		if ok != want || (ok && got != r.Num().Int64()) {
			t.Fatalf("integral(%s) = %d, %v; math/big says whole and in range: %v (%s)", n, got, ok, want, r.RatString())
		}
	})
}
