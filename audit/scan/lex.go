package scan

import (
	"bytes"
	"strings"
)

// kind is a token's kind.
type kind uint8

const (
	kIdent  kind = iota + 1 // identifier or keyword
	kString                 // string, character, template or regexp literal
	kNumber
	kPunct // operator or punctuation
)

// token is one token of a source file. Comments are not tokens, and the
// contents of literals are not code: that is what keeps "isError: true"
// in a comment or a string from matching.
//
// Note: 16 bytes, as a minified bundle holds a token every two bytes and
// memory the scan touches costs it time; a token's line start is found
// when needed (lineStart), not stored.
type token struct {
	// s and e bound the token's bytes.
	s, e int32
	// line is the token's line (1-based).
	line int32
	kind kind
	// nl says the token is the first on its line.
	nl bool
	// pre and suf are what a string's delimiters take at its start and
	// end, so its contents are src[s+pre:e-suf]; pre is noContents for a
	// literal whose contents are never a key (a character, template or
	// regexp literal, or delimiters longer than 254 bytes).
	pre, suf uint8
}

// noContents marks a token whose contents are empty (token.pre).
const noContents = 0xff

// contents returns the bounds of a string token's contents.
func (t token) contents() (int32, int32) {
	if t.pre == noContents {
		return t.s, t.s
	}
	return t.s + int32(t.pre), t.e - int32(t.suf)
}

// lineStart returns the offset of the start of the line holding offset
// pos of src.
func lineStart(src []byte, pos int32) int32 {
	return int32(bytes.LastIndexByte(src[:pos], '\n') + 1)
}

// lexer splits a source file into tokens. It never fails: what it cannot
// make sense of becomes punctuation, and an unterminated literal ends at
// the end of its line (or, for the multi-line ones, of the file).
type lexer struct {
	src  []byte
	syn  syntax
	pos  int
	line int32
	nl   bool
	toks []token
	// tmpl holds, for each open ${ of a template literal, the depth of
	// the braces opened inside it.
	tmpl []int
}

// lex returns the tokens of src, appended to toks[:0].
func lex(src []byte, syn syntax, toks []token) []token {
	if n := len(src)/2 + 256; cap(toks) < n {
		// Note: room for a token every two bytes at once; pages of it the
		// lexer does not fill are never touched.
		toks = make([]token, 0, n)
	}
	l := &lexer{src: src, syn: syn, line: 1, nl: true, toks: toks[:0]}
	l.run()
	return l.toks
}

// emit adds a token of kind k over src[s:e], whose contents (a string's)
// are src[cs:ce].
func (l *lexer) emit(k kind, s, e, cs, ce int) {
	t := token{kind: k, nl: l.nl, s: int32(s), e: int32(e), line: l.line, pre: noContents}
	if ce > cs && cs-s < noContents && e-ce < noContents {
		t.pre, t.suf = uint8(cs-s), uint8(e-ce)
	}
	l.toks = append(l.toks, t)
	l.nl = false
}

// str adds a string token over src[s:e], whose contents are src[cs:ce],
// and moves to e.
func (l *lexer) str(s, e, cs, ce int) {
	l.advance(e)
	l.emit(kString, s, e, cs, ce)
}

// advance moves to end, counting the lines it passes.
func (l *lexer) advance(end int) {
	for {
		i := bytes.IndexByte(l.src[l.pos:end], '\n')
		if i < 0 {
			break
		}
		l.pos += i + 1
		l.line++
	}
	l.pos = end
}

func (l *lexer) at(i int) byte {
	if i < len(l.src) {
		return l.src[i]
	}
	return 0
}

func identStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' || c >= 0x80
}

func identPart(c byte) bool {
	return identStart(c) || c >= '0' && c <= '9'
}

func (l *lexer) run() {
	src := l.src
	for l.pos < len(src) {
		c := src[l.pos]
		switch {
		case c == '\n':
			l.pos++
			l.line++
			l.nl = true
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case c == '#' && l.syn.hashComments:
			l.lineComment()
		case c == '/' && l.syn.slashComments && l.at(l.pos+1) == '/':
			l.lineComment()
		case c == '/' && l.syn.slashComments && l.at(l.pos+1) == '*':
			l.blockComment()
		case c == '"':
			l.quote(l.pos, l.pos)
		case c == '\'':
			if l.syn.charQuotes {
				l.char(l.pos)
			} else {
				l.quote(l.pos, l.pos)
			}
		case c == '`' && l.syn.backtickRaw:
			l.raw(l.pos, l.pos+1, "`")
		case c == '`' && l.syn.templates:
			l.pos++
			l.template(l.pos - 1)
		case c == '/' && l.syn.regexps && l.regexpAllowed():
			l.regexp()
		case (c == '@' || c == '$') && l.syn.csPrefixes && l.csString():
		case identStart(c):
			if !l.prefixed() {
				s := l.pos
				for l.pos < len(src) && identPart(src[l.pos]) {
					l.pos++
				}
				l.emit(kIdent, s, l.pos, s, s)
			}
		case c >= '0' && c <= '9':
			s := l.pos
			for l.pos < len(src) && (identPart(src[l.pos]) || src[l.pos] == '.' && l.at(l.pos+1) != '.') {
				l.pos++
			}
			l.emit(kNumber, s, l.pos, s, s)
		default:
			l.punct()
		}
	}
}

func (l *lexer) lineComment() {
	if i := bytes.IndexByte(l.src[l.pos:], '\n'); i >= 0 {
		l.pos += i
	} else {
		l.pos = len(l.src)
	}
}

func (l *lexer) blockComment() {
	if !l.syn.nestedBlocks {
		end := len(l.src)
		if i := bytes.Index(l.src[l.pos+2:], []byte("*/")); i >= 0 {
			end = l.pos + 2 + i + 2
		}
		l.advance(end)
		return
	}
	depth, i := 0, l.pos
	for i < len(l.src) {
		switch {
		case l.src[i] == '/' && l.at(i+1) == '*':
			depth++
			i += 2
		case l.src[i] == '*' && l.at(i+1) == '/':
			depth--
			i += 2
			if depth == 0 {
				l.advance(i)
				return
			}
		default:
			i++
		}
	}
	l.advance(len(l.src))
}

// quote reads the string whose opening quote is at q (s is where its
// prefix starts): a triple-quoted one where the language has them, else
// one that ends at its quote or, unterminated, at the end of the line.
func (l *lexer) quote(s, q int) {
	c := l.src[q]
	if l.syn.tripleQuotes && l.at(q+1) == c && l.at(q+2) == c && (c == '"' || l.syn.pyPrefixes) {
		n := 3
		for l.at(q+n) == c && !l.syn.pyPrefixes {
			n++ // C# raw strings open with three or more quotes
		}
		l.triple(s, q, n)
		return
	}
	i := q + 1
	for i < len(l.src) && l.src[i] != c && l.src[i] != '\n' {
		if l.src[i] == '\\' {
			i++ // an escaped character
		}
		i++
	}
	i = min(i, len(l.src))
	if i < len(l.src) && l.src[i] == c {
		l.str(s, i+1, q+1, i)
	} else {
		l.str(s, i, q+1, i)
	}
}

// triple reads a string opened by n quotes at q, which ends at n quotes;
// a backslash escapes in Python and Java, not in Kotlin's and C#'s raw
// strings (which we do not tell from Java's by syntax: a backslash before
// the closing quotes is rare enough).
func (l *lexer) triple(s, q, n int) {
	c := l.src[q]
	i := q + n
	for i < len(l.src) {
		if l.src[i] == '\\' && l.syn.pyPrefixes {
			i += 2
			continue
		}
		if l.src[i] == c {
			j := i
			for j < len(l.src) && l.src[j] == c {
				j++
			}
			if j-i >= n {
				l.str(s, j, q+n, j-n)
				return
			}
			i = j
			continue
		}
		i++
	}
	l.str(s, len(l.src), q+n, len(l.src))
}

// raw reads a raw string from s whose body starts at b and ends at
// close.
func (l *lexer) raw(s, b int, close string) {
	end := len(l.src)
	body := end
	if i := bytes.Index(l.src[b:], []byte(close)); i >= 0 {
		body = b + i
		end = body + len(close)
	}
	l.str(s, end, b, body)
}

// char reads a character literal at q, or a lone quote (a Rust lifetime
// or label) as punctuation.
func (l *lexer) char(q int) {
	i := q + 1
	switch {
	case l.at(i) == '\\':
		for j := i + 1; j < len(l.src) && j < q+16 && l.src[j] != '\n'; j++ {
			if l.src[j] == '\'' && l.src[j-1] != '\\' || l.src[j] == '\'' && j == i+2 {
				l.pos = j + 1
				l.emit(kString, q, j+1, q+1, q+1)
				return
			}
		}
	case i < len(l.src) && l.src[i] != '\n' && l.src[i] != '\'':
		j := i + 1
		for j < len(l.src) && j < i+4 && l.src[j]&0xc0 == 0x80 {
			j++ // the rest of a UTF-8 sequence
		}
		if l.at(j) == '\'' {
			l.pos = j + 1
			l.emit(kString, q, j+1, q+1, q+1)
			return
		}
	}
	l.pos = q + 1
	l.emit(kPunct, q, q+1, q, q)
}

// prefixed reads a string with a letter prefix (Python r"", f"", rb"";
// Rust r"x", r#"x"#, b"x", br"x", b'x') if one starts here.
func (l *lexer) prefixed() bool {
	s := l.pos
	switch {
	case l.syn.pyPrefixes:
		i := s
		for i < len(l.src) && i < s+2 && isPyPrefix(l.src[i]) {
			i++
		}
		if i > s && (l.at(i) == '"' || l.at(i) == '\'') {
			l.quote(s, i)
			return true
		}
	case l.syn.rustRaw:
		i := s
		if l.at(i) == 'b' {
			i++
			if l.at(i) == '\'' {
				l.char(i)
				l.toks[len(l.toks)-1].s = int32(s)
				return true
			}
			if l.at(i) == '"' {
				l.quote(s, i)
				return true
			}
		}
		if l.at(i) == 'r' && (l.at(i+1) == '"' || l.at(i+1) == '#') {
			j := i + 1
			for l.at(j) == '#' {
				j++
			}
			if l.at(j) == '"' {
				l.raw(s, j+1, "\""+string(bytes.Repeat([]byte("#"), j-i-1)))
				return true
			}
		}
	}
	return false
}

func isPyPrefix(c byte) bool { return strings.IndexByte("rRbBuUfF", c) >= 0 }

// csString reads a C# verbatim (@"") or interpolated ($"", $@"", @$"")
// string if one starts here.
func (l *lexer) csString() bool {
	s, i := l.pos, l.pos
	verbatim := false
	for i < s+3 && (l.at(i) == '@' || l.at(i) == '$') {
		verbatim = verbatim || l.at(i) == '@'
		i++
	}
	if i == s || l.at(i) != '"' {
		return false
	}
	if !verbatim {
		l.quote(s, i)
		return true
	}
	// Verbatim: "" is a quote; no escapes; may span lines.
	j := i + 1
	for j < len(l.src) {
		if l.src[j] == '"' {
			if l.at(j+1) == '"' {
				j += 2
				continue
			}
			l.str(s, j+1, i+1, j)
			return true
		}
		j++
	}
	l.str(s, len(l.src), i+1, len(l.src))
	return true
}

// template reads a template literal's text from l.pos (after its ` or
// the } of a substitution) to its closing ` or the next ${, whose code the
// main loop then reads.
func (l *lexer) template(s int) {
	i := l.pos
	for i < len(l.src) {
		switch l.src[i] {
		case '\\':
			i += 2
			continue
		case '`':
			l.str(s, i+1, s, s)
			return
		case '$':
			if l.at(i+1) == '{' {
				l.advance(i + 2)
				l.emit(kString, s, i, s, s)
				l.tmpl = append(l.tmpl, 0)
				return
			}
		}
		i++
	}
	l.str(s, len(l.src), s, s)
}

// regexpAllowed says whether a / here starts a regexp literal rather than
// a division: at the start, after punctuation other than ) and ], and
// after the keywords an expression may follow.
func (l *lexer) regexpAllowed() bool {
	if len(l.toks) == 0 {
		return true
	}
	t := l.toks[len(l.toks)-1]
	switch t.kind {
	case kPunct:
		c := l.src[t.s]
		return t.e-t.s > 1 || (c != ')' && c != ']')
	case kIdent:
		switch string(l.src[t.s:t.e]) {
		case "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else", "yield", "await":
			return true
		}
	}
	return false
}

// regexp reads a regexp literal, which cannot span lines; without its
// closing / on the line, the / is a division after all.
func (l *lexer) regexp() {
	s := l.pos
	class := false
	for i := s + 1; i < len(l.src); i++ {
		switch l.src[i] {
		case '\n':
			i = len(l.src)
		case '\\':
			i++
		case '[':
			class = true
		case ']':
			class = false
		case '/':
			if class {
				continue
			}
			i++
			for i < len(l.src) && identPart(l.src[i]) {
				i++ // flags
			}
			l.pos = i
			l.emit(kString, s, i, s, s)
			return
		}
	}
	l.pos = s + 1
	l.emit(kPunct, s, s+1, s, s)
}

// operators are the punctuation tokens longer than a byte, by their
// first byte, longest first: a match needs = told from == and =>, : from
// ::.
var operators = func() (t [256][]string) {
	for _, op := range strings.Fields(">>>= ... === !== **= <<= >>= >>> &&= ||= ??= == != <= >= => -> :: := += -= *= /= %= &= |= ^= && || ?? ?. ++ -- << >> **") {
		t[op[0]] = append(t[op[0]], op)
	}
	return t
}()

// opLen returns the length of the punctuation token at s.
func (l *lexer) opLen(s int) int {
	for _, op := range operators[l.src[s]] {
		if len(l.src)-s >= len(op) && string(l.src[s:s+len(op)]) == op {
			return len(op)
		}
	}
	return 1
}

func (l *lexer) punct() {
	s := l.pos
	c := l.src[s]
	if len(l.tmpl) > 0 {
		switch c {
		case '{':
			l.tmpl[len(l.tmpl)-1]++
		case '}':
			top := len(l.tmpl) - 1
			if l.tmpl[top] == 0 {
				// The end of a substitution: the template goes on.
				l.tmpl = l.tmpl[:top]
				l.pos++
				l.template(s)
				return
			}
			l.tmpl[top]--
		}
	}
	n := l.opLen(s)
	l.pos += n
	l.emit(kPunct, s, s+n, s, s)
}
