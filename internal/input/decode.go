package input

import (
	"bytes"
	"errors"
)

// Decode returns the UTF-8 text of a file's bytes: a UTF-8 byte-order mark
// is dropped; UTF-16 and UTF-32, recognized by their byte-order marks or
// by the NUL bytes of ASCII text in the first four bytes, are an error
// naming the encoding (the caller adds the file's name).
func Decode(data []byte) ([]byte, error) {
	if rest, ok := bytes.CutPrefix(data, []byte("\xef\xbb\xbf")); ok {
		return rest, nil
	}
	if enc := wideEncoding(data); enc != "" {
		return nil, errors.New("file is " + enc + "; save it as UTF-8")
	}
	return data, nil
}

// wideEncoding names the UTF-16 or UTF-32 encoding data is in, or "".
func wideEncoding(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0, 0, 0xfe, 0xff}):
		return "UTF-32 (big-endian)"
	case bytes.HasPrefix(data, []byte{0xff, 0xfe, 0, 0}):
		return "UTF-32 (little-endian)"
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		return "UTF-16 (big-endian)"
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		return "UTF-16 (little-endian)"
	case len(data) < 4:
		return ""
	}
	// Without a byte-order mark, ASCII text (as every manifest, corpus and
	// prompt starts) leaves NULs where the wide encodings pad it.
	nul := [4]bool{data[0] == 0, data[1] == 0, data[2] == 0, data[3] == 0}
	switch nul {
	case [4]bool{true, true, true, false}:
		return "UTF-32 (big-endian)"
	case [4]bool{false, true, true, true}:
		return "UTF-32 (little-endian)"
	case [4]bool{true, false, true, false}:
		return "UTF-16 (big-endian)"
	case [4]bool{false, true, false, true}:
		return "UTF-16 (little-endian)"
	}
	return ""
}
