package transport

import (
	"bytes"
	"encoding/base64"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// MinSecret is the length in bytes of the shortest credential a Scrubber
// treats as a secret, and of the shortest run of one it removes.
//
// Note: a key shorter than this (a placeholder such as vLLM's "EMPTY") is
// not scrubbed: replacing every "x" of a body would only destroy it. It is
// 8 so that a run of it fits in one uint64.
const MinSecret = 8

// Redacted is what replaces a secret in scrubbed text.
const Redacted = "[redacted]"

// Scrubber removes credentials (API keys, a URL's password) from text a
// server sent, before anything stores, logs or clips it. It removes every
// run of MinSecret or more bytes of a secret: the whole secret, and any
// part of it a server echoed (its own clip, a masked key). It finds them
// as they are and also behind escapes: JSON's (\/, \u002b, \n, …, at any
// nesting depth, as in a JSON answer inside a JSON string) and URLs' %XX.
// Each maximal run found is replaced by Redacted; the escapes it covers go
// with it whole, so scrubbed JSON stays JSON. A nil Scrubber, or one with
// no secret of MinSecret bytes, changes nothing. It is safe for
// concurrent use.
type Scrubber struct {
	grams map[uint64]struct{} // every MinSecret-byte run of every secret
	bloom [1 << 10]uint64     // 65,536-bit prefilter of grams
}

// NewScrubber returns a Scrubber of secrets; those shorter than MinSecret
// bytes are ignored. Each secret is also looked for in its base64 forms
// (Base64Forms): a server that echoes a key as base64, or base64url,
// at any alignment, gives it away as surely as in clear.
func NewScrubber(secrets ...string) *Scrubber {
	s := &Scrubber{}
	var all []string
	for _, x := range secrets {
		if len(x) < MinSecret {
			continue
		}
		all = append(all, x)
		all = append(all, Base64Forms(x)...)
	}
	for _, x := range all {
		if len(x) < MinSecret {
			continue
		}
		if s.grams == nil {
			s.grams = map[uint64]struct{}{}
		}
		var g uint64
		for i := 0; i < len(x); i++ {
			g = g<<8 | uint64(x[i])
			if i >= MinSecret-1 {
				s.grams[g] = struct{}{}
				h := bloomHash(g)
				s.bloom[h>>6] |= 1 << (h & 63)
			}
		}
	}
	return s
}

// URLSecrets returns the credentials a URL's user info makes an HTTP
// client send: the password and the Basic authorization value
// (base64 of user:password). A URL without a password has none.
func URLSecrets(u *url.URL) []string {
	if u == nil || u.User == nil {
		return nil
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		return nil
	}
	return []string{pw, base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pw))}
}

// Base64Forms returns the text that any base64 or base64url encoding of
// data holding secret holds, whatever the data around it: for each of
// the three alignments of the secret in the encoded bytes, the characters
// that depend on the secret's bytes alone (the first ones mix in the
// bytes before it, the last one those after), in both alphabets.
func Base64Forms(secret string) []string {
	var out []string
	for k := 0; k < 3; k++ {
		data := append(make([]byte, k), secret...)
		enc := base64.RawStdEncoding.EncodeToString(data)
		if len(data)%3 != 0 {
			enc = enc[:len(enc)-1] // its last character holds bits of the next byte
		}
		enc = enc[(8*k+5)/6:] // the characters that hold bits of the k bytes before
		if len(enc) == 0 {
			continue
		}
		out = append(out, enc)
		if url := strings.NewReplacer("+", "-", "/", "_").Replace(enc); url != enc {
			out = append(out, url)
		}
	}
	return out
}

func bloomHash(g uint64) uint64 { return (g * 0x9E3779B97F4A7C15) >> 48 }

// Active reports whether s has any secret to remove.
func (s *Scrubber) Active() bool { return s != nil && len(s.grams) > 0 }

func (s *Scrubber) has(g uint64) bool {
	h := bloomHash(g)
	if s.bloom[h>>6]&(1<<(h&63)) == 0 {
		return false
	}
	_, ok := s.grams[g]
	return ok
}

// Bytes returns b with every secret removed, and whether anything was. An
// unchanged b is returned as is; a changed one is a new slice.
func (s *Scrubber) Bytes(b []byte) ([]byte, bool) {
	if !s.Active() || len(b) < MinSecret {
		return b, false
	}
	sp := s.spans(b, false)
	if bytes.ContainsAny(b, `\%`) {
		sp = append(sp, s.spans(b, true)...)
		slices.SortFunc(sp, func(a, b span) int { return a.lo - b.lo })
		sp = merge(sp)
	}
	if len(sp) == 0 {
		return b, false
	}
	out := make([]byte, 0, len(b))
	prev := 0
	for _, x := range sp {
		out = append(append(out, b[prev:x.lo]...), Redacted...)
		prev = x.hi
	}
	return append(out, b[prev:]...), true
}

// String returns x with every secret removed, and whether anything was.
func (s *Scrubber) String(x string) (string, bool) {
	if !s.Active() || len(x) < MinSecret {
		return x, false
	}
	b, changed := s.Bytes([]byte(x))
	if !changed {
		return x, false
	}
	return string(b), true
}

// Error returns err with every secret removed from its text, and err
// itself when there was none.
//
// Note: the returned error still unwraps to err, so that errors.Is and
// errors.As keep working (a cancelled context stays one); print it, not
// what it wraps.
func (s *Scrubber) Error(err error) error {
	if err == nil || !s.Active() {
		return err
	}
	msg, changed := s.String(err.Error())
	if !changed {
		return err
	}
	return &scrubbedError{msg: msg, err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// Value returns v with every secret removed from its strings, descending
// into map[string]any and []any (a decoded JSON value, a reply's Meta), and
// whether anything was. Maps and slices that change are copied; other
// types are returned as they are.
func (s *Scrubber) Value(v any) (any, bool) {
	if !s.Active() {
		return v, false
	}
	switch x := v.(type) {
	case string:
		return s.String(x)
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			if e2, ok := s.Value(e); ok {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = e2
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range x {
			if e2, ok := s.Value(e); ok {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = e2
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

// span is a range [lo, hi) of the scrubbed input.
type span struct{ lo, hi int }

// spans returns the maximal ranges of b whose text holds runs of a
// secret: b's bytes as they are, or, with decode, b read through its
// escapes (see unescape). The ranges come in order and do not overlap.
func (s *Scrubber) spans(b []byte, decode bool) []span {
	w := window{s: s}
	if !decode {
		for i, c := range b {
			w.add(c, i, i+1)
		}
		return w.out
	}
	var dec [utf8.UTFMax]byte // one escape's text
	for i := 0; i < len(b); {
		c := b[i]
		if c != '\\' && c != '%' {
			w.add(c, i, i+1)
			i++
			continue
		}
		lo := i
		var text []byte
		text, i = unescape(b, i, dec[:0])
		for _, c := range text {
			w.add(c, lo, i)
		}
	}
	return w.out
}

// window slides over the text of an input, MinSecret bytes wide, and
// collects the ranges of the input whose text holds runs of a secret.
type window struct {
	s      *Scrubber
	g      uint64         // the last MinSecret text bytes
	starts [MinSecret]int // where in the input each of them starts
	n      uint           // text bytes read
	out    []span
}

// add reads text byte c, which comes from input bytes [lo, hi).
func (w *window) add(c byte, lo, hi int) {
	w.g = w.g<<8 | uint64(c)
	w.starts[w.n%MinSecret] = lo
	w.n++
	if w.n < MinSecret || !w.s.has(w.g) {
		return
	}
	first := w.starts[w.n%MinSecret] // where the run's first byte starts
	if k := len(w.out) - 1; k >= 0 && first <= w.out[k].hi {
		w.out[k].hi = max(w.out[k].hi, hi)
	} else {
		w.out = append(w.out, span{first, hi})
	}
}

// merge joins overlapping or touching spans sorted by lo.
func merge(sp []span) []span {
	out := sp[:0]
	for _, x := range sp {
		if k := len(out) - 1; k >= 0 && x.lo <= out[k].hi {
			out[k].hi = max(out[k].hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	return out
}

// unescape reads the unit of b at i and appends its text to dst: a JSON
// escape behind any run of backslashes (\uXXXX its rune, \b \f \n \r \t
// their control byte, \x for any other x that byte), a URL %XX escape its
// byte, anything else the byte itself. It returns the text and where the
// next unit starts.
func unescape(b []byte, i int, dst []byte) ([]byte, int) {
	switch b[i] {
	case '\\':
		j := i
		for j < len(b) && b[j] == '\\' {
			j++
		}
		if j == len(b) {
			break
		}
		c := b[j]
		if c == 'u' && j+5 <= len(b) {
			if r, ok := hexVal(b[j+1 : j+5]); ok {
				return utf8.AppendRune(dst, rune(r)), j + 5
			}
		}
		if k := strings.IndexByte("bfnrt", c); k >= 0 {
			c = "\b\f\n\r\t"[k]
		}
		return append(dst, c), j + 1
	case '%':
		if i+3 <= len(b) {
			if v, ok := hexVal(b[i+1 : i+3]); ok {
				return append(dst, byte(v)), i + 3
			}
		}
	}
	return append(dst, b[i]), i + 1
}

// hexVal parses hex digits of either case.
func hexVal(h []byte) (int, bool) {
	v := 0
	for _, c := range h {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | int(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
