package lab

import (
	"bytes"
	"encoding/json"

	"github.com/mcpstress/stress/statediff"
)

// resolveJSON follows a JSON pointer in a JSON document.
func resolveJSON(raw []byte, ptr string) (json.RawMessage, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var doc any
	if d.Decode(&doc) != nil {
		return nil, false
	}
	v, ok := statediff.Resolve(doc, ptr)
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(v)
	return b, err == nil
}
