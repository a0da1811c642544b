// Package registry reads snapshots of an MCP server registry, derives the
// sampling frame of unique GitHub source repositories with one stratum
// each, and draws the seeded, stratified sample of the paper's section
// IV-A. It depends on nothing else of stress; `stress sample` wires it.
//
// A snapshot holds server.json records as the official registry's API
// serves them (https://registry.modelcontextprotocol.io, GET /v0/servers):
// pages {"servers":[{"server":{…},"_meta":{…}}…],"metadata":{"nextCursor",
// "count"}}, a JSON array of entries, or JSON lines, one entry each. An
// entry is {"server": SERVER, "_meta": META} or a bare SERVER (whose own
// "_meta" may then carry META). The fields read are, of SERVER: name,
// version, repository {url, source, subfolder}, packages [{registryType,
// identifier, version}] and remotes [{type, url}]; of META, under
// "io.modelcontextprotocol.registry/official": isLatest, publishedAt and
// status. Every other field is ignored.
package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/mcpstress/stress/internal/input"
)

// Server is the part of a server.json record that sampling reads.
type Server struct {
	// Name is the server's reverse-DNS name, "io.github.user/weather".
	Name string `json:"name"`
	// Version is the record's version string (semantic versioning
	// recommended, not required).
	Version string `json:"version"`
	// Repository is the server's source repository; nil when absent.
	Repository *Repository `json:"repository,omitempty"`
	// Packages are the server's installable packages.
	Packages []Package `json:"packages,omitempty"`
	// Remotes are the server's hosted endpoints.
	Remotes []Remote `json:"remotes,omitempty"`
}

// Repository is server.json's repository object.
type Repository struct {
	// URL is the repository's address, "https://github.com/owner/name".
	URL string `json:"url"`
	// Source names the hosting service, "github".
	Source string `json:"source,omitempty"`
	// Subfolder is the server's directory inside a monorepo.
	Subfolder string `json:"subfolder,omitempty"`
}

// Package is one entry of server.json's packages.
type Package struct {
	// RegistryType is the package registry: npm, pypi, oci, mcpb, nuget, …
	RegistryType string `json:"registryType"`
	// Identifier is the package's name (or URL, for mcpb) in that registry.
	Identifier string `json:"identifier"`
	// Version is the package's version.
	Version string `json:"version,omitempty"`
}

// Remote is one entry of server.json's remotes: a hosted endpoint.
type Remote struct {
	// Type is the transport: streamable-http or sse.
	Type string `json:"type"`
	// URL is the endpoint, possibly templated.
	URL string `json:"url"`
}

// Official is the official registry's metadata of a record
// (_meta["io.modelcontextprotocol.registry/official"]).
type Official struct {
	// IsLatest says the record is its server's latest version.
	IsLatest bool `json:"isLatest"`
	// PublishedAt is when the version was published (RFC 3339).
	PublishedAt string `json:"publishedAt,omitempty"`
	// Status is active, deprecated or deleted.
	Status string `json:"status,omitempty"`
}

// OfficialMeta is the _meta key of the official registry's metadata.
const OfficialMeta = "io.modelcontextprotocol.registry/official"

// Location is where a record was read: the file as the caller names it,
// the line the record starts on (1-based) and its position among the
// file's records (1-based).
type Location struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Record int    `json:"record"`
}

func (l Location) String() string {
	return fmt.Sprintf("%s:%d: record %d", l.File, l.Line, l.Record)
}

// Record is one server.json record of a snapshot.
type Record struct {
	// Server is the record's server.json.
	Server Server
	// Official is the registry's metadata, nil when the record has none.
	Official *Official
	// At is where the record was read.
	At Location
}

// RecordError is a record or file of a snapshot that could not be read;
// the records around it are read on.
type RecordError struct {
	// At locates the record (Record 0 when the error is the file's).
	At Location
	// Name is the record's server name when it could be read.
	Name string
	// Err is what is wrong.
	Err error
}

func (e *RecordError) Error() string {
	at := e.At.String()
	if e.At.Record == 0 {
		at = fmt.Sprintf("%s:%d", e.At.File, e.At.Line)
	}
	if e.Name != "" {
		at += " (" + input.Quote(e.Name) + ")"
	}
	return at + ": " + e.Err.Error()
}

func (e *RecordError) Unwrap() error { return e.Err }

// wireEntry decodes an entry in either shape, and a page, in one pass.
type wireEntry struct {
	// A page.
	Servers  json.RawMessage `json:"servers"`
	Metadata json.RawMessage `json:"metadata"`
	// A wrapped entry.
	Server *wireServer `json:"server"`
	// The bare server's fields.
	wireServer
}

type wireServer struct {
	Server
	Meta *wireMeta `json:"_meta"`
}

type wireMeta struct {
	Official *Official `json:"io.modelcontextprotocol.registry/official"`
}

// Decode reads the records of one snapshot file: API pages (one or
// several, pretty-printed or one a line), a JSON array of entries, or JSON
// lines of entries. file names the file in locations. A record that cannot
// be read is returned as a *RecordError and the others are read on; a
// syntax error ends the file's value it is in (for JSON lines, only its
// line), keeping the records before it.
func Decode(file string, data []byte) ([]Record, []error) {
	d := &decoder{file: file}
	text, err := input.Decode(data)
	if err != nil {
		return nil, []error{&RecordError{At: Location{File: file, Line: 1}, Err: err}}
	}
	d.data = text
	d.lines = newlines(text)
	start := skipSpace(text, 0)
	if start == len(text) {
		return nil, []error{&RecordError{At: Location{File: file, Line: 1}, Err: errors.New("no records: the file is empty")}}
	}
	if isJSONLines(text[start:]) {
		for off := 0; off < len(text); {
			end := bytes.IndexByte(text[off:], '\n')
			if end < 0 {
				end = len(text)
			} else {
				end += off
			}
			if s := skipSpace(text[:end], off); s < end {
				d.top, d.topEnd = s, end
				d.value(s, end)
			}
			off = end + 1
		}
	} else {
		d.values(start, len(text))
	}
	return d.records, d.errs
}

// isJSONLines reports whether text holds JSON lines: its first line is a
// complete JSON value and more follows.
func isJSONLines(text []byte) bool {
	line, rest, found := bytes.Cut(text, []byte("\n"))
	return found && len(bytes.TrimSpace(rest)) > 0 && json.Valid(line)
}

type decoder struct {
	file string
	// top and topEnd bound the top-level value (or JSON line) being read:
	// a decoder's syntax error is located by rescanning it.
	top, topEnd int
	data    []byte
	lines   []int // offsets of the newlines
	n       int   // records seen
	records []Record
	errs    []error
}

// line returns the 1-based line of offset off.
func (d *decoder) line(off int) int {
	return sort.SearchInts(d.lines, off) + 1
}

// syntax returns a located error for err, a decoding error of the value
// starting at base.
func (d *decoder) syntax(base int, err error) *RecordError {
	var se *json.SyntaxError
	off := base
	if errors.As(err, &se) {
		// Offset counts the bytes read, the offending one included.
		off = base + max(int(se.Offset)-1, 0)
	} else if errors.Is(err, io.ErrUnexpectedEOF) || err.Error() == "unexpected end of JSON input" {
		off = d.topEnd
	}
	line := d.line(off)
	col := off + 1
	if line > 1 {
		col = off - d.lines[line-2]
	}
	return &RecordError{At: Location{File: d.file, Line: line}, Err: fmt.Errorf("column %d: malformed JSON: %v", col, err)}
}

// syntaxTop returns the located syntax error of the top-level value
// being read: json.Decoder's error offsets are not positions in the file,
// so the value is scanned again for its first error.
func (d *decoder) syntaxTop() *RecordError {
	err := json.Unmarshal(d.data[d.top:d.topEnd], new(json.RawMessage))
	if err == nil {
		err = errors.New("unexpected end of JSON input")
		return &RecordError{At: Location{File: d.file, Line: d.line(d.topEnd)}, Err: fmt.Errorf("malformed JSON: %v", err)}
	}
	return d.syntax(d.top, err)
}

// values reads the top-level values of data[start:end] in turn.
func (d *decoder) values(start, end int) {
	dec := json.NewDecoder(bytes.NewReader(d.data[start:end]))
	for {
		var raw json.RawMessage
		off := skipSpace(d.data, start+int(dec.InputOffset()))
		d.top, d.topEnd = off, end
		err := dec.Decode(&raw)
		if err == io.EOF {
			return
		}
		if err == nil {
			d.value(off, off+len(raw))
			continue
		}
		// Keep the entries before the error: read the broken value as a
		// stream, which reports the error where it stops.
		switch {
		case d.data[off] == '[':
			d.array(off, end)
		case d.data[off] == '{' && looksLikePage(d.data[off:end]):
			d.page(off, end)
		default:
			d.errs = append(d.errs, d.syntaxTop())
		}
		return
	}
}

// looksLikePage reports whether the object that text starts with has a
// "servers" member before its first entry would.
func looksLikePage(text []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.Token()
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return false
		}
		if key == "servers" {
			return true
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

// value reads the complete value data[start:end]: an array of entries, a
// page or an entry.
func (d *decoder) value(start, end int) {
	switch d.data[start] {
	case '[':
		d.array(start, end)
	case '{':
		d.object(start, end, false)
	default:
		if !json.Valid(d.data[start:end]) {
			d.errs = append(d.errs, d.syntax(start, json.Unmarshal(d.data[start:end], new(any))))
			return
		}
		d.errs = append(d.errs, &RecordError{At: Location{File: d.file, Line: d.line(start)},
			Err: fmt.Errorf("want a page, an array of entries or an entry (a JSON object), got %s", input.Quote(string(d.data[start:min(end, start+40)])))})
	}
}

// array reads the entries of the JSON array that data[start:end] starts
// with, up to a syntax error.
func (d *decoder) array(start, end int) {
	dec := json.NewDecoder(bytes.NewReader(d.data[start:end]))
	if _, err := dec.Token(); err != nil {
		d.errs = append(d.errs, d.syntaxTop())
		return
	}
	d.elements(dec, start, end, "")
}

// elements reads the entries of an array whose "[" dec has read, and its
// "]"; dec reads data[start:end]. in names the array in messages.
func (d *decoder) elements(dec *json.Decoder, start, end int, in string) bool {
	for dec.More() {
		off := skipSpace(d.data, start+int(dec.InputOffset()))
		if off < end && d.data[off] == ',' {
			off = skipSpace(d.data, off+1)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			d.errs = append(d.errs, d.syntaxTop())
			return false
		}
		if raw[0] != '{' {
			d.n++
			d.errs = append(d.errs, &RecordError{At: Location{File: d.file, Line: d.line(off), Record: d.n},
				Err: fmt.Errorf("an entry%s is %s, not a JSON object", in, input.Quote(string(raw[:min(len(raw), 40)])))})
			continue
		}
		d.object(off, off+len(raw), true)
	}
	if _, err := dec.Token(); err != nil {
		d.errs = append(d.errs, d.syntaxTop())
		return false
	}
	return true
}

// object reads the complete JSON object data[start:end]: a page (unless
// inPage: pages do not nest) or an entry.
func (d *decoder) object(start, end int, inPage bool) {
	raw := d.data[start:end]
	var w wireEntry
	err := json.Unmarshal(raw, &w)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		d.errs = append(d.errs, d.syntax(start, err))
		return
	}
	if !inPage && w.Servers != nil {
		d.page(start, end)
		return
	}
	d.n++
	at := Location{File: d.file, Line: d.line(start), Record: d.n}
	s := &w.wireServer
	if w.Server != nil {
		s = w.Server
	}
	name := s.Name
	if err != nil {
		// A field of the wrong type: name the record if its name reads.
		var n struct {
			Name   string `json:"name"`
			Server struct {
				Name string `json:"name"`
			} `json:"server"`
		}
		json.Unmarshal(raw, &n)
		name = n.Name + n.Server.Name
		d.errs = append(d.errs, &RecordError{At: at, Name: name, Err: fmt.Errorf("malformed record: %v", err)})
		return
	}
	if strings.TrimSpace(name) == "" {
		d.errs = append(d.errs, &RecordError{At: at, Err: errors.New("record without a name (no server.json \"name\")")})
		return
	}
	rec := Record{Server: s.Server, At: at}
	// The wrapped entry's _meta is the API's; a bare server's is its own.
	switch {
	case w.Server != nil && w.Meta != nil:
		rec.Official = w.Meta.Official
	case w.Server != nil && w.Server.Meta != nil:
		rec.Official = w.Server.Meta.Official
	case w.Server == nil && w.Meta != nil:
		rec.Official = w.Meta.Official
	}
	d.records = append(d.records, rec)
}

// page reads the entries of the page that data[start:end] starts with,
// as a stream: up to a syntax error, if any.
func (d *decoder) page(start, end int) {
	dec := json.NewDecoder(bytes.NewReader(d.data[start:end]))
	dec.Token() // {
	before := d.n
	var metadata json.RawMessage
	found := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			d.errs = append(d.errs, d.syntaxTop())
			return
		}
		if key != "servers" {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				d.errs = append(d.errs, d.syntaxTop())
				return
			}
			if key == "metadata" {
				metadata = raw
			}
			continue
		}
		found = true
		off := skipSpace(d.data, start+int(dec.InputOffset()))
		if off < end && d.data[off] == ':' {
			off = skipSpace(d.data, off+1)
		}
		tok, err := dec.Token()
		if err != nil {
			d.errs = append(d.errs, d.syntaxTop())
			return
		}
		if tok != json.Delim('[') {
			d.errs = append(d.errs, &RecordError{At: Location{File: d.file, Line: d.line(off)},
				Err: fmt.Errorf("page member \"servers\" is not an array (it starts with %s)", input.Quote(fmt.Sprint(tok)))})
			return
		}
		if !d.elements(dec, start, end, ` of "servers"`) {
			return
		}
	}
	if _, err := dec.Token(); err != nil {
		d.errs = append(d.errs, d.syntaxTop())
		return
	}
	var meta struct {
		Count *int `json:"count"`
	}
	if found && json.Unmarshal(metadata, &meta) == nil && meta.Count != nil && *meta.Count != d.n-before {
		d.errs = append(d.errs, &RecordError{At: Location{File: d.file, Line: d.line(start)},
			Err: fmt.Errorf("page metadata.count is %d but the page holds %d entries", *meta.Count, d.n-before)})
	}
}

// skipSpace returns the offset of the first non-blank byte of data at or
// after off.
func skipSpace(data []byte, off int) int {
	for off < len(data) {
		switch data[off] {
		case ' ', '\t', '\r', '\n':
			off++
		default:
			return off
		}
	}
	return off
}

// newlines returns the offsets of data's newlines.
func newlines(data []byte) []int {
	var out []int
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			return out
		}
		out = append(out, i+j)
		i += j + 1
	}
}
