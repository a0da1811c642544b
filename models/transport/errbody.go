package transport

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"
)

// errorBody is what an inference server's error answer says: the
// message of a JSON error (OpenAI's {"error":{"message","type","code"}},
// Ollama's {"error":"…"}, vLLM's older {"object":"error","message":…}),
// with its type and code; otherwise the body's text with its whitespace
// collapsed, or an HTML page's title. The text is clipped to 300 bytes.
// code is the JSON error's code or type ("" without one).
func errorBody(body []byte) (text, code string) {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil {
		var api struct {
			Message json.RawMessage `json:"message"`
			Type    json.RawMessage `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		switch {
		case jsonString(e.Error) != "":
			return clipString(jsonString(e.Error)), ""
		case json.Unmarshal(e.Error, &api) == nil && jsonText(api.Message) != "":
			typ, c := jsonText(api.Type), jsonText(api.Code)
			var tags []string
			if typ != "" {
				tags = append(tags, "type "+typ)
			}
			if c != "" {
				tags = append(tags, "code "+c)
			}
			text = jsonText(api.Message)
			if len(tags) > 0 {
				text += " (" + strings.Join(tags, ", ") + ")"
			}
			if quotaCodes[typ] { // the type says it where the code is another
				c = typ
			}
			return clipString(text), cmp.Or(c, typ)
		case jsonText(e.Message) != "":
			return clipString(jsonText(e.Message)), ""
		}
	}
	if m := htmlTitle.FindSubmatch(body); m != nil {
		if t := strings.Join(strings.Fields(html.UnescapeString(string(m[1]))), " "); t != "" {
			return clipString("HTML page: " + t), ""
		}
	}
	return clipString(strings.Join(strings.Fields(string(body)), " ")), ""
}

var htmlTitle = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)

// jsonString is raw's value when it is a JSON string, else "".
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// jsonText is raw as text: a string's value, a number's digits, the
// strings of an array joined (a message may be a list); "" for null or
// anything else.
func jsonText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if s := jsonString(raw); s != "" {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.Join(list, "; ")
	}
	return ""
}

func clipString(s string) string { return string(clip([]byte(s), 300)) }

// noRetry marks a fault no retry can cure, although its status is one
// that is retried (an exhausted quota answered with 429).
type noRetry struct{ err error }

func (e *noRetry) Error() string { return e.err.Error() }
func (e *noRetry) Unwrap() error { return e.err }

// quotaCodes are error codes that say the account's quota is spent:
// OpenAI answers 429 with insufficient_quota, which waiting does not cure.
var quotaCodes = map[string]bool{"insufficient_quota": true}

// statusError is the error of a non-2xx answer with the (scrubbed) body b.
func statusError(status int, b []byte) error {
	text, code := errorBody(b)
	err := fmt.Errorf("HTTP %d: %s", status, text)
	if quotaCodes[code] {
		return &noRetry{err}
	}
	return err
}
