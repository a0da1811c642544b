package input

import (
	"errors"
	"fmt"
)

// MaxDepth is the deepest nesting of collections (JSON arrays and
// objects; YAML sequences and mappings, block or flow) a JSON or YAML
// input may hold. The deepest shipped file nests 10 levels
// (lab/scenarios/core.json); the decoders' own limits (10,000 levels)
// come after costs that grow with the square of the depth.
const MaxDepth = 64

// maxAliasBytes is the most bytes of a YAML file that its aliases may
// repeat, summed over the aliases: each alias costs the length of the
// text of the node its anchor names (as measured by CheckYAML, an upper
// bound).
const maxAliasBytes = 64 << 10

// ErrTooDeep marks an input nested deeper than MaxDepth; ErrAliases
// one whose aliases could expand past maxAliasBytes.
var (
	ErrTooDeep = errors.New("nesting deeper than the limit")
	ErrAliases = errors.New("aliases past the limit")
)

func tooDeep(line, max int) error {
	return &boundError{line, fmt.Sprintf("nesting deeper than %d levels", max), ErrTooDeep}
}

// A boundError is a refusal of CheckJSON or CheckYAML: the line it
// happened on and what was refused.
type boundError struct {
	line int
	msg  string
	kind error
}

func (e *boundError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }
func (e *boundError) Unwrap() error { return e.kind }

// CheckJSON refuses JSON text nested deeper than MaxDepth, naming the
// line where it goes past, in one pass over data that builds nothing
// (the caller adds the file's name). It does not check that data is
// JSON: the decoder does that after it.
func CheckJSON(data []byte) error { return CheckJSONDepth(data, MaxDepth) }

// CheckJSONDepth is CheckJSON with a bound of max levels: encoding/json's
// own bound, 10,000, where a faster decoder without it must refuse what
// encoding/json refuses.
func CheckJSONDepth(data []byte, max int) error {
	depth, line := 0, 1
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '\n':
			line++
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				switch data[i] {
				case '\\':
					i++
				case '\n': // not JSON, but keep the line count right
					line++
				}
			}
		case '[', '{':
			if depth++; depth > max {
				return tooDeep(line, max)
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// CheckYAML refuses YAML text (JSON included) that nests deeper than
// MaxDepth, or whose aliases could expand the document past its text:
// an alias inside the node of an anchor (which is how an alias "bomb"
// multiplies), or aliases repeating more than maxAliasBytes of the text
// in total. It makes one pass over data, in memory bounded by MaxDepth
// and the number of anchors, before any tree is built; the error names
// the line (the caller adds the file's name).
//
// Note: the pass follows YAML's structure closely enough to measure it
// (quoted scalars, comments, block scalars, flow collections, indented
// block collections) without parsing it. Where it must guess it
// over-counts: an anchor's node is taken to run to the end of the block
// entry (or flow entry) that holds the anchor, and a node whose
// indentation leaves the block it would belong to ends that block.
func CheckYAML(data []byte) error {
	s := yscan{data: data, line: 1, sizes: map[string]int{}}
	return s.run()
}

// A yentry is an open block collection entry (a sequence item or a
// mapping key at a column) or flow collection of a yscan.
type yentry struct {
	col     int  // the column of its indicator or key; -1 for the document
	seq     bool // a sequence item ("- ")
	anchors []anchor
}

// An anchor is an anchor whose node is still open.
type anchor struct {
	name  string
	start int // the offset of its '&'
	line  int
}

type yscan struct {
	data    []byte
	i       int // the offset read next
	line    int // the line of offset i, from 1
	lineOff int // the offset the line starts at
	block   []yentry
	flow    []yentry   // open flow collections
	comma   [][]anchor // per flow collection, anchors scoped to its entry (up to ',')
	open    int        // the open anchor lists: an alias while one is open is refused
	// the anchors read so far: the length of their node's text
	sizes    map[string]int
	largest  int // the longest of sizes
	expanded int // the bytes repeated by the aliases so far
}

func (s *yscan) depth() int { return len(s.block) + len(s.flow) }

func (s *yscan) push(e yentry, flow bool) error {
	if flow {
		s.flow = append(s.flow, e)
		s.comma = append(s.comma, nil)
	} else {
		s.block = append(s.block, e)
	}
	if s.depth() > MaxDepth {
		return tooDeep(s.line, MaxDepth)
	}
	return nil
}

// close records the node length of anchors, which end at offset end.
func (s *yscan) close(anchors []anchor, end int) {
	if len(anchors) == 0 {
		return
	}
	s.open--
	for _, a := range anchors {
		n := max(end-a.start, 1)
		s.sizes[a.name] = max(s.sizes[a.name], n)
		s.largest = max(s.largest, n)
	}
}

// popBlock closes the innermost block entry at offset end.
func (s *yscan) popBlock(end int) {
	e := s.block[len(s.block)-1]
	s.block = s.block[:len(s.block)-1]
	s.close(e.anchors, end)
}

// addAnchors appends as to the list *to; the lists open count once.
func (s *yscan) addAnchors(to *[]anchor, as ...anchor) {
	if len(*to) == 0 {
		s.open++
	}
	*to = append(*to, as...)
}

func (s *yscan) peek(k int) byte {
	if s.i+k < len(s.data) {
		return s.data[s.i+k]
	}
	return 0
}

func eol(c byte) bool { return c == '\n' || c == '\r' }

func blank(c byte) bool { return c == ' ' || c == '\t' || eol(c) }

// blankAt reports whether the byte k past s.i is blank or past the end.
func (s *yscan) blankAt(k int) bool { return s.i+k >= len(s.data) || blank(s.data[s.i+k]) }

func flowIndicator(c byte) bool { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}' }

// atWord reports whether s.i starts a word: the text's start or after
// blank space or a flow indicator.
func (s *yscan) atWord() bool {
	return s.i == 0 || blank(s.data[s.i-1]) || flowIndicator(s.data[s.i-1])
}

// newline moves s.i past the line break at s.i ("\r\n", "\n" or "\r").
func (s *yscan) newline() {
	if s.data[s.i] == '\r' && s.peek(1) == '\n' {
		s.i++
	}
	s.i++
	s.line++
	s.lineOff = s.i
}

func (s *yscan) spaces() {
	for s.i < len(s.data) && (s.data[s.i] == ' ' || s.data[s.i] == '\t') {
		s.i++
	}
}

// skipLine moves s.i past the end of the line.
func (s *yscan) skipLine() {
	for s.i < len(s.data) && !eol(s.data[s.i]) {
		s.i++
	}
	if s.i < len(s.data) {
		s.newline()
	}
}

// name reads the anchor, alias or tag name after the '&', '*' or '!'
// at s.i.
func (s *yscan) name() string {
	start := s.i + 1
	end := start
	for end < len(s.data) && !blank(s.data[end]) && !flowIndicator(s.data[end]) {
		end++
	}
	s.i = end
	return string(s.data[start:end])
}

func (s *yscan) anchor() anchor {
	a := anchor{start: s.i, line: s.line}
	a.name = s.name()
	return a
}

// alias charges the alias at s.i.
func (s *yscan) alias() error {
	line := s.line
	name := s.name()
	if s.open > 0 {
		return &boundError{line, fmt.Sprintf("alias *%s inside an anchored node: an alias may not repeat another (see the limits in docs/manifests.md)", Snippet(name)), ErrAliases}
	}
	n, ok := s.sizes[name]
	if !ok {
		n = s.largest // a name read otherwise than the parser reads it
	}
	if s.expanded += n; s.expanded > maxAliasBytes {
		return &boundError{line, fmt.Sprintf("aliases repeat more than %s of the text (see the limits in docs/manifests.md)", Size(maxAliasBytes)), ErrAliases}
	}
	return nil
}

func (s *yscan) run() error {
	for s.i < len(s.data) {
		if err := s.lineStart(); err != nil {
			return err
		}
	}
	return nil
}

func (s *yscan) startsWith(p string) bool {
	return len(s.data)-s.i >= len(p) && string(s.data[s.i:s.i+len(p)]) == p
}

// lineStart reads the line at s.i in the block context: its indentation
// closes the entries it leaves, then its nodes are read.
func (s *yscan) lineStart() error {
	start := s.i
	s.spaces()
	col := s.i - start
	c := s.peek(0)
	switch {
	case s.i == len(s.data) || eol(c) || c == '#' || (c == '%' && col == 0):
		s.skipLine()
		return nil
	case col == 0 && (s.startsWith("---") || s.startsWith("...")) && s.blankAt(3):
		for len(s.block) > 0 {
			s.popBlock(start)
		}
		s.i += 3
		return s.node()
	}
	seqLine := c == '-' && s.blankAt(1)
	for len(s.block) > 0 {
		top := s.block[len(s.block)-1]
		// A sequence at the indentation of the key it is the value of
		// stays inside that key.
		if top.col < col || (top.col == col && seqLine && !top.seq) {
			break
		}
		s.popBlock(start)
	}
	return s.node()
}

// blockAnchor attaches the anchor at s.i, in the block context, to the
// innermost entry left of it: its node lies within that entry.
func (s *yscan) blockAnchor() {
	at := s.i - s.lineOff
	a := s.anchor()
	k := len(s.block) - 1
	for k >= 0 && s.block[k].col >= at {
		k--
	}
	if k < 0 {
		// The document's node: open to the end of the text.
		s.addAnchors(new([]anchor), a)
		return
	}
	s.addAnchors(&s.block[k].anchors, a)
}

// node reads the rest of a line from s.i, at a node's start, in the
// block context.
func (s *yscan) node() error {
	for {
		s.spaces()
		col := s.i - s.lineOff
		c := s.peek(0)
		switch {
		case s.i >= len(s.data):
			return nil
		case eol(c) || c == '#':
			s.skipLine()
			return nil
		case (c == '-' || c == '?') && s.blankAt(1):
			if err := s.push(yentry{col: col, seq: c == '-'}, false); err != nil {
				return err
			}
			s.i++
		case c == ':' && s.blankAt(1):
			s.i++
		case c == '&':
			s.blockAnchor()
		case c == '!':
			s.name()
		case c == '*':
			if err := s.alias(); err != nil {
				return err
			}
			return s.plain(col)
		case c == '|' || c == '>':
			s.blockScalar()
			return nil
		case c == '[' || c == '{':
			if err := s.flowCollection(); err != nil {
				return err
			}
			return s.afterQuoted(col)
		case c == '"' || c == '\'':
			s.quoted()
			return s.afterQuoted(col)
		default:
			return s.plain(col)
		}
	}
}

// afterQuoted reads what follows a quoted scalar or a flow collection
// that starts at column col in the block context: a ':' makes it a key
// (even without a space after it), whose value follows.
func (s *yscan) afterQuoted(col int) error {
	s.spaces()
	if s.peek(0) == ':' {
		if err := s.push(yentry{col: col}, false); err != nil {
			return err
		}
		s.i++
		return s.node()
	}
	return s.plain(col)
}

// plain reads the rest of a plain scalar that starts at column col in
// the block context, to the end of the line, a comment, or the ": "
// after a key, whose value follows. Note: a word that starts with '&'
// or '*' is taken for an anchor or alias, as a parser may take it.
func (s *yscan) plain(col int) error {
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case eol(c) || (c == '#' && s.atWord()):
			s.skipLine()
			return nil
		case c == ':' && s.blankAt(1):
			if err := s.push(yentry{col: col}, false); err != nil {
				return err
			}
			s.i++
			return s.node()
		case c == '&' && s.atWord():
			s.blockAnchor()
		case c == '*' && s.atWord():
			if err := s.alias(); err != nil {
				return err
			}
		default:
			s.i++
		}
	}
	return nil
}

// blockScalar skips a block scalar ("|" or ">") from its header at s.i:
// its lines are those indented more than the innermost entry, down to
// the indentation of its first line.
func (s *yscan) blockScalar() {
	parent := -1
	if len(s.block) > 0 {
		parent = s.block[len(s.block)-1].col
	}
	s.skipLine()
	indent := -1
	for s.i < len(s.data) {
		k := s.i
		for k < len(s.data) && (s.data[k] == ' ' || s.data[k] == '\t') {
			k++
		}
		if k == len(s.data) || eol(s.data[k]) {
			s.skipLine() // an empty line belongs to the scalar
			continue
		}
		n := k - s.i
		if n <= parent || (indent != -1 && n < indent) {
			return
		}
		if indent == -1 {
			indent = n
		}
		s.skipLine()
	}
}

// quoted skips the quoted scalar at s.i, which may span lines.
func (s *yscan) quoted() {
	q := s.data[s.i]
	s.i++
	for s.i < len(s.data) {
		switch c := s.data[s.i]; {
		case eol(c):
			s.newline()
		case c == '\\' && q == '"':
			s.i++
			if s.i < len(s.data) && eol(s.data[s.i]) {
				s.newline()
			} else {
				s.i++
			}
		case c == q && q == '\'' && s.peek(1) == '\'':
			s.i += 2
		case c == q:
			s.i++
			return
		default:
			s.i++
		}
	}
}

// flowCollection reads the flow collection at s.i to its end (or the
// end of the text).
func (s *yscan) flowCollection() error {
	base := len(s.flow)
	var pending []anchor // anchors of the node to come
	// settle gives the pending anchors to the collection just opened or,
	// with opened false, to the entry of the innermost one.
	settle := func(opened bool) {
		if len(pending) == 0 {
			return
		}
		top := len(s.flow) - 1
		if opened {
			s.flow[top].anchors = pending
		} else {
			s.open-- // counted again by addAnchors
			s.addAnchors(&s.comma[top], pending...)
		}
		pending = nil
	}
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case eol(c):
			s.newline()
		case c == ' ' || c == '\t':
			s.i++
		case c == '#' && s.atWord():
			for s.i < len(s.data) && !eol(s.data[s.i]) {
				s.i++
			}
		case c == '[' || c == '{':
			if err := s.push(yentry{}, true); err != nil {
				return err
			}
			settle(true)
			s.i++
		case c == ']' || c == '}':
			settle(false)
			top := len(s.flow) - 1
			s.close(s.comma[top], s.i)
			s.close(s.flow[top].anchors, s.i+1)
			s.flow, s.comma = s.flow[:top], s.comma[:top]
			s.i++
			if len(s.flow) == base {
				return nil
			}
		case c == ',':
			settle(false)
			top := len(s.comma) - 1
			s.close(s.comma[top], s.i)
			s.comma[top] = nil
			s.i++
		case c == ':' || (c == '?' && s.blankAt(1)):
			settle(false)
			s.i++
		case c == '&' && s.atWord():
			if len(pending) == 0 {
				s.open++
			}
			pending = append(pending, s.anchor())
		case c == '!' && s.atWord():
			s.name()
		case c == '*' && s.atWord():
			settle(false)
			if err := s.alias(); err != nil {
				return err
			}
		case c == '"' || c == '\'':
			settle(false)
			s.quoted()
		default:
			settle(false)
			// A word of a plain scalar.
			for s.i < len(s.data) && !blank(s.data[s.i]) && !flowIndicator(s.data[s.i]) && s.data[s.i] != ':' {
				s.i++
			}
		}
	}
	return nil
}
