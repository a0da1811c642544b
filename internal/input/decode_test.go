package input

import (
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf16"
)

// encode returns text in the wide encoding enc ("UTF-16LE", "UTF-16BE",
// "UTF-32LE", "UTF-32BE"), with a byte-order mark when bom is set.
func encode(text, enc string, bom bool) []byte {
	if bom {
		text = "\ufeff" + text
	}
	var order binary.AppendByteOrder = binary.LittleEndian
	if strings.HasSuffix(enc, "BE") {
		order = binary.BigEndian
	}
	var out []byte
	if strings.HasPrefix(enc, "UTF-16") {
		for _, u := range utf16.Encode([]rune(text)) {
			out = order.AppendUint16(out, u)
		}
		return out
	}
	for _, r := range text {
		out = order.AppendUint32(out, uint32(r))
	}
	return out
}

func TestDecode(t *testing.T) {
	const text = "name: x\n"
	for _, tc := range []struct {
		name string
		data []byte
		want string // the text, or the error
	}{
		{"UTF-8", []byte(text), text},
		{"UTF-8 with BOM", []byte("\xef\xbb\xbf" + text), text},
		{"empty", nil, ""},
		{"one byte", []byte("{"), "{"},
		{"BOM only", []byte("\xef\xbb\xbf"), ""},
		{"UTF-16LE with BOM", encode(text, "UTF-16LE", true), "file is UTF-16 (little-endian); save it as UTF-8"},
		{"UTF-16BE with BOM", encode(text, "UTF-16BE", true), "file is UTF-16 (big-endian); save it as UTF-8"},
		{"UTF-16LE", encode(text, "UTF-16LE", false), "file is UTF-16 (little-endian); save it as UTF-8"},
		{"UTF-16BE", encode(text, "UTF-16BE", false), "file is UTF-16 (big-endian); save it as UTF-8"},
		{"UTF-32LE with BOM", encode(text, "UTF-32LE", true), "file is UTF-32 (little-endian); save it as UTF-8"},
		{"UTF-32BE with BOM", encode(text, "UTF-32BE", true), "file is UTF-32 (big-endian); save it as UTF-8"},
		{"UTF-32LE", encode(text, "UTF-32LE", false), "file is UTF-32 (little-endian); save it as UTF-8"},
		{"UTF-32BE", encode(text, "UTF-32BE", false), "file is UTF-32 (big-endian); save it as UTF-8"},
		{"binary", []byte{0x89, 'P', 'N', 'G', 0, 0}, "\x89PNG\x00\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.data)
			if err != nil {
				if err.Error() != tc.want {
					t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
				}
			} else if string(got) != tc.want {
				t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

// TestTrailing: only white space may follow a decoded value.
func TestTrailing(t *testing.T) {
	for in, want := range map[string]bool{`{}`: false, "{} \n\t": false, `{}x`: true, `{}}`: true, `{}]`: true, `{} {}`: true, `{} 1`: true} {
		t.Run(in, func(t *testing.T) {
			dec := json.NewDecoder(strings.NewReader(in))
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			if got := Trailing(dec); got != want {
				t.Errorf("Trailing after %q = %v, want %v", in, got, want)
			}
		})
	}
}
