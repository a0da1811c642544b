package inspect

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// This file holds the small JSON appenders the samples are assembled
// with: a sample is written from pre-encoded pieces (messages, which
// repeat across a log's samples) and short strings, faster than
// encoding/json reflects over the same values. Note: appendEscaped
// alone done by encoding/json's Encoder made stress export of 100,020
// decisions take 1.60 to 1.79 s CPU against 1.16 to 1.28 (.json; .eval
// 5.48 to 8.21 against 5.04 to 5.18), and 1.47 to 2.73 s with
// github.com/segmentio/encoding (2026-12-03).

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it (<, > and & excepted: logs are not HTML), invalid UTF-8
// replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendEscaped(b, s)
	return append(b, '"')
}

// plain says which bytes appendEscaped copies as they are: printable
// ASCII but for " and \.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendEscaped appends s escaped as the inside of a JSON string
// (appendString without the quotes).
func appendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

// appendKey appends "key": after a comma unless first.
func appendKey(b []byte, key string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = appendString(b, key)
	return append(b, ':')
}

// appendFloat appends f as a JSON number (never NaN or ±Inf: 0 instead).
func appendFloat(b []byte, f float64) []byte {
	if f != f || f > 1e308 || f < -1e308 {
		return append(b, '0')
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// appendJSON appends v encoded by encoding/json, or null if it cannot be.
func appendJSON(b []byte, v any) []byte {
	enc, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, enc...)
}
