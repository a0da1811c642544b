package capture

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// ErrResponseTooLarge is the error a capped HTTP response's body returns
// once a JSON body, or one server-sent event of a stream, goes past its
// cap: the Go SDK's stdio transport refuses a frame past its line cap the
// same way, so an HTTP server cannot make a client hold more than a
// stdio one.
var ErrResponseTooLarge = errors.New("the server's HTTP answer is larger than the frame cap")

// CapResponses returns base (http.DefaultTransport when nil) with every
// response body capped at limit bytes (an MCP message: a whole JSON body,
// or each event of a text/event-stream, counted from the blank line that
// ends the previous one): past it, reading the body fails with
// ErrResponseTooLarge, naming the cap, and the body is closed. The bytes
// before the cut are read as they came, so a recorder sees the frame cut,
// as a stdio frame past the cap is.
func CapResponses(base http.RoundTripper, limit int) *CapTransport {
	if base == nil {
		base = http.DefaultTransport
	}
	return &CapTransport{base: base, limit: limit}
}

// CapTransport is an http.RoundTripper whose response bodies are capped
// (CapResponses).
type CapTransport struct {
	base  http.RoundTripper
	limit int
	cuts  atomic.Int64
}

// RoundTrip sends req with base and caps the response's body.
func (t *CapTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &cappedBody{body: resp.Body, limit: t.limit, sse: mediaType(resp.Header.Get("Content-Type")) == "text/event-stream", cuts: &t.cuts}
	return resp, nil
}

// Cuts returns how many answers were cut so far (0 for a nil t: a stdio
// connection, which the SDK caps itself); take it before a call, and
// hand it to Explain after.
func (t *CapTransport) Cuts() int64 {
	if t == nil {
		return 0
	}
	return t.cuts.Load()
}

// Explain returns err, the error of a call made when Cuts was before,
// saying that the cap ended the answer when an answer was cut since:
// the SDK reports a cut event stream only as a request without
// response. A nil err, or a nil t, is returned as it is.
func (t *CapTransport) Explain(err error, before int64) error {
	if err == nil || t.Cuts() == before || errors.Is(err, ErrResponseTooLarge) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, cutError(t.limit))
}

func cutError(limit int) error {
	return fmt.Errorf("%w (%d bytes): the rest was not read", ErrResponseTooLarge, limit)
}

// cappedBody counts the bytes of the current message (the whole body, or
// the current event of a stream) and fails past the limit.
type cappedBody struct {
	body   io.ReadCloser
	limit  int
	sse    bool
	count  int  // bytes of the current message
	lineNL bool // sse: the last byte read ended a line (an empty line next ends the event)
	err    error
	cuts   *atomic.Int64 // the transport's count of cut answers
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if room := b.limit - b.count; len(p) > room {
		if room <= 0 {
			b.err = cutError(b.limit)
			b.cuts.Add(1)
			b.body.Close()
			return 0, b.err
		}
		p = p[:room]
	}
	n, err := b.body.Read(p)
	if !b.sse {
		b.count += n
		return n, err
	}
	for rest := p[:n]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			b.count += len(rest)
			if len(bytes.Trim(rest, "\r")) > 0 {
				b.lineNL = false
			}
			break
		}
		line := bytes.TrimSuffix(rest[:i], []byte("\r"))
		if len(line) == 0 && b.lineNL {
			b.count = 0 // a blank line: the event ended
		} else {
			b.count += i + 1
		}
		b.lineNL = true
		rest = rest[i+1:]
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.body.Close() }
