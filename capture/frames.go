package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Frame directions.
const (
	Send = "send" // client to server
	Recv = "recv" // server to client
)

// MaxFrame is the largest frame recorded whole, in bytes; a longer one is
// recorded truncated (Frame.Truncated), and the SDK itself refuses lines
// over 16 MiB.
const MaxFrame = 16 << 20

// Frame is one JSON-RPC message exactly as it crossed the wire: a stdio
// line without its newline, an HTTP request body, or the data of one
// server-sent event.
type Frame struct {
	Seq       int       `json:"seq"`                  // 1-based order of recording
	Dir       string    `json:"dir"`                  // Send or Recv
	Raw       string    `json:"raw,omitempty"`        // the bytes, when they are valid UTF-8
	RawBase64 []byte    `json:"raw_base64,omitempty"` // the bytes otherwise
	Truncated bool      `json:"truncated,omitempty"`  // the frame exceeded MaxFrame
	HTTP      *HTTPInfo `json:"http,omitempty"`       // for the streamable HTTP transport

	code wireCode // the JSON-RPC code its text quotes, once wireSurface has read it
}

// wireCode caches what wireTextCode finds in a response frame.
type wireCode struct {
	known, ok bool
	n         int
}

// HTTPInfo says how a frame travelled over streamable HTTP. Headers are not
// recorded: they may carry credentials.
type HTTPInfo struct {
	Method      string `json:"method"`                 // request method
	Status      int    `json:"status,omitempty"`       // response status (Recv frames)
	ContentType string `json:"content_type,omitempty"` // response media type (Recv frames)
	Event       string `json:"event,omitempty"`        // SSE event name, if any
}

// Bytes returns the frame's exact bytes.
func (f *Frame) Bytes() []byte {
	if f.RawBase64 != nil {
		return f.RawBase64
	}
	return []byte(f.Raw)
}

// Message decodes the frame with the SDK's JSON-RPC decoder.
func (f *Frame) Message() (jsonrpc.Message, error) { return jsonrpc.DecodeMessage(f.Bytes()) }

// wireEnvelope is the part of a JSON-RPC message used to pair frames.
type wireEnvelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (f *Frame) envelope() (wireEnvelope, bool) {
	var e wireEnvelope
	if json.Unmarshal(f.Bytes(), &e) != nil {
		return e, false
	}
	return e, true
}

// Recorder keeps the frames of one connection in wire order. It is safe for
// concurrent use.
type Recorder struct {
	mu     sync.Mutex
	frames []Frame
}

// add records one frame; raw is copied.
func (r *Recorder) add(dir string, raw []byte, truncated bool, h *HTTPInfo) {
	f := Frame{Dir: dir, Truncated: truncated, HTTP: h}
	if utf8.Valid(raw) {
		f.Raw = string(raw)
	} else {
		f.RawBase64 = bytes.Clone(raw)
	}
	r.mu.Lock()
	f.Seq = len(r.frames) + 1
	r.frames = append(r.frames, f)
	r.mu.Unlock()
}

// Frames returns a copy of the frames recorded so far.
func (r *Recorder) Frames() []Frame {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Frame(nil), r.frames...)
}

// Len returns the number of frames recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.frames)
}

// Exchange finds, among the frames recorded from index since on, the last
// request sent with the given method and the response received to it.
// Either may be nil when it was not seen.
func (r *Recorder) Exchange(since int, method string) (req, resp *Frame) {
	frames := r.Frames()
	if since > len(frames) {
		since = len(frames)
	}
	var id []byte
	for i := len(frames) - 1; i >= since; i-- {
		f := &frames[i]
		if e, ok := f.envelope(); ok && f.Dir == Send && e.Method == method && len(e.ID) > 0 {
			req, id = f, compact(e.ID)
			break
		}
	}
	if req == nil {
		return nil, nil
	}
	for i := since; i < len(frames); i++ {
		f := &frames[i]
		if e, ok := f.envelope(); ok && f.Dir == Recv && e.Method == "" && bytes.Equal(compact(e.ID), id) {
			return req, f
		}
	}
	return req, nil
}

// AwaitExchange is Exchange, waiting up to d for the response frame.
// Note: the SDK can act on a response as soon as its JSON value is
// complete, while the recorder ends a stdio frame at the newline that
// follows, which may arrive in a later read.
func (r *Recorder) AwaitExchange(since int, method string, d time.Duration) (req, resp *Frame) {
	deadline := time.Now().Add(d)
	for {
		req, resp = r.Exchange(since, method)
		if resp != nil || time.Now().After(deadline) {
			return req, resp
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// RequestID returns the id of a request frame as it is on the wire.
func (f *Frame) RequestID() json.RawMessage {
	e, _ := f.envelope()
	return compact(e.ID)
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// WriteFrames writes frames as JSON lines.
func WriteFrames(w io.Writer, frames []Frame) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range frames {
		if err := enc.Encode(&frames[i]); err != nil {
			return err
		}
	}
	return nil
}

// ReadFrames reads a frames file written by WriteFrames. Errors name the
// line.
func ReadFrames(name string, r io.Reader) ([]Frame, error) {
	var out []Frame
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4*MaxFrame)
	line := 0
	for sc.Scan() {
		line++
		var f Frame
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return out, fmt.Errorf("%s: line %d: %w", name, line, err)
		}
		if f.Dir != Send && f.Dir != Recv {
			return out, fmt.Errorf("%s: line %d: field dir: want %q or %q, got %q", name, line, Send, Recv, f.Dir)
		}
		out = append(out, f)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: line %d: %w", name, line+1, err)
	}
	return out, nil
}

// lineSplitter turns a byte stream into newline-delimited frames.
type lineSplitter struct {
	rec       *Recorder
	dir       string
	buf       []byte
	truncated bool
}

func (s *lineSplitter) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := MaxFrame - len(s.buf); len(chunk) > room {
			s.buf = append(s.buf, chunk[:max(room, 0)]...)
			s.truncated = true
		} else {
			s.buf = append(s.buf, chunk...)
		}
		if i < 0 {
			return
		}
		s.flush()
		p = p[i+1:]
	}
}

// flush records a pending line. Note: blank lines between frames are not
// frames and are not recorded.
func (s *lineSplitter) flush() {
	if len(bytes.TrimSpace(s.buf)) > 0 {
		s.rec.add(s.dir, s.buf, s.truncated, nil)
	}
	s.buf, s.truncated = s.buf[:0], false
}

// teeReader records what is read through it as Recv frames.
type teeReader struct {
	r  io.ReadCloser
	mu sync.Mutex
	s  lineSplitter
}

func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.mu.Lock()
	t.s.feed(p[:n])
	if err != nil {
		t.s.flush()
	}
	t.mu.Unlock()
	return n, err
}

func (t *teeReader) Close() error { return t.r.Close() }

// teeWriter records what is written through it as Send frames.
type teeWriter struct {
	w  io.WriteCloser
	mu sync.Mutex
	s  lineSplitter
}

// Write records p, then writes it. Note: recording first keeps wire order:
// a fast server's response can otherwise be recorded before the request
// it answers. If the write fails part way, the frame holds bytes that were
// not sent; the connection is then dead and the failure is reported.
func (t *teeWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.s.feed(p)
	t.mu.Unlock()
	return t.w.Write(p)
}

func (t *teeWriter) Close() error {
	t.mu.Lock()
	t.s.flush()
	t.mu.Unlock()
	return t.w.Close()
}

// teeTransport is an http.RoundTripper that records request bodies and
// response bodies (whole JSON bodies, or each server-sent event's data) as
// frames, and refuses hosts that check rejects.
type teeTransport struct {
	base  http.RoundTripper
	rec   *Recorder
	check func(host string) error
}

func (t *teeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.check(req.URL.Hostname()); err != nil {
		return nil, err
	}
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(io.LimitReader(req.Body, MaxFrame+1))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if len(body) > MaxFrame {
			return nil, fmt.Errorf("request body over %d bytes", MaxFrame)
		}
		t.rec.add(Send, body, false, &HTTPInfo{Method: req.Method})
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	ct := resp.Header.Get("Content-Type")
	info := HTTPInfo{Method: req.Method, Status: resp.StatusCode, ContentType: mediaType(ct)}
	if info.ContentType == "text/event-stream" {
		resp.Body = &sseTee{body: resp.Body, rec: t.rec, info: info}
	} else {
		resp.Body = &bodyTee{body: resp.Body, rec: t.rec, info: info}
	}
	return resp, nil
}

func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// bodyTee records a whole response body as one frame when it has been read
// to the end or closed.
type bodyTee struct {
	body      io.ReadCloser
	rec       *Recorder
	info      HTTPInfo
	mu        sync.Mutex
	buf       []byte
	truncated bool
	done      bool
}

func (b *bodyTee) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.mu.Lock()
	if room := MaxFrame - len(b.buf); n > room {
		b.buf = append(b.buf, p[:max(room, 0)]...)
		b.truncated = true
	} else {
		b.buf = append(b.buf, p[:n]...)
	}
	if err != nil {
		b.finish()
	}
	b.mu.Unlock()
	return n, err
}

func (b *bodyTee) finish() {
	if b.done {
		return
	}
	b.done = true
	if len(bytes.TrimSpace(b.buf)) > 0 {
		info := b.info
		b.rec.add(Recv, b.buf, b.truncated, &info)
	}
}

func (b *bodyTee) Close() error {
	b.mu.Lock()
	b.finish()
	b.mu.Unlock()
	return b.body.Close()
}

// sseTee records the data of each server-sent event as one frame.
type sseTee struct {
	body      io.ReadCloser
	rec       *Recorder
	info      HTTPInfo
	mu        sync.Mutex
	line      []byte
	data      [][]byte
	event     string
	truncated bool
	cr        bool // the last byte was \r
}

func (s *sseTee) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	s.mu.Lock()
	s.feed(p[:n])
	if err != nil {
		s.endLine()
		s.dispatch()
	}
	s.mu.Unlock()
	return n, err
}

func (s *sseTee) Close() error {
	s.mu.Lock()
	s.dispatch()
	s.mu.Unlock()
	return s.body.Close()
}

// feed parses SSE lines (ended by \n, \r\n or \r) incrementally.
func (s *sseTee) feed(p []byte) {
	for _, c := range p {
		cr := s.cr
		s.cr = c == '\r'
		switch c {
		case '\n':
			if !cr {
				s.endLine()
			}
		case '\r':
			s.endLine()
		default:
			if len(s.line) < MaxFrame {
				s.line = append(s.line, c)
			} else {
				s.truncated = true
			}
		}
	}
}

func (s *sseTee) endLine() {
	line := s.line
	s.line = nil
	if len(line) == 0 {
		s.dispatch()
		return
	}
	field, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(field) {
	case "data":
		s.data = append(s.data, value)
	case "event":
		s.event = string(value)
	}
}

// dispatch records the pending event. Note: as the SSE specification says,
// an event whose data is empty is not dispatched (servers send such
// priming events to set a resumption id); it is no JSON-RPC frame.
func (s *sseTee) dispatch() {
	if len(bytes.Join(s.data, nil)) > 0 {
		info := s.info
		info.Event = s.event
		s.rec.add(Recv, bytes.Join(s.data, []byte("\n")), s.truncated, &info)
	}
	s.data, s.event, s.truncated = nil, "", false
}

// errHost marks a refused HTTP host.
var errHost = errors.New("host not allowed")
