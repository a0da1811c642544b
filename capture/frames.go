package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpstress/stress/internal/input"
)

// Frame directions.
const (
	dirSend = "send" // client to server
	dirRecv = "recv" // server to client
)

// Default bounds on what a Recorder keeps (Options.MaxFrameBytes,
// MaxServerBytes and MaxNotifications; flags -max-frame-bytes,
// -max-server-bytes and -max-notifications).
const (
	// DefaultMaxFrameBytes is the most bytes recorded of one frame, 16 MiB:
	// the Go SDK's own limit on a stdio line. A longer frame is recorded
	// truncated, with the number of bytes cut (Frame.Cut).
	DefaultMaxFrameBytes = 16 << 20
	// DefaultMaxServerBytes is the most frame bytes recorded per server,
	// 64 MiB; later frames are counted and dropped (Frame.Dropped).
	DefaultMaxServerBytes = 64 << 20
	// DefaultMaxNotifications is the most messages a server sends on its
	// own (notifications, requests, anything that answers no pending
	// request) recorded per request of the client; later ones are counted
	// and dropped (Frame.Dropped).
	DefaultMaxNotifications = 1000
)

// Frame is one JSON-RPC message exactly as it crossed the wire: a stdio
// line without its newline, an HTTP request body, or the data of one
// server-sent event. A frame with Dropped set is no message but a marker:
// frames were left out at this point.
type Frame struct {
	Seq        int       `json:"seq"`                  // 1-based order of recording
	Dir        string    `json:"dir"`                  // "send" (client to server) or "recv"
	Raw        string    `json:"raw,omitempty"`        // the bytes, when they are valid UTF-8
	RawBase64  []byte    `json:"raw_base64,omitempty"` // the bytes otherwise
	Truncated  bool      `json:"truncated,omitempty"`  // the frame exceeded the frame cap: Raw holds its first bytes
	Cut        int64     `json:"cut,omitempty"`        // bytes of the frame not recorded (at least this many when Unfinished)
	Unfinished bool      `json:"unfinished,omitempty"` // the stream stopped before the frame ended
	HTTP       *HTTPInfo `json:"http,omitempty"`       // for the streamable HTTP transport
	Dropped    *Dropped  `json:"dropped,omitempty"`    // on a marker: the frames left out here

	env  frameEnv // parsed when recorded (zero for frames read back from a file)
	code wireCode // the JSON-RPC code its text quotes, once wireSurface has read it
}

// wireCode caches what wireTextCode finds in a response frame.
type wireCode struct {
	known, ok bool
	n         int
}

// Dropped says which frames a marker stands for: frames of its direction
// that were counted, not recorded, because a cap was reached.
type Dropped struct {
	Cap    string `json:"cap"`    // "max-notifications" or "max-server-bytes"
	Frames int    `json:"frames"` // how many frames
	Bytes  int64  `json:"bytes"`  // their size in bytes
}

// The caps a marker can name (Dropped.Cap): the command's flags.
const (
	capNotifications = "max-notifications" // per request of the client
	capServerBytes   = "max-server-bytes"  // per server
)

// HTTPInfo says how a frame travelled over streamable HTTP. Headers are not
// recorded: they may carry credentials.
type HTTPInfo struct {
	Method      string `json:"method"`                 // request method
	Status      int    `json:"status,omitempty"`       // response status (Recv frames)
	ContentType string `json:"content_type,omitempty"` // response media type (Recv frames)
	Event       string `json:"event,omitempty"`        // SSE event name, if any
}

// Bytes returns the frame's exact bytes (the recorded part of a truncated
// frame; none for a marker).
func (f *Frame) Bytes() []byte {
	if f.RawBase64 != nil {
		return f.RawBase64
	}
	return []byte(f.Raw)
}

// Message decodes the frame with the SDK's JSON-RPC decoder.
func (f *Frame) Message() (jsonrpc.Message, error) { return jsonrpc.DecodeMessage(f.Bytes()) }

// Kinds of frame, by their JSON-RPC envelope.
const (
	kindNone         = iota // not parsed yet
	kindRequest             // method and id
	kindNotification        // method, no id
	kindResponse            // id, no method
	kindOther               // other JSON (a batch, say)
	kindInvalid             // not JSON
)

// frameEnv is the part of a JSON-RPC message used to pair and count
// frames.
type frameEnv struct {
	kind   int
	id     string // compact JSON
	method string
}

// parseFrameEnv reads a frame's envelope; short says the frame was cut
// short (see prefixEnv). Note: it decodes only id and method, so a large
// result is scanned, not copied.
func parseFrameEnv(raw []byte, short bool) frameEnv {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		switch {
		case json.Valid(raw):
			return frameEnv{kind: kindOther}
		case short:
			return prefixEnv(raw)
		}
		return frameEnv{kind: kindInvalid}
	}
	e := frameEnv{}
	if m.Method != nil {
		e.method = *m.Method
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	if hasID {
		e.id = string(compact(m.ID))
	}
	switch {
	case m.Method != nil && hasID:
		e.kind = kindRequest
	case m.Method != nil:
		e.kind = kindNotification
	case hasID:
		e.kind = kindResponse
	default:
		e.kind = kindOther
	}
	return e
}

// prefixEnv reads the envelope of a frame that was cut short, from the
// members that precede the cut: a frame with an id and no method seen is
// taken for a response. It returns kindInvalid when the id is not there.
func prefixEnv(raw []byte) frameEnv {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return frameEnv{kind: kindInvalid}
	}
	var id json.RawMessage
	method, hasMethod := "", false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := t.(string)
		switch key {
		case "id":
			err = dec.Decode(&id)
		case "method":
			hasMethod, err = true, dec.Decode(&method)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			break
		}
	}
	switch {
	case len(id) == 0 || string(id) == "null":
		return frameEnv{kind: kindInvalid}
	case hasMethod:
		return frameEnv{kind: kindRequest, id: string(compact(id)), method: method}
	}
	return frameEnv{kind: kindResponse, id: string(compact(id))}
}

// header returns the frame's envelope, parsing it if it was not.
func (f *Frame) header() frameEnv {
	if f.env.kind == kindNone {
		if f.Dropped != nil {
			return frameEnv{kind: kindOther}
		}
		return parseFrameEnv(f.Bytes(), f.Truncated || f.Unfinished)
	}
	return f.env
}

// FrameStats counts what a Recorder kept and what it left out.
type FrameStats struct {
	Frames     int   // frames recorded (markers not counted)
	Bytes      int64 // bytes recorded
	Truncated  int   // frames recorded truncated (over the frame cap)
	Unfinished int   // frames the stream stopped in
	CutBytes   int64 // bytes cut from truncated frames
	// DroppedNotifications counts the messages the server sent on its own
	// past the per-request cap, and the client's replies to them.
	DroppedNotifications int
	// DroppedOverBytes counts the frames past the per-server byte cap.
	DroppedOverBytes int
	DroppedBytes     int64 // bytes of all dropped frames
	// UnknownIDs counts responses whose id no request of the client had.
	UnknownIDs int
}

// Recorder keeps the frames of one connection in wire order, within its
// caps. It is safe for concurrent use; the zero value has the default
// caps.
type Recorder struct {
	maxFrame         int
	maxServer        int64
	maxNotifications int

	mu      sync.Mutex
	frames  []Frame
	stats   FrameStats
	window  int             // messages the server sent on its own since the client's last request
	open    map[markKey]int // index of the marker still counting, per cap and direction
	sent    map[string]int  // ids of the client's requests: pending or answered
	unknown []unknownID     // the first responses with an id no request had
	nonJSON string          // the first received frame that is not JSON, quoted
	changed chan struct{}   // closed when a frame is recorded
}

type markKey struct{ cap, dir string }

// unknownID is a response whose id no request had; at is the number of
// frames recorded before it.
type unknownID struct {
	at int
	id string
}

// States of a request id (Recorder.sent).
const (
	pending  = 1
	answered = 2
)

// maxUnknown bounds the responses with an unknown id a Recorder remembers.
const maxUnknown = 4

// newRecorder returns a recorder with the given caps (zero or less: the
// default).
func newRecorder(maxFrame int, maxServer int64, maxNotifications int) *Recorder {
	return &Recorder{maxFrame: maxFrame, maxServer: maxServer, maxNotifications: maxNotifications}
}

func (r *Recorder) frameCap() int {
	if r == nil {
		return DefaultMaxFrameBytes
	}
	return orDefault(r.maxFrame, DefaultMaxFrameBytes)
}

func (r *Recorder) serverCap() int64 { return orDefault(r.maxServer, DefaultMaxServerBytes) }
func (r *Recorder) notificationCap() int {
	return orDefault(r.maxNotifications, DefaultMaxNotifications)
}

// add records one frame, or counts it under a marker when a cap is
// reached. raw is copied; cut is the number of bytes of the frame that
// were not kept; unfinished says the stream stopped inside the frame.
//
// Note: what the server sends on its own is whatever answers no pending
// request of the client: notifications, requests, and responses with an
// unknown or already answered id, batches and non-JSON lines. The client's
// replies to the server's requests are dropped with them.
func (r *Recorder) add(dir string, raw []byte, cut int64, unfinished bool, h *HTTPInfo) {
	env := parseFrameEnv(raw, cut > 0 || unfinished)
	size := int64(len(raw)) + cut
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sent == nil {
		r.sent = map[string]int{}
	}
	own := false // sent by the server on its own
	switch {
	case dir == dirSend && env.kind == kindRequest:
		// A request of the client opens a new window for the server's own
		// messages.
		r.sent[env.id] = pending
		r.window = 0
		delete(r.open, markKey{capNotifications, dirSend})
		delete(r.open, markKey{capNotifications, dirRecv})
	case dir == dirRecv && env.kind == kindResponse && r.sent[env.id] == pending:
		r.sent[env.id] = answered
	case dir == dirRecv:
		own = true
		if env.kind == kindResponse && r.sent[env.id] == 0 {
			r.stats.UnknownIDs++
			if len(r.unknown) < maxUnknown {
				r.unknown = append(r.unknown, unknownID{len(r.frames), env.id})
			}
		}
		if env.kind == kindInvalid && cut == 0 && !unfinished && r.nonJSON == "" {
			what := "line"
			if h != nil {
				what = "message"
			}
			r.nonJSON = fmt.Sprintf("server wrote a non-JSON %s: %s", what, input.Quote(string(raw)))
		}
	}
	if own {
		r.window++
	}
	if (own || dir == dirSend && env.kind == kindResponse) && r.window > r.notificationCap() {
		r.drop(capNotifications, dir, size)
		r.stats.DroppedNotifications++
		return
	}
	if r.stats.Bytes+int64(len(raw)) > r.serverCap() {
		r.drop(capServerBytes, dir, size)
		r.stats.DroppedOverBytes++
		return
	}
	f := Frame{Seq: len(r.frames) + 1, Dir: dir, Truncated: cut > 0, Cut: cut, Unfinished: unfinished, HTTP: h, env: env}
	if utf8.Valid(raw) {
		f.Raw = string(raw)
	} else {
		f.RawBase64 = bytes.Clone(raw)
	}
	r.frames = append(r.frames, f)
	r.stats.Frames++
	r.stats.Bytes += int64(len(raw))
	if cut > 0 {
		r.stats.Truncated++
		r.stats.CutBytes += cut
	}
	if unfinished {
		r.stats.Unfinished++
	}
	// A recorded frame ends every marker: later drops get a marker after it.
	clear(r.open)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// drop counts a frame under the open marker of its cap and direction,
// adding the marker first if there is none. r.mu is held.
func (r *Recorder) drop(cap, dir string, size int64) {
	k := markKey{cap, dir}
	i, ok := r.open[k]
	if !ok {
		i = len(r.frames)
		r.frames = append(r.frames, Frame{Seq: i + 1, Dir: dir, Dropped: &Dropped{Cap: cap}})
		if r.open == nil {
			r.open = map[markKey]int{}
		}
		r.open[k] = i
	}
	r.frames[i].Dropped.Frames++
	r.frames[i].Dropped.Bytes += size
	r.stats.DroppedBytes += size
}

// Frames returns a copy of the frames recorded so far, markers included.
func (r *Recorder) Frames() []Frame {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]Frame(nil), r.frames...)
	for i := range out {
		if d := out[i].Dropped; d != nil {
			c := *d
			out[i].Dropped = &c
		}
	}
	return out
}

// Len returns the number of frames recorded so far, markers included.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.frames)
}

// Stats returns the counts so far.
func (r *Recorder) Stats() FrameStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Exchange finds, among the frames recorded from index since on, the last
// request sent with the given method and the response received to it.
// Either may be nil when it was not seen.
func (r *Recorder) Exchange(since int, method string) (req, resp *Frame) {
	r.mu.Lock()
	defer r.mu.Unlock()
	since = min(max(since, 0), len(r.frames))
	id := ""
	for i := len(r.frames) - 1; i >= since; i-- {
		f := &r.frames[i]
		if e := f.header(); f.Dir == dirSend && e.kind == kindRequest && e.method == method {
			c := *f
			req, id = &c, e.id
			break
		}
	}
	if req == nil {
		return nil, nil
	}
	for i := since; i < len(r.frames); i++ {
		f := &r.frames[i]
		if e := f.header(); f.Dir == dirRecv && e.kind == kindResponse && e.id == id {
			c := *f
			return req, &c
		}
	}
	return req, nil
}

// AwaitExchange is Exchange, waiting up to d for the response frame; it
// returns as soon as the frame is recorded.
// Note: the SDK can act on a response as soon as its JSON value is
// complete, while the recorder ends a stdio frame at the newline that
// follows, which may arrive in a later read. Call it only when the SDK
// has a response: after a timeout there is none to wait for.
func (r *Recorder) AwaitExchange(since int, method string, d time.Duration) (req, resp *Frame) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		r.mu.Lock()
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ch := r.changed
		r.mu.Unlock()
		if req, resp = r.Exchange(since, method); resp != nil {
			return req, resp
		}
		select {
		case <-ch:
		case <-t.C:
			return r.Exchange(since, method)
		}
	}
}

// explain names what the frames show went wrong on the connection: the
// first received frame that is not JSON (the SDK stops reading there), and
// responses whose id no request had, received after the first since frames
// were recorded.
func (r *Recorder) explain(since int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	if r.nonJSON != "" {
		out = append(out, r.nonJSON)
	}
	for _, u := range r.unknown {
		if u.at >= since {
			out = append(out, fmt.Sprintf("server answered id %s, which no request has", input.Quote(u.id)))
		}
	}
	return out
}

// RequestID returns the id of a request frame (or of the response to it)
// as it is on the wire, compacted; nil when it has none.
func (f *Frame) RequestID() json.RawMessage {
	if id := f.header().id; id != "" {
		return json.RawMessage(id)
	}
	return nil
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

// appendCapped appends p to buf, keeping buf within limit bytes, and adds
// the bytes left out to *cut.
func appendCapped(buf, p []byte, limit int, cut *int64) []byte {
	room := max(limit-len(buf), 0)
	if len(p) > room {
		*cut += int64(len(p) - room)
		p = p[:room]
	}
	return append(buf, p...)
}

// lineSplitter turns a byte stream into newline-delimited frames, keeping
// at most the recorder's frame cap of each.
type lineSplitter struct {
	rec *Recorder
	dir string
	buf []byte
	cut int64 // bytes of the pending line past the cap
}

func (s *lineSplitter) feed(p []byte) {
	limit := s.rec.frameCap()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		s.buf = appendCapped(s.buf, chunk, limit, &s.cut)
		if i < 0 {
			return
		}
		s.flush(false)
		p = p[i+1:]
	}
}

// flush records a pending line; unfinished says the stream stopped before
// its newline. Note: blank lines between frames are not frames and are not
// recorded.
func (s *lineSplitter) flush(unfinished bool) {
	if len(bytes.TrimSpace(s.buf)) > 0 || s.cut > 0 {
		s.rec.add(s.dir, s.buf, s.cut, unfinished, nil)
	}
	s.buf, s.cut = s.buf[:0], 0
	if cap(s.buf) > 1<<20 {
		s.buf = nil // do not keep a large frame's buffer
	}
}

// stdoutPump reads a stdio server's stdout, records every line, and hands
// the bytes on to the SDK, which reads them through it. When the SDK has
// closed its side (or stopped reading and the session was closed), the
// pump goes on reading and recording until the server closes its stdout,
// so that a frame the SDK gave up on is recorded with its real length and
// the server is not left blocked on a full pipe.
type stdoutPump struct {
	src  io.ReadCloser
	pr   *io.PipeReader // the SDK's side
	pw   *io.PipeWriter
	s    lineSplitter
	done chan struct{} // closed when src is exhausted and the last frame recorded
	// first says which came first: the server giving up its side (its
	// stdout ended, or a write to its stdin failed: firstServer) or the
	// client closing the server's stdin (firstClient); see conn.explain.
	mu    sync.Mutex
	first int
}

// Who a stdoutPump saw end the connection first.
const (
	firstServer = 1
	firstClient = 2
)

func (p *stdoutPump) mark(what int) {
	p.mu.Lock()
	if p.first == 0 {
		p.first = what
	}
	p.mu.Unlock()
}

func newStdoutPump(src io.ReadCloser, rec *Recorder) *stdoutPump {
	pr, pw := io.Pipe()
	p := &stdoutPump{src: src, pr: pr, pw: pw, s: lineSplitter{rec: rec, dir: dirRecv}, done: make(chan struct{})}
	go p.run()
	return p
}

// endedFirst reports whether the server gave up its side of the
// connection (closed its stdout, or stopped reading its stdin) before the
// client closed its stdin: it exited on its own.
func (p *stdoutPump) endedFirst() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.first == firstServer
}

func (p *stdoutPump) run() {
	defer close(p.done)
	buf := make([]byte, 64<<10)
	toSDK := true
	for {
		n, err := p.src.Read(buf)
		if n > 0 {
			// Note: recording before the SDK sees the bytes keeps wire
			// order and lets a response frame be found as soon as the SDK
			// has it.
			p.s.feed(buf[:n])
			if toSDK {
				if _, werr := p.pw.Write(buf[:n]); werr != nil {
					toSDK = false // the SDK closed its side: drain
				}
			}
		}
		if err != nil {
			p.mark(firstServer)
			p.s.flush(true)
			if errors.Is(err, os.ErrClosed) {
				err = io.EOF
			}
			p.pw.CloseWithError(err)
			return
		}
	}
}

// Read is the SDK's read.
func (p *stdoutPump) Read(b []byte) (int, error) { return p.pr.Read(b) }

// Close is the SDK's close: it stops handing bytes to the SDK; the pump
// drains on.
func (p *stdoutPump) Close() error { return p.pr.Close() }

// finish stops handing bytes to the SDK (if it has not closed its side),
// waits up to d for the server's stdout to close, then closes it (a
// process the group signal missed may hold it), and returns once the last
// frame is recorded.
func (p *stdoutPump) finish(d time.Duration) {
	p.pr.Close()
	if !within(p.done, d) {
		p.src.Close()
		<-p.done
	}
}

// TeeWriter returns w recording, before writing them, the lines written
// through it as Send frames of r (a stdio client's stdin).
func (r *Recorder) TeeWriter(w io.WriteCloser) io.WriteCloser {
	return &teeWriter{w: w, s: lineSplitter{rec: r, dir: dirSend}}
}

// TeeReader returns rd recording the lines read through it as Recv frames
// of r (a stdio client's view of the server's stdout); a line still
// pending when rd ends is recorded as unfinished. Close closes rd.
func (r *Recorder) TeeReader(rd io.ReadCloser) io.ReadCloser {
	return &teeReader{r: rd, s: lineSplitter{rec: r, dir: dirRecv}}
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
		t.s.flush(true)
	}
	t.mu.Unlock()
	return n, err
}

func (t *teeReader) Close() error { return t.r.Close() }

// teeWriter records what is written through it as Send frames.
type teeWriter struct {
	w        io.WriteCloser
	mu       sync.Mutex
	s        lineSplitter
	onClose  func() // called first in Close, if set
	onBroken func() // called when a write fails, if set
}

// Write records p, then writes it. Note: recording first keeps wire order:
// a fast server's response can otherwise be recorded before the request
// it answers. If the write fails part way, the frame holds bytes that were
// not sent; the connection is then dead and the failure is reported.
func (t *teeWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.s.feed(p)
	t.mu.Unlock()
	n, err := t.w.Write(p)
	if err != nil && t.onBroken != nil {
		t.onBroken()
	}
	return n, err
}

func (t *teeWriter) Close() error {
	if t.onClose != nil {
		t.onClose()
	}
	t.mu.Lock()
	t.s.flush(true)
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
		// Note: the body is the client's own request, read whole; only
		// its recording is capped.
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		kept := body[:min(len(body), t.rec.frameCap())]
		t.rec.add(dirSend, kept, int64(len(body)-len(kept)), false, &HTTPInfo{Method: req.Method})
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
// to the end or closed, keeping at most the frame cap.
type bodyTee struct {
	body io.ReadCloser
	rec  *Recorder
	info HTTPInfo
	mu   sync.Mutex
	buf  []byte
	cut  int64
	done bool
}

func (b *bodyTee) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.mu.Lock()
	b.buf = appendCapped(b.buf, p[:n], b.rec.frameCap(), &b.cut)
	if err != nil {
		b.finish(err != io.EOF)
	}
	b.mu.Unlock()
	return n, err
}

// finish records the body; unfinished says it was not read to its end.
func (b *bodyTee) finish(unfinished bool) {
	if b.done {
		return
	}
	b.done = true
	if len(bytes.TrimSpace(b.buf)) > 0 || b.cut > 0 {
		info := b.info
		b.rec.add(dirRecv, b.buf, b.cut, unfinished, &info)
	}
	b.buf = nil
}

func (b *bodyTee) Close() error {
	b.mu.Lock()
	b.finish(true)
	b.mu.Unlock()
	return b.body.Close()
}

// sseTee records the data of each server-sent event as one frame, keeping
// at most the frame cap of it.
type sseTee struct {
	body io.ReadCloser
	rec  *Recorder
	info HTTPInfo
	mu   sync.Mutex
	line []byte
	data []byte // the event's data lines so far, joined by \n
	// lines counts the event's data lines, size their bytes (without the
	// joining newlines); cut is the bytes past the cap.
	lines, size int
	cut         int64
	event       string
	cr          bool // the last byte was \r
}

func (s *sseTee) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	s.mu.Lock()
	s.feed(p[:n])
	if err != nil {
		// Note: an event still pending at the end of the stream had no
		// blank line after it: the stream stopped inside it.
		s.endLine()
		s.dispatch(true)
	}
	s.mu.Unlock()
	return n, err
}

func (s *sseTee) Close() error {
	s.mu.Lock()
	s.dispatch(len(s.line) > 0)
	s.mu.Unlock()
	return s.body.Close()
}

// feed parses SSE lines (ended by \n, \r\n or \r) incrementally.
func (s *sseTee) feed(p []byte) {
	limit := s.rec.frameCap()
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
			// Note: a data line longer than the cap cannot fit in the
			// frame either; a field name is short.
			s.line = appendCapped(s.line, []byte{c}, limit+len("data: "), &s.cut)
		}
	}
}

func (s *sseTee) endLine() {
	line := s.line
	s.line = s.line[:0]
	if len(line) == 0 {
		s.dispatch(false)
		return
	}
	field, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(field) {
	case "data":
		if s.lines > 0 {
			value = append([]byte{'\n'}, value...)
		}
		s.lines++
		s.size += len(bytes.TrimPrefix(value, []byte{'\n'}))
		s.data = appendCapped(s.data, value, s.rec.frameCap(), &s.cut)
	case "event":
		s.event = string(value)
	}
	if cap(s.line) > 1<<20 {
		s.line = nil
	}
}

// dispatch records the pending event; unfinished says the stream stopped
// inside it. Note: as the SSE specification says, an event whose data is
// empty is not dispatched (servers send such priming events to set a
// resumption id); it is no JSON-RPC frame.
func (s *sseTee) dispatch(unfinished bool) {
	if s.size > 0 || s.cut > 0 {
		info := s.info
		info.Event = s.event
		s.rec.add(dirRecv, s.data, s.cut, unfinished, &info)
	}
	s.data, s.lines, s.size, s.cut, s.event = nil, 0, 0, 0, ""
}

// errHost marks a refused HTTP host.
var errHost = errors.New("host not allowed")
