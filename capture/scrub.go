package capture

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"sort"
	"strings"
)

// pseudonym returns a stable, salted pseudonym: prefix and the first n hex
// digits of HMAC-SHA256(salt, kind NUL parts…).
func pseudonym(salt []byte, prefix string, n int, kind string, parts ...string) string {
	m := hmac.New(sha256.New, salt)
	m.Write([]byte(kind))
	for _, p := range parts {
		m.Write([]byte{0})
		m.Write([]byte(p))
	}
	return prefix + hex.EncodeToString(m.Sum(nil))[:n]
}

// Redaction kinds.
const (
	KindURL   = "url"
	KindEmail = "email"
	KindToken = "token"
	KindPath  = "path"
)

// A pattern finds one kind of sensitive string; group is the submatch that
// is the string itself (0 for the whole match).
type pattern struct {
	kind  string
	re    *regexp.Regexp
	group int
	check func(string) bool // extra test, nil for none
}

// patterns in the order they apply: a URL before the path inside it.
var patterns = []pattern{
	{KindURL, regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\x60]+`), 0, nil},
	{KindEmail, regexp.MustCompile(`\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b`), 0, nil},
	{KindToken, regexp.MustCompile(`\b[Bb]earer\s+[A-Za-z0-9._~+/=-]{8,}`), 0, nil},
	{KindToken, regexp.MustCompile(`\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`), 0, nil},
	{KindToken, regexp.MustCompile(`\b(?:sk|pk|rk|ghp|gho|ghu|ghs|ghr|github_pat|xox[abpr]|AKIA|AIza)[-_]?[A-Za-z0-9_-]{8,}`), 0, nil},
	{KindToken, regexp.MustCompile(`\b[A-Za-z0-9_-]{32,}\b`), 0, func(s string) bool {
		return strings.ContainsAny(s, "0123456789") && strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' }) >= 0
	}},
	// Note: an absolute path needs two segments, so a JSON pointer such as
	// /query (a parameter target) is not a path.
	{KindPath, regexp.MustCompile(`(?:^|[^\w.~/-])((?:~|\.{1,2})?(?:/[\w.@~+-]+){2,}/?)`), 1, nil},
	{KindPath, regexp.MustCompile(`(?:^|[^\w.~/-])((?:~|\.{1,2})/[\w.@~+-]+(?:/[\w.@~+-]+)*/?)`), 1, nil},
	{KindPath, regexp.MustCompile(`\b[A-Za-z]:\\[^\s"'<>|]+`), 0, nil},
}

// findSensitive calls fn for each sensitive string in s, left to right per
// pattern, and returns s with each replaced by fn's result.
func replaceSensitive(s string, fn func(kind, match string) string) string {
	for _, p := range patterns {
		idx := p.re.FindAllStringSubmatchIndex(s, -1)
		if len(idx) == 0 {
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range idx {
			lo, hi := m[2*p.group], m[2*p.group+1]
			if lo < 0 || lo < last {
				continue
			}
			match := s[lo:hi]
			if p.check != nil && !p.check(match) {
				continue
			}
			b.WriteString(s[last:lo])
			b.WriteString(fn(p.kind, match))
			last = hi
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	return s
}

// scrubber pseudonymizes names and redacts sensitive strings, counting what
// it did.
type scrubber struct {
	subs       []nameSub // longest real name first
	redactText bool      // also redact inside the failure text
	redacted   map[string]int
	flagged    map[string]int
	dropped    []string
}

type nameSub struct{ real, pseudo string }

func newScrubber(names map[string]string, redactText bool) *scrubber {
	s := &scrubber{redactText: redactText, redacted: map[string]int{}, flagged: map[string]int{}}
	for real, pseudo := range names {
		if real != "" && real != pseudo {
			s.subs = append(s.subs, nameSub{real, pseudo})
		}
	}
	sort.Slice(s.subs, func(i, j int) bool {
		if len(s.subs[i].real) != len(s.subs[j].real) {
			return len(s.subs[i].real) > len(s.subs[j].real)
		}
		return s.subs[i].real < s.subs[j].real
	})
	return s
}

func nameChar(b byte) bool {
	return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z'
}

// names replaces each real name that stands alone (not inside a longer
// identifier) by its pseudonym.
func (s *scrubber) names(t string) string {
	for _, sub := range s.subs {
		var b strings.Builder
		i := 0
		for {
			j := strings.Index(t[i:], sub.real)
			if j < 0 {
				break
			}
			j += i
			end := j + len(sub.real)
			alone := (j == 0 || !nameChar(t[j-1])) && (end == len(t) || !nameChar(t[end]))
			b.WriteString(t[i:j])
			if alone {
				b.WriteString(sub.pseudo)
			} else {
				b.WriteString(sub.real)
			}
			i = end
		}
		b.WriteString(t[i:])
		t = b.String()
	}
	return t
}

// text scrubs the failure text: names are pseudonymized; sensitive strings
// are counted as flagged and kept, unless redactText is set.
func (s *scrubber) text(t string) string {
	if s.redactText {
		return s.other(t)
	}
	replaceSensitive(t, func(kind, m string) string { s.flagged[kind]++; return m })
	return s.names(t)
}

// other scrubs a string outside the failure text: sensitive strings are
// redacted, then names pseudonymized.
func (s *scrubber) other(t string) string {
	t = replaceSensitive(t, func(kind, m string) string { s.redacted[kind]++; return "<redacted:" + kind + ">" })
	return s.names(t)
}

// value scrubs every string (not object keys) of a decoded JSON value.
func (s *scrubber) value(v any) any {
	switch x := v.(type) {
	case string:
		return s.other(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.value(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = s.value(e)
		}
		return out
	}
	return v
}

func nonEmpty(m map[string]int) map[string]int {
	if len(m) == 0 {
		return nil
	}
	return m
}
