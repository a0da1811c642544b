package capture

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mcpstress/stress/models/transport"
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

// Redaction kinds (the keys of capture.redacted and capture.flagged).
const (
	kindToken = "token" // a credential: keyed secrets, Bearer and Basic values, API keys, JWTs, private keys, known secrets
	kindEmail = "email" // an e-mail address
	kindPath  = "path"  // a file path
	kindIP    = "ip"    // an IP address
	kindHost  = "host"  // an internal host name
	kindURL   = "url"   // a URL
)

// A pattern finds one kind of sensitive string; group is the submatch that
// is the string itself (0 for the whole match). A private pattern is
// redacted everywhere, the failure text included; the others (public URLs,
// other paths, public IP addresses) are only flagged in the failure text
// unless -redact-text is given.
type pattern struct {
	kind    string
	re      *regexp.Regexp
	group   int
	check   func(string) bool // extra test, nil for none
	private bool
	trim    bool // drop trailing punctuation from the match
}

// credentialWords end a key, variable or parameter name that holds a
// credential (api_key, AWS_SECRET_ACCESS_KEY, accessToken, x-api-key).
const credentialWords = `password|passwd|passphrase|passcode|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|auth|authorization|credentials?|cookie|session[_-]?id`

var credentialName = regexp.MustCompile(`(?i)(?:` + credentialWords + `)$`)

// isCredentialName reports whether a key, environment variable or query
// parameter name holds a credential: its letters and digits end with a
// credential word (accessToken, AWS_SECRET_ACCESS_KEY; not max_tokens).
func isCredentialName(k string) bool {
	return credentialName.MatchString(strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, k))
}

// patterns in the order they apply: credentials first (a key inside a URL
// goes before the URL), private locators before the generic URL and path
// patterns that would only flag them. They are compiled on first use:
// compiling them when the program starts cost every command, captures or
// not, about 2 ms and 300 KB (GODEBUG=inittrace=1).
var patterns = sync.OnceValue(func() []pattern {
	return []pattern{
		// Credentials.
		{kind: kindToken, re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`), private: true},
		{kind: kindToken, re: regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://([^/\s:@"'<>]+:[^/\s@"'<>]+)@`), group: 1, private: true},
		{kind: kindToken, re: regexp.MustCompile(`(?i)\b(?:bearer|basic)\s+([A-Za-z0-9._~+/=-]{8,})`), group: 1, check: secretLike, private: true},
		{kind: kindToken, re: regexp.MustCompile(`(?i)(?:` + credentialWords + `)["']?\s*=\s*["']?([^\s"'<>,;&)\]}]+)`), group: 1, private: true},
		{kind: kindToken, re: regexp.MustCompile(`(?i)(?:` + credentialWords + `)["']?\s*:\s*["']?([^\s"'<>,;&)\]}]+)`), group: 1, check: valueLike, private: true},
		{kind: kindToken, re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*`), private: true},
		{kind: kindToken, re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})`), private: true},
		{kind: kindToken, re: regexp.MustCompile(`\b(?:sk|pk|rk)[-_][A-Za-z0-9_-]{8,}`), check: hasDigit, private: true},
		{kind: kindToken, re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b`), private: true},
		{kind: kindEmail, re: regexp.MustCompile(`\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b`), private: true},
		// A long base64 run with / or + (an AWS secret key), then any long
		// run of letters, digits, _ and - with both letters and digits.
		{kind: kindToken, re: regexp.MustCompile(`(?:^|[^A-Za-z0-9/+=_-])([A-Za-z0-9/+]{30,}={0,2})`), group: 1, check: base64Like, private: true},
		{kind: kindToken, re: regexp.MustCompile(`\b[A-Za-z0-9_-]{32,}\b`), check: func(s string) bool {
			return hasDigit(s) && strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' }) >= 0
		}, private: true},
		// Home directories and credential files.
		{kind: kindPath, re: regexp.MustCompile(`(?:^|[^\w.~-])((?:/home|/Users|/var/home)/[^/\s"'<>|,;()]+(?:/[^\s"'<>|,;()]*)?|/root(?:/[^\s"'<>|,;()]*|\b))`), group: 1, private: true, trim: true},
		{kind: kindPath, re: regexp.MustCompile(`(?i)\b[A-Z]:[\\/](?:Users|Documents and Settings)[\\/][^\s"'<>|,;]+`), private: true, trim: true},
		{kind: kindPath, re: regexp.MustCompile(`(?:^|[^\w.~/-])(~(?:[A-Za-z_][A-Za-z0-9_.-]*)?/[^\s"'<>|,;()]*)`), group: 1, private: true, trim: true},
		{kind: kindPath, re: regexp.MustCompile(`(?:^|[^\w.-])((?:[\w.~-]+/)*(?:\.ssh|\.aws|\.gnupg|\.kube|\.docker|\.azure|\.config/gcloud)(?:/[\w.@-]+)*|` +
			`(?:[\w.~-]+/)*(?:\.env(?:\.[\w-]+)?|\.netrc|\.npmrc|\.pypirc|\.pgpass|\.git-credentials|id_(?:rsa|dsa|ecdsa|ed25519)(?:\.pub)?|credentials\.json|[\w-]+\.(?:pem|p12|pfx|jks|keystore)))\b`), group: 1, private: true, trim: true},
		// Private addresses and internal host names.
		{kind: kindIP, re: regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b`), check: privateIP, private: true},
		{kind: kindIP, re: regexp.MustCompile(`(?i)(?:^|[^0-9a-z:.])((?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}(?:%[0-9a-z._-]+)?)`), group: 1, check: privateIP, private: true},
		{kind: kindHost, re: regexp.MustCompile(`(?i)\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:internal|local|localdomain|corp|lan|intranet|intra|home\.arpa)\b`), private: true},
		{kind: kindHost, re: regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://(?:[^/\s@"'<>]*@)?([a-z0-9_-]+)(?:[:/?#\s"'<>)]|$)`), group: 1, private: true},
		// Everything else that locates something: flagged in the failure text.
		{kind: kindURL, re: regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\x60]+`), trim: true},
		{kind: kindIP, re: regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b`), check: func(s string) bool { return net.ParseIP(s) != nil }},
		// Note: an absolute path needs two segments, so a JSON pointer such as
		// /query (a parameter target) is not a path.
		{kind: kindPath, re: regexp.MustCompile(`(?:^|[^\w.~/-])((?:\.{1,2})?(?:/[\w.@~+-]+){2,}/?)`), group: 1, trim: true},
		{kind: kindPath, re: regexp.MustCompile(`(?:^|[^\w.~/-])(\.{1,2}/[\w.@~+-]+(?:/[\w.@~+-]+)*/?)`), group: 1, trim: true},
		{kind: kindPath, re: regexp.MustCompile(`\b[A-Za-z]:\\[^\s"'<>|]+`), trim: true},
	}
})

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

// secretLike tells a Bearer or Basic credential from a word
// ("Basic authentication"): it has a digit, one of + / =, or at least two
// capitals and two small letters.
func secretLike(s string) bool {
	if hasDigit(s) || strings.ContainsAny(s, "+/=") {
		return true
	}
	var up, low int
	for _, r := range s {
		switch {
		case unicode.IsUpper(r):
			up++
		case unicode.IsLower(r):
			low++
		}
	}
	return up >= 2 && low >= 2
}

// valueLike tells the value in "password: …" from failure wording
// ("token: expected string"): a "<redacted" marker is no value; otherwise
// 6 or more characters with a digit or a symbol, or 12 or more.
func valueLike(s string) bool {
	if strings.HasPrefix(s, "<redacted") {
		return false
	}
	n := utf8.RuneCountInString(s)
	symbol := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0
	return n >= 12 || n >= 6 && (hasDigit(s) || symbol)
}

// base64Like is a 30+ character run with small letters, capitals and two
// digits or more that is not a path.
func base64Like(s string) bool {
	var up, low bool
	digits := 0
	for _, r := range s {
		up = up || unicode.IsUpper(r)
		low = low || unicode.IsLower(r)
		if unicode.IsDigit(r) {
			digits++
		}
	}
	return up && low && digits >= 2 && !strings.HasPrefix(s, "/") && !strings.Contains(s, "//")
}

var cgnat = net.IPNet{IP: net.IPv4(100, 64, 0, 0), Mask: net.CIDRMask(10, 32)}

// privateIP reports whether s is an address of a private network: RFC 1918
// and fc00::/7, loopback, link-local (IPv6 zones allowed) and 100.64/10.
func privateIP(s string) bool {
	s, _, _ = strings.Cut(s, "%")
	ip := net.ParseIP(s)
	return ip != nil && (ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || cgnat.Contains(ip))
}

// replaceSensitive calls fn for each sensitive string in s, pattern by
// pattern, left to right, and returns s with each replaced by fn's result.
func replaceSensitive(s string, fn func(p *pattern, match string) string) string {
	ps := patterns()
	for i := range ps {
		p := &ps[i]
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
			if p.trim {
				for hi > lo && strings.IndexByte(".,;:!?)]}'\"", s[hi-1]) >= 0 {
					hi--
				}
			}
			match := s[lo:hi]
			if match == "" || p.check != nil && !p.check(match) {
				continue
			}
			b.WriteString(s[last:lo])
			b.WriteString(fn(p, match))
			last = hi
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	return s
}

// scrubber is the one scrubber of capture: every string that can reach a
// corpus (observations, validation reasons, error.data and
// structuredContent keys and values, media types, arguments, parameter
// names, protocol versions) goes through it. In order it removes the
// target's known secrets (with models/transport's Scrubber), redacts the
// sensitive patterns above, and replaces real server and tool names by
// their pseudonyms (see names). It counts what it did.
type scrubber struct {
	subs       []nameRule // longest real name first
	protect    []string   // strings never rewritten: pseudonyms, made-up names
	known      *transport.Scrubber
	redactText bool // also redact the generic kinds inside the failure text
	redacted   map[string]int
	flagged    map[string]int
	dropped    []string
}

// nameRule finds one real name.
type nameRule struct {
	real, pseudo string
	re           *regexp.Regexp // the name as written, or its words joined by nothing, _, - or .; any case
	plain        bool           // a one-word name: only where it stands as an identifier
	key          string         // its letters and digits in lower case, when it is ASCII with only _ - . besides ("" otherwise)
}

// newScrubber returns a scrubber replacing each real name of names by its
// pseudonym; protect lists more strings it must never rewrite (its
// pseudonyms are protected already).
func newScrubber(names map[string]string, redactText bool, protect ...string) *scrubber {
	s := &scrubber{redactText: redactText, redacted: map[string]int{}, flagged: map[string]int{}}
	for real, pseudo := range names {
		if real == "" || real == pseudo {
			continue
		}
		toks := nameTokens(real)
		alts := []string{regexp.QuoteMeta(real)}
		if len(toks) > 1 {
			q := make([]string, len(toks))
			for i, t := range toks {
				q[i] = regexp.QuoteMeta(t)
			}
			alts = append(alts, strings.Join(q, `[-_.]?`))
		}
		r := nameRule{real: real, pseudo: pseudo, plain: len(toks) <= 1,
			re: regexp.MustCompile(`(?i)(?:` + strings.Join(alts, "|") + `)`)}
		if strings.Trim(real, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == "" {
			r.key = strings.Join(toks, "")
		}
		s.subs = append(s.subs, r)
		s.protect = append(s.protect, pseudo)
	}
	s.protect = append(s.protect, protect...)
	sort.Slice(s.subs, func(i, j int) bool {
		if len(s.subs[i].real) != len(s.subs[j].real) {
			return len(s.subs[i].real) > len(s.subs[j].real)
		}
		return s.subs[i].real < s.subs[j].real
	})
	return s
}

// withSecrets makes the scrubber remove every run of MinSecret or more
// bytes of each known secret (transport.Scrubber), everywhere.
func (s *scrubber) withSecrets(secrets ...string) *scrubber {
	s.known = transport.NewScrubber(secrets...)
	return s
}

// wordByte reports whether b belongs to a word: an ASCII letter or digit,
// or part of a non-ASCII rune.
func wordByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= 0x80
}

func lowerOrDigit(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }
func upper(b byte) bool        { return b >= 'A' && b <= 'Z' }

// atBoundary reports whether t[lo:hi] starts and ends at the boundary of an
// identifier part: a non-word character (separators _ - . included), a
// camelCase hump, or the end of the text.
func atBoundary(t string, lo, hi int) bool {
	left := lo == 0 || !wordByte(t[lo-1]) || lowerOrDigit(t[lo-1]) && upper(t[lo])
	right := hi == len(t) || !wordByte(t[hi]) || lowerOrDigit(t[hi-1]) && upper(t[hi])
	return left && right
}

var namingWord = regexp.MustCompile(`(?i)\b(?:tools?|functions?|methods?|commands?|servers?)\s*[:=]?\s*$`)
var namingAfter = regexp.MustCompile(`(?i)^\s+(?:tools?|functions?|methods?|commands?|servers?)\b`)

// asIdentifier reports whether t[lo:hi] stands as an identifier: it is the
// whole text; it is quoted or bracketed alone ('time', (time)); it is joined to another word by _ . / or :
// (invalid_time, time.now, tools/time); it is called (time()); or a word
// such as "tool" or "server" names it ("tool time", "the time tool").
func asIdentifier(t string, lo, hi int) bool {
	if strings.TrimSpace(t[:lo]) == "" && strings.TrimSpace(t[hi:]) == "" {
		return true
	}
	prev, _ := utf8.DecodeLastRuneInString(t[:lo])
	next, _ := utf8.DecodeRuneInString(t[hi:])
	if strings.ContainsRune("'\"`‘’“”([{", prev) && strings.ContainsRune("'\"`‘’“”)]}", next) {
		return true
	}
	joins := func(c byte) bool { return strings.IndexByte("_./:", c) >= 0 }
	if lo >= 2 && joins(t[lo-1]) && wordByte(t[lo-2]) || hi+1 < len(t) && joins(t[hi]) && wordByte(t[hi+1]) {
		return true
	}
	return next == '(' || namingWord.MatchString(t[:lo]) || namingAfter.MatchString(t[hi:])
}

// Note: a redaction marker is never rewritten either.
var markers = regexp.MustCompile(`<redacted:[a-z]+>|` + regexp.QuoteMeta(transport.Redacted))

type span struct {
	lo, hi int
	with   string
}

// nameMatches finds the real names in t that names replaces. The rule:
//
//   - Names match in any case. A name of several words (relative_time,
//     getResourceReference, acme-inventory) also matches with its words
//     joined by _, -, . or nothing (RELATIVE_TIME, relativeTime).
//   - A match must start and end at the boundary of an identifier part:
//     a non-word character (the separators _ - . included), a camelCase
//     hump, or the end of the text. So a name is found inside longer
//     identifiers (invalid_relative_time, invalidRelativeTime) but not
//     inside longer words (time in timestamp).
//   - A one-word name (time, echo, acme) is a common word as often as a
//     name, so it matches only where it stands as an identifier (see
//     asIdentifier): "tool 'time'", "invalid_time", but not "about time".
//   - Pseudonyms, protected strings and redaction markers are never
//     matched, so scrubbing twice changes nothing more.
//
// With plainToo false, one-word names are skipped.
func (s *scrubber) nameMatches(t string, plainToo bool) []span {
	var keep []span
	for _, p := range s.protect {
		for i := 0; p != "" && i <= len(t); {
			j := strings.Index(t[i:], p)
			if j < 0 {
				break
			}
			keep = append(keep, span{lo: i + j, hi: i + j + len(p)})
			i += j + len(p)
		}
	}
	for _, m := range markers.FindAllStringIndex(t, -1) {
		keep = append(keep, span{lo: m[0], hi: m[1]})
	}
	overlaps := func(lo, hi int) bool {
		for _, k := range keep {
			if lo < k.hi && k.lo < hi {
				return true
			}
		}
		return false
	}
	// Note: in ASCII text, every match of a name with a key is its key
	// once the text is lower-cased and stripped of _ - and ., so one
	// substring search rules out most names before any regexp runs.
	squashed := ""
	if isASCII(t) {
		squashed = strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(t))
	}
	var found []span
	for _, r := range s.subs {
		if r.plain && !plainToo || squashed != "" && r.key != "" && !strings.Contains(squashed, r.key) {
			continue
		}
		for i := 0; i < len(t); {
			loc := r.re.FindStringIndex(t[i:])
			if loc == nil {
				break
			}
			lo, hi := i+loc[0], i+loc[1]
			if hi > lo && atBoundary(t, lo, hi) && (!r.plain || asIdentifier(t, lo, hi)) && !overlaps(lo, hi) {
				found = append(found, span{lo, hi, r.pseudo})
				i = hi
				continue
			}
			_, n := utf8.DecodeRuneInString(t[lo:])
			i = lo + max(n, 1)
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].lo != found[j].lo {
			return found[i].lo < found[j].lo
		}
		return found[i].hi > found[j].hi
	})
	out := found[:0]
	for _, f := range found {
		if len(out) == 0 || f.lo >= out[len(out)-1].hi {
			out = append(out, f)
		}
	}
	return out
}

func isASCII(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= utf8.RuneSelf }) < 0
}

// names replaces the real names in t by their pseudonyms (nameMatches).
func (s *scrubber) names(t string) string {
	ms := s.nameMatches(t, true)
	if len(ms) == 0 {
		return t
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		b.WriteString(t[last:m.lo])
		b.WriteString(m.with)
		last = m.hi
	}
	b.WriteString(t[last:])
	return b.String()
}

// scrub removes known secrets, redacts sensitive strings (keeping and
// flagging the generic kinds when keepGeneric) and pseudonymizes names.
func (s *scrubber) scrub(t string, keepGeneric bool) string {
	if x, ok := s.known.String(t); ok {
		s.redacted[kindToken] += strings.Count(x, transport.Redacted) - strings.Count(t, transport.Redacted)
		t = x
	}
	t = replaceSensitive(t, func(p *pattern, m string) string {
		if keepGeneric && !p.private {
			s.flagged[p.kind]++
			return m
		}
		s.redacted[p.kind]++
		return "<redacted:" + p.kind + ">"
	})
	return s.names(t)
}

// text scrubs the failure text: credentials and private locators are
// redacted, names pseudonymized; other URLs, paths and IP addresses are
// kept and counted as flagged, unless redactText is set.
func (s *scrubber) text(t string) string { return s.scrub(t, !s.redactText) }

// other scrubs a string outside the failure text: everything sensitive is
// redacted, then names pseudonymized.
func (s *scrubber) other(t string) string { return s.scrub(t, false) }

// value scrubs a decoded JSON value: every string, object keys included;
// every scalar under a credential-named key (password, api_key,
// credentials: {...}) is redacted whole.
func (s *scrubber) value(v any) any { return s.valueIn(v, false) }

func (s *scrubber) valueIn(v any, secret bool) any {
	switch x := v.(type) {
	case nil, bool:
		return v
	case string:
		if secret && x != "" {
			s.redacted[kindToken]++
			return "<redacted:" + kindToken + ">"
		}
		return s.other(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.valueIn(e, secret)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			k2 := s.other(k)
			for n := 2; ; n++ {
				if _, dup := out[k2]; !dup {
					break
				}
				k2 = fmt.Sprintf("%s#%d", s.other(k), n)
			}
			out[k2] = s.valueIn(x[k], secret || isCredentialName(k))
		}
		return out
	}
	if secret { // a number
		s.redacted[kindToken]++
		return "<redacted:" + kindToken + ">"
	}
	return v
}

// residue names what the scrubber would still find in t, or returns "":
// a known secret, a private pattern, or a real name of several words.
// Generic locators are not residue (the failure text may keep them), nor
// are one-word names (see nameMatches).
func (s *scrubber) residue(t string) string {
	if _, ok := s.known.String(t); ok {
		return "a known secret"
	}
	found := ""
	replaceSensitive(t, func(p *pattern, m string) string {
		if p.private && found == "" {
			found = "a private " + p.kind
		}
		return m
	})
	if found != "" {
		return found
	}
	if len(s.nameMatches(t, false)) > 0 {
		return "a real name"
	}
	return ""
}

// serverKeys are the members of a record whose object keys come from the
// server (all other keys are the corpus format's own).
var serverKeys = []string{"/observation/exception/error/data", "/observation/result/structuredContent", "/capture/arguments"}

// recordResidue walks a marshalled record and reports the first string
// (or server-chosen key) in which the scrubber still finds something: the
// JSON pointer of where (not the string itself) and residue's answer.
func (s *scrubber) recordResidue(record []byte) (where, what string) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(record))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "/", "a record that does not decode: " + err.Error()
	}
	var walk func(v any, ptr string) bool
	walk = func(v any, ptr string) bool {
		switch x := v.(type) {
		case string:
			what = s.residue(x)
		case []any:
			for i, e := range x {
				if walk(e, fmt.Sprintf("%s/%d", ptr, i)) {
					return true
				}
			}
		case map[string]any:
			server := slices.ContainsFunc(serverKeys, func(p string) bool { return strings.HasPrefix(ptr, p) })
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if server {
					if what = s.residue(k); what != "" {
						where, what = ptr, what+" (in a key)"
						return true
					}
				}
				if walk(x[k], ptr+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k)) {
					return true
				}
			}
		}
		if what != "" {
			where = ptr
			return true
		}
		return false
	}
	walk(v, "")
	if what != "" && where == "" {
		where = "/"
	}
	return where, what
}

// secrets lists the credentials a target is configured with: the values
// of credential-named environment variables and URL query parameters,
// the URL's password, and the values of credential-named command flags
// (--api-key=VALUE, --token VALUE).
func (t *Target) secrets() []string {
	var out []string
	for _, e := range t.Env {
		if k, v, ok := strings.Cut(e, "="); ok && isCredentialName(k) {
			out = append(out, v)
		}
	}
	if u, err := url.Parse(t.URL); err == nil && t.URL != "" {
		out = append(out, transport.URLSecrets(u)...)
		for k, vs := range u.Query() {
			if isCredentialName(k) {
				out = append(out, vs...)
			}
		}
	}
	for i, a := range t.Command {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		k, v, hasV := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case !isCredentialName(k):
		case hasV:
			out = append(out, v)
		case i+1 < len(t.Command):
			out = append(out, t.Command[i+1])
		}
	}
	return out
}

func nonEmpty(m map[string]int) map[string]int {
	if len(m) == 0 {
		return nil
	}
	return m
}
