package results

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// This file holds the one streaming reader of calls.jsonl (GroupReader),
// decision by decision, and what it reports of a torn tail.

// Torn describes the tail of a calls.jsonl that a crash left unfinished:
// a line without its newline, or a last line that is not valid JSON.
type Torn struct {
	Offset int64  // where the tail starts
	Size   int64  // its length in bytes
	Line   int    // its first line number
	Reason string // what is wrong with it
}

// GroupReader reads calls.jsonl decision by decision, keeping byte offsets.
// A damaged line (not valid JSON, or a response that does not match its
// response_sha256) past the durable point (SetDurable) ends the input: it
// and everything after it are reported by Torn and not returned. A damaged
// line before the durable point is an error (the file was changed after it
// was written). Without a durable point only the last line may be damaged.
type GroupReader struct {
	r       *bufio.Reader
	name    string
	off     int64
	line    int
	durable int64    // bytes known durable; -1: unknown
	lenient bool     // damaged lines are problems, not the end (Lenient)
	probs   []error  // the damaged lines met, when lenient
	head    *lineRec // the first line of the next group, read ahead
	g       Group
	err     error
	torn    *Torn
	eof     bool
	buf     []byte
	answers answerCache
	strs    strTable // interns the lines' strings
	// verified maps responses whose response_sha256 was checked to it.
	verified map[string]string
	// defaults fills what lines leave out.
	defaults beside[Defaults]
}

type lineRec struct {
	h    Head
	off  int64
	size int64
	line int
}

// maxLine is the longest call line a reader accepts, in bytes.
const maxLine = 256 << 20

// NewGroupReader reads from r; name labels errors. When r is an *os.File,
// what lines leave out is read from the defaults.json beside it;
// otherwise give it with SetDefaults.
func NewGroupReader(r io.Reader, name string) *GroupReader {
	g := &GroupReader{r: bufio.NewReaderSize(r, 1<<20), name: name, durable: -1}
	g.defaults.load = defaultsBeside
	if f, ok := r.(*os.File); ok {
		g.defaults.file = f.Name()
	}
	return g
}

// SetDefaults gives the defaults table that fills what lines leave out.
func (g *GroupReader) SetDefaults(d *Defaults) { g.defaults.set(d) }

// fill sets the fields line h (line number line) left out (c says which
// it carried). A table that cannot be read, or is missing, is the
// reader's error, not the line's: no line that needs it can be read.
func (g *GroupReader) fill(h *Head, c carried, line int) error {
	if c.all() {
		return nil
	}
	d, err := g.defaults.get()
	if err == nil {
		err = d.fill(h, c)
		if !errors.Is(err, errNoDefaults) {
			return err // nil, or a line's own error
		}
	}
	g.err = fmt.Errorf("%s:%d: %w", g.name, line, err)
	return g.err
}

// Lenient makes the reader go on past damaged lines, as an analysis of a
// bundle does: a line that is not valid JSON is skipped, a response that
// does not match its response_sha256 is kept, and both are reported by
// Problems, located. A resume or merge must not be lenient.
func (g *GroupReader) Lenient() { g.lenient = true }

// Problems returns the damaged lines a lenient reader met.
func (g *GroupReader) Problems() []error { return g.probs }

// SetDurable says that the first n bytes of the input were on stable
// storage (see Record's calls_durable_bytes): damage after them is a torn
// tail, damage within them an error.
func (g *GroupReader) SetDurable(n int64) { g.durable = n }

// Next advances to the next decision's group; it returns false at the end
// of the input or on an error (see Err and Torn).
func (g *GroupReader) Next() bool {
	if g.err != nil {
		return false
	}
	if g.head == nil {
		g.head = g.readLine()
		if g.head == nil {
			return false
		}
	}
	first := g.head
	g.head = nil
	if g.answers == nil {
		g.answers = answerCache{}
	}
	g.g = Group{Key: first.h.Key, Heads: append(g.g.Heads[:0], first.h), Offset: first.off, Size: first.size, Line: first.line, answers: &g.answers}
	for {
		next := g.readLine()
		if next == nil {
			return g.err == nil
		}
		if next.h.Key != g.g.Key || next.h.Turn == 0 {
			g.head = next
			return true
		}
		g.g.Heads = append(g.g.Heads, next.h)
		g.g.Size += next.size
	}
}

// readLine reads and decodes one line, skipping damaged ones when
// lenient; nil at the end, on a torn tail or on an error.
func (g *GroupReader) readLine() *lineRec {
	for {
		if g.eof || g.err != nil {
			return nil
		}
		g.buf = g.buf[:0]
		for {
			chunk, err := g.r.ReadSlice('\n')
			g.buf = append(g.buf, chunk...)
			if len(g.buf) > maxLine {
				g.err = fmt.Errorf("%s:%d: line longer than %d bytes", g.name, g.line+1, maxLine)
				return nil
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				g.eof = true
				if len(g.buf) > 0 && g.lenient {
					break // decoded, or reported, below
				}
				if len(g.buf) > 0 {
					g.torn = &Torn{Offset: g.off, Size: int64(len(g.buf)), Line: g.line + 1, Reason: "last line has no newline"}
				}
				return nil
			}
			if err != nil {
				g.err = fmt.Errorf("%s: %w", g.name, err)
				return nil
			}
			break
		}
		rec := &lineRec{off: g.off, size: int64(len(g.buf)), line: g.line + 1}
		g.off += rec.size
		g.line++
		c, err := decodeHead(g.buf, &rec.h, &g.strs)
		if err == nil {
			if err = g.fill(&rec.h, c, rec.line); g.err != nil {
				return nil
			}
		}
		if err == nil && !g.verify(&rec.h) {
			err = errors.New("response_sha256 does not match the response")
			if g.lenient {
				g.probs = append(g.probs, fmt.Errorf("%s:%d: decision %s turn %d: %w", g.name, rec.line, rec.h.Key, rec.h.Turn, err))
				return rec
			}
		}
		if err == nil {
			return rec
		}
		switch {
		case g.lenient:
			g.probs = append(g.probs, fmt.Errorf("%s:%d: %w", g.name, rec.line, err))
			continue
		case g.durable >= 0 && rec.off >= g.durable:
			// Past the durable point: crash damage, whatever follows.
			rest, _ := io.Copy(io.Discard, g.r)
			g.eof = true
			g.torn = &Torn{Offset: rec.off, Size: rec.size + rest, Line: rec.line,
				Reason: fmt.Sprintf("line %d is damaged (%v) after the %d bytes known durable", rec.line, err, g.durable)}
		case g.durable >= 0:
			g.err = fmt.Errorf("%s:%d: %w (a damaged line within the %d bytes known durable: the file was changed after it was written)", g.name, rec.line, err, g.durable)
		default:
			// A bad line is a torn tail only if nothing follows it.
			if _, perr := g.r.Peek(1); perr == io.EOF {
				g.eof = true
				g.torn = &Torn{Offset: rec.off, Size: rec.size, Line: rec.line, Reason: "last line is damaged: " + err.Error()}
				return nil
			}
			g.err = fmt.Errorf("%s:%d: %w (a damaged line that is not the last one: the file was changed after it was written)", g.name, rec.line, err)
		}
		return nil
	}
}

// verify reports whether h's response_sha256 is its response's, from the
// responses already verified when it can.
func (g *GroupReader) verify(h *Head) bool {
	if sum, ok := g.verified[h.Response]; ok && sum == h.ResponseSHA256 {
		return true
	}
	if h.ResponseSHA256 != SHA256([]byte(h.Response)) {
		return false
	}
	if len(h.Response) <= maxInterned {
		if g.verified == nil || len(g.verified) >= maxStrings {
			g.verified = make(map[string]string, 1024)
		}
		g.verified[h.Response] = h.ResponseSHA256
	}
	return true
}

// Group returns the current group; it is reused by the next call to Next.
func (g *GroupReader) Group() *Group { return &g.g }

// Err returns the first error: a read failure or a damaged line that is
// not the last.
func (g *GroupReader) Err() error { return g.err }

// Torn returns the torn tail found at the end of the input, or nil.
func (g *GroupReader) Torn() *Torn { return g.torn }
