package input

import (
	"encoding/json"
	"errors"
	"io"
)

// Trailing reports whether dec holds anything but white space after the
// value it decoded last: a second value, or bytes that are not JSON at
// all (json.Decoder.More does not see a stray ] or }).
func Trailing(dec *json.Decoder) bool {
	_, err := dec.Token()
	return !errors.Is(err, io.EOF)
}
