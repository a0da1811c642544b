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
	"cmp"
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

// Location is where a record was read: the file as the caller names it,
// the line the record starts on (1-based) and its position among the
// file's records (1-based).
type Location struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Record int    `json:"record"`
}

// String writes l as FILE:LINE: record N.
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
	// At locates the record (Record 0 when the error is the file's, Line
	// 0 too when the file could not be read).
	At Location
	// Name is the record's server name when it could be read.
	Name string
	// Err is what is wrong.
	Err error
}

// Error names the file, line, record and server, then what is wrong.
func (e *RecordError) Error() string {
	at := e.At.String()
	switch {
	case e.At.Line == 0:
		at = e.At.File
	case e.At.Record == 0:
		at = fmt.Sprintf("%s:%d", e.At.File, e.At.Line)
	}
	if e.Name != "" {
		at += " (" + input.Quote(e.Name) + ")"
	}
	return at + ": " + e.Err.Error()
}

// Unwrap returns e.Err.
func (e *RecordError) Unwrap() error { return e.Err }

// wireEntry decodes an entry in either shape in one pass.
type wireEntry struct {
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
// syntax error ends the top-level value it is in (for JSON lines, only its
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
	if !isJSONLines(text[start:]) {
		d.values(start, len(text))
		return d.records, d.errs
	}
	off := 0
	for line := range bytes.Lines(text) {
		end := off + len(bytes.TrimSuffix(line, []byte("\n")))
		if s := skipSpace(text[:end], off); s < end {
			d.values(s, end)
		}
		off += len(line)
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
	data []byte
	// top and topEnd bound the top-level value (or JSON line) being read:
	// a decoder's syntax error is located by rescanning it.
	top, topEnd int
	lines       []int // offsets of the newlines
	n           int   // records seen
	records     []Record
	errs        []error
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
		return &RecordError{At: Location{File: d.file, Line: d.line(d.topEnd)}, Err: errors.New("malformed JSON: unexpected end of JSON input")}
	}
	return d.syntax(d.top, err)
}

// offset returns the offset in the file of the next value dec reads,
// which reads data[start:end]: after blanks and one separator sep (',' or
// ':', 0 for none).
func (d *decoder) offset(dec *json.Decoder, start, end int, sep byte) int {
	off := skipSpace(d.data[:end], start+int(dec.InputOffset()))
	if sep != 0 && off < end && d.data[off] == sep {
		off = skipSpace(d.data[:end], off+1)
	}
	return off
}

// values reads the top-level values of data[start:end] in turn, each as a
// stream: an array of entries, a page, or an entry. A syntax error ends
// the reading.
func (d *decoder) values(start, end int) {
	dec := json.NewDecoder(bytes.NewReader(d.data[start:end]))
	for {
		off := d.offset(dec, start, end, 0)
		if off >= end {
			return
		}
		d.top, d.topEnd = off, end
		var err *RecordError
		switch d.data[off] {
		case '[':
			dec.Token()
			err = d.elements(dec, start, end, "")
		case '{':
			err = d.object(dec, start, end, off)
		default:
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				err = d.syntaxTop()
				break
			}
			d.errs = append(d.errs, &RecordError{At: Location{File: d.file, Line: d.line(off)},
				Err: fmt.Errorf("want a page, an array of entries or an entry (a JSON object), got %s", input.Quote(string(raw[:min(len(raw), 40)])))})
		}
		if err != nil {
			d.errs = append(d.errs, err)
			return
		}
	}
}

// object reads the top-level object at off, which dec is about to read: a
// page if it has a "servers" member (streamed), else an entry. An error
// ends the reading of the top-level value.
func (d *decoder) object(dec *json.Decoder, start, end, off int) *RecordError {
	dec.Token() // {
	before := d.n
	var metadata json.RawMessage
	page := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return d.syntaxTop()
		}
		if key != "servers" {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return d.syntaxTop()
			}
			if key == "metadata" {
				metadata = raw
			}
			continue
		}
		page = true
		at := d.offset(dec, start, end, ':')
		tok, err := dec.Token()
		if err != nil {
			return d.syntaxTop()
		}
		if tok != json.Delim('[') {
			return &RecordError{At: Location{File: d.file, Line: d.line(at)},
				Err: fmt.Errorf("page member \"servers\" is not an array (it starts with %s)", input.Quote(fmt.Sprint(tok)))}
		}
		if err := d.elements(dec, start, end, ` of "servers"`); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // }
		return d.syntaxTop()
	}
	if !page {
		// An entry: decode it again, whole.
		stop := start + int(dec.InputOffset())
		var w wireEntry
		d.add(&w, json.Unmarshal(d.data[off:stop], &w), off, stop)
		return nil
	}
	var meta struct {
		Count *int `json:"count"`
	}
	if json.Unmarshal(metadata, &meta) == nil && meta.Count != nil && *meta.Count != d.n-before {
		d.errs = append(d.errs, &RecordError{At: Location{File: d.file, Line: d.line(off)},
			Err: fmt.Errorf("page metadata.count is %d but the page holds %d entries", *meta.Count, d.n-before)})
	}
	return nil
}

// elements reads the entries of an array whose "[" dec has read, and its
// "]"; dec reads data[start:end]. in names the array in messages. A
// syntax error ends the reading.
func (d *decoder) elements(dec *json.Decoder, start, end int, in string) *RecordError {
	for dec.More() {
		off := d.offset(dec, start, end, ',')
		if off < end && d.data[off] != '{' {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return d.syntaxTop()
			}
			d.n++
			d.errs = append(d.errs, &RecordError{At: Location{File: d.file, Line: d.line(off), Record: d.n},
				Err: fmt.Errorf("an entry%s is %s, not a JSON object", in, input.Quote(string(raw[:min(len(raw), 40)])))})
			continue
		}
		var w wireEntry
		err := dec.Decode(&w)
		var te *json.UnmarshalTypeError
		if err != nil && !errors.As(err, &te) {
			return d.syntaxTop()
		}
		d.add(&w, err, off, start+int(dec.InputOffset()))
	}
	if _, err := dec.Token(); err != nil { // ]
		return d.syntaxTop()
	}
	return nil
}

// add records the entry data[off:stop], decoded into w with the error err
// (nil, or a field of the wrong type).
func (d *decoder) add(w *wireEntry, err error, off, stop int) {
	d.n++
	at := Location{File: d.file, Line: d.line(off), Record: d.n}
	s := &w.wireServer
	if w.Server != nil {
		s = w.Server
	}
	if err != nil {
		// A field of the wrong type: name the record if its name reads.
		var n struct {
			Name   string `json:"name"`
			Server struct {
				Name string `json:"name"`
			} `json:"server"`
		}
		json.Unmarshal(d.data[off:stop], &n)
		d.errs = append(d.errs, &RecordError{At: at, Name: n.Name + n.Server.Name, Err: fmt.Errorf("malformed record: %v", err)})
		return
	}
	if strings.TrimSpace(s.Name) == "" {
		d.errs = append(d.errs, &RecordError{At: at, Err: errors.New("record without a name (no server.json \"name\")")})
		return
	}
	rec := Record{Server: s.Server, At: at}
	// The wrapped entry's _meta is the API's, else its server's; a bare
	// server's is its own (then w.Meta is s.Meta).
	if meta := cmp.Or(w.Meta, s.Meta); meta != nil {
		rec.Official = meta.Official
	}
	d.records = append(d.records, rec)
}

// skipSpace returns the offset of the first non-blank byte of data at or
// after off.
func skipSpace(data []byte, off int) int {
	return len(data) - len(bytes.TrimLeft(data[off:], " \t\r\n"))
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
