package failclosed

import (
	"encoding/json"
	"strconv"
	"strings"
)

// maxInt64Digits is the number of decimal digits of the largest int64
// (9223372036854775807).
const maxInt64Digits = 19

// integral reads n, a JSON number as encoding/json validated it, as an
// int64 when its value is a whole number in int64's range, however it is
// written: 1000, 1000.0, 1e3, 1.0E+3 and 1.76722563e12 are all whole
// numbers. It reports false for a value with a fractional part (1000.5,
// 1.5e0, 1e-3) and for one outside int64's range.
//
// Note: the proposals the adapters read type their milliseconds and
// quotas as TypeScript number (JSON Schema "number" with a minimum of 0),
// and JSON Schema's "integer" admits 1.0; Python's json module writes
// floats as 1000.0 and a large one as 1.76722563e12. The value decides,
// not the spelling. The work is in proportion to the length of n, never to
// its exponent: 1e999999999 is refused from its digit count, without
// building the number.
func integral(n json.Number) (int64, bool) {
	s := string(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	shift := -int64(len(frac)) // the power of ten digits is scaled by
	trimmed := strings.TrimRight(digits, "0")
	shift += int64(len(digits) - len(trimmed))
	digits = trimmed
	if digits == "" {
		return 0, true // zero, however written (0.0, -0, 0e9)
	}
	if hasExp {
		e, err := strconv.ParseInt(exp, 10, 64)
		// Note: the input is at most MaxSize bytes, so an exponent beyond
		// ±2^40 leaves a non-zero value either far outside int64 or far
		// below 1; bounding it first keeps shift from overflowing.
		if err != nil || e > 1<<40 || e < -(1<<40) {
			return 0, false
		}
		shift += e
	}
	if shift < 0 {
		return 0, false // digits has no trailing zero, so a negative power leaves a fraction
	}
	if int64(len(digits))+shift > maxInt64Digits {
		return 0, false
	}
	v, err := strconv.ParseInt(digits+strings.Repeat("0", int(shift)), 10, 64)
	if err != nil {
		return 0, false // 19 digits above 9223372036854775807
	}
	if neg {
		v = -v
	}
	return v, true
}
