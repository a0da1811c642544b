package results

import (
	"bytes"
	"encoding/json"
	"math"
	"unicode/utf8"

	"github.com/mcpstress/stress/study"
)

// decodeHead decodes call line b into h. Note: it first tries fastHead, a
// scanner for the call lines stress writes under stored replay (the bulk
// of any large bundle), which is several times faster than
// encoding/json; any line it does not fully understand (another field,
// a null, an escape it does not take, damage) is decoded by
// encoding/json instead, which is then the judge of errors. Without it,
// stress analyze of 100,020 decisions took 2.6 to 2.9 times as long
// (0.62 to 0.69 s against 0.23 to 0.25; BenchmarkAnalyze: 4.2 times the
// allocations), and 1.6 times as long with github.com/segmentio/encoding
// in encoding/json's place (0.39 to 0.41 s), which would take analyze
// past its 25% of the run (README, Speed; 2026-12-03).
func decodeHead(b []byte, h *Head, in *strTable) (carried, error) {
	if c, ok := fastHead(b, h, in); ok {
		return c, nil
	}
	return jsonHead(b, h)
}

// jsonHead decodes b into h with encoding/json.
func jsonHead(b []byte, h *Head) (carried, error) {
	*h = Head{}
	// The outer fields shadow the Head's, to see whether they are there.
	ln := struct {
		*Head
		Server *string `json:"server"`
		Seed   *int64  `json:"seed"`
	}{Head: h}
	if err := json.Unmarshal(b, &ln); err != nil {
		return carried{}, err
	}
	if ln.Server != nil {
		h.Server = *ln.Server
	}
	if ln.Seed != nil {
		h.Seed = *ln.Seed
	}
	return carried{scenario: ln.Server != nil, seed: ln.Seed != nil}, nil
}

// headScan is the state of fastHead on one line.
type headScan struct {
	b       []byte
	i       int
	ok      bool
	in      *strTable // interns the strings decoded (nil: allocate each)
	scratch []byte    // a string's unescaped bytes
}

// strTable interns the strings of call lines: a bundle's keys, answers
// and refs repeat from line to line, and a string looked up in the table
// costs no allocation. It holds at most maxStrings strings of at most
// maxInterned bytes each (a few megabytes at worst: the answers of a real
// model are mostly distinct, and a longer string is not kept). Note:
// without it BenchmarkAnalyze made 2.6 times the allocations and took
// about 6% more CPU (2026-12-01).
type strTable struct {
	m   map[string]string
	esc map[string]string // by the string's bytes in the line, escapes and all
}

// escaped returns the string whose bytes in a line, escapes and all, are
// raw, when the table has it.
func (t *strTable) escaped(raw []byte) (string, bool) {
	if t == nil {
		return "", false
	}
	v, ok := t.esc[string(raw)]
	return v, ok
}

// putEscaped returns the string v, decoded from raw, remembering it.
func (t *strTable) putEscaped(raw, v []byte) string {
	if t == nil || len(raw) > maxInterned {
		return string(v)
	}
	if t.esc == nil || len(t.esc) >= maxStrings {
		t.esc = make(map[string]string, 1024)
	}
	out := t.get(v)
	t.esc[string(raw)] = out
	return out
}

const (
	maxStrings  = 1 << 14
	maxInterned = 256
)

// get returns b as a string, from the table when it can.
func (t *strTable) get(b []byte) string {
	if t == nil || len(b) > maxInterned {
		return string(b)
	}
	if v, ok := t.m[string(b)]; ok {
		return v
	}
	if t.m == nil || len(t.m) >= maxStrings {
		t.m = make(map[string]string, 1024)
	}
	v := string(b)
	t.m[v] = v
	return v
}

// fastHead decodes b into h, says which of the fields a format-3 line may
// leave out it carried, and reports whether it could; on false, h holds
// garbage.
func fastHead(b []byte, h *Head, in *strTable) (c carried, ok bool) {
	*h = Head{}
	s := headScan{b: b, ok: true, in: in}
	s.ws()
	s.object(func(name []byte) {
		switch string(name) {
		case "key":
			s.key(h)
		case "server":
			h.Server, c.scenario = s.str(), true
		case "preferred":
			h.Preferred = study.Policy(s.str())
		case "non_harm":
			h.NonHarm = []study.Policy{}
			s.strings(func(v string) { h.NonHarm = append(h.NonHarm, study.Policy(v)) })
		case "preferred_policies":
			h.PreferredSet = []study.Policy{}
			s.strings(func(v string) { h.PreferredSet = append(h.PreferredSet, study.Policy(v)) })
		case "turn":
			h.Turn = int(s.int())
		case "seed":
			h.Seed, c.seed = s.int(), true
		case "response":
			h.Response = s.str()
		case "response_sha256":
			h.ResponseSHA256 = s.str()
		case "response_size":
			h.ResponseSize = int(s.int())
		case "error":
			h.Error = s.str()
		case "request":
			s.request(h)
		case "latency_ms", "prompt_tokens", "output_tokens", "body", "body_sha256", "meta", "endpoint", "redacted", "original_body_sha256", "thinking", "tool_calls",
			"original_response_sha256", "body_size":
			s.skip(0)
		default:
			s.ok = false
		}
	})
	s.ws()
	return c, s.ok && s.i == len(b)
}

func (s *headScan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *headScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *headScan) byte(c byte) bool {
	if s.ok && s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	s.ok = false
	return false
}

// plain holds the bytes a string holds as they are: printable ASCII but
// the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// rawString scans a string and returns its bytes between the quotes and
// whether it holds escapes; it checks that the escapes and bytes are valid.
func (s *headScan) rawString() (raw []byte, esc bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	ascii := true
	for s.i < len(s.b) {
		for s.i < len(s.b) && plain[s.b[s.i]] {
			s.i++
		}
		if s.i == len(s.b) {
			break
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(raw) {
				s.ok = false // encoding/json would replace the bad bytes
			}
			return raw, esc
		case c == '\\':
			esc = true
			if s.i+1 >= len(s.b) {
				s.ok = false
				return nil, esc
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					s.ok = false
					return nil, esc
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						s.ok = false
						return nil, esc
					}
				}
				s.i += 6
			default:
				s.ok = false
				return nil, esc
			}
		case c < 0x20:
			s.ok = false
			return nil, esc
		default:
			if c >= 0x80 {
				ascii = false
			}
			s.i++
		}
	}
	s.ok = false
	return nil, esc
}

// str scans a string value.
func (s *headScan) str() string {
	start := s.i
	raw, esc := s.rawString()
	if !s.ok {
		return ""
	}
	if !esc {
		return s.in.get(raw)
	}
	if v, ok := s.in.escaped(raw); ok {
		return v
	}
	if v, ok := unescape(s.scratch[:0], raw); ok {
		s.scratch = v
		return s.in.putEscaped(raw, v)
	}
	var v string
	if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
		s.ok = false
	}
	return v
}

// int scans an integer value.
func (s *headScan) int() int64 {
	neg := s.peek() == '-'
	if neg {
		s.i++
	}
	digits := s.i
	var n uint64
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		d := uint64(s.b[s.i] - '0')
		if n > (math.MaxInt64-d)/10 {
			n = math.MaxInt64 + 1 // out of range (even for -2^63: rare, let encoding/json judge)
		} else {
			n = n*10 + d
		}
		s.i++
	}
	switch {
	case s.i == digits, s.i-digits > 1 && s.b[digits] == '0', n > math.MaxInt64:
		s.ok = false
	case s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E' || s.b[s.i] == '-'):
		s.ok = false // a number that is not an integer
	}
	if neg {
		return -int64(n)
	}
	return int64(n)
}

func (s *headScan) key(h *Head) {
	s.object(func(name []byte) {
		switch string(name) {
		case "model":
			h.Key.Model = s.str()
		case "prompt":
			h.Key.Prompt = s.str()
		case "condition":
			h.Key.Condition = study.Condition(s.str())
		case "scenario":
			h.Key.Scenario = s.str()
		case "replicate":
			h.Key.Replicate = int(s.int())
		default:
			s.ok = false
		}
	})
}

func (s *headScan) request(h *Head) {
	s.object(func(name []byte) {
		switch string(name) {
		case "messages_ref":
			s.strings(func(v string) { h.Request.Refs = append(h.Request.Refs, v) })
			if h.Request.Refs == nil {
				h.Request.Refs = []string{}
			}
		case "seed", "temperature", "options", "tools":
			s.skip(0)
		default:
			s.ok = false
		}
	})
}

// strings scans an array of strings.
func (s *headScan) strings(fn func(string)) { s.array(func() { fn(s.str()) }) }

// array scans an array, calling fn at each element.
func (s *headScan) array(fn func()) {
	if !s.byte('[') {
		return
	}
	s.ws()
	if s.peek() == ']' {
		s.i++
		return
	}
	for s.ok {
		s.ws()
		fn()
		s.ws()
		if s.peek() == ']' {
			s.i++
			return
		}
		s.byte(',')
	}
}

// object scans an object, calling fn at each member's value.
func (s *headScan) object(fn func(name []byte)) {
	if !s.byte('{') {
		return
	}
	first := true
	for s.ok {
		s.ws()
		if s.peek() == '}' {
			s.i++
			return
		}
		if !first && !s.byte(',') {
			return
		}
		first = false
		s.ws()
		name, esc := s.rawString()
		if esc {
			s.ok = false
		}
		s.ws()
		s.byte(':')
		s.ws()
		if s.ok {
			fn(name)
		}
	}
}

// skip scans any value, checking its syntax.
func (s *headScan) skip(depth int) {
	if depth > 100 {
		s.ok = false
		return
	}
	switch c := s.peek(); {
	case c == '"':
		s.rawString()
	case c == '{':
		s.object(func([]byte) { s.skip(depth + 1) })
	case c == '[':
		s.array(func() { s.skip(depth + 1) })
	case c == '-' || '0' <= c && c <= '9':
		start := s.i
		for s.i < len(s.b) && bytes.IndexByte([]byte("+-.eE0123456789"), s.b[s.i]) >= 0 {
			s.i++
		}
		if !json.Valid(s.b[start:s.i]) {
			s.ok = false
		}
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
	case bytes.HasPrefix(s.b[s.i:], []byte("null")):
		s.i += 4
	default:
		s.ok = false
	}
}

// unescape appends to out the bytes of a JSON string's raw bytes with
// their escapes decoded but \u ones (false: let encoding/json do it).
func unescape(out, raw []byte) ([]byte, bool) {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case '"', '\\', '/':
			out = append(out, raw[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		default:
			return nil, false
		}
	}
	return out, true
}
