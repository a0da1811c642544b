// Package mcpstdio is an MCP transport for the Go SDK's server over stdio:
// newline-delimited JSON-RPC 2.0 read from one stream and written to
// another. Unlike the SDK's IOTransport it answers every request read before
// its input ends, answers a malformed frame with a JSON-RPC error and reads
// on, and sends nothing for a request the client cancelled.
//
// Frames are checked here, before the SDK sees them (JSON-RPC 2.0, section
// 5.1, and MCP's base protocol):
//
//   - a line that is not UTF-8 or not JSON: -32700 Parse error, id null;
//   - a JSON value that is not a request: -32600 Invalid Request, with the
//     request's id if it has a valid one, else id null. That is a batch
//     (an array; MCP 2025-06-18 removed batching), a scalar, a "jsonrpc"
//     other than "2.0", an id that is not a string or an integer (MCP
//     forbids null; integers beyond ±(2^53-1) would not survive the SDK's
//     float64), a missing or non-string "method", scalar "params", an id
//     still in use by an unanswered request, a line over MaxLineBytes.
//
// A response from the client (no "method", a "result" or an "error") goes
// to the SDK; a malformed one is dropped, since answering a response could
// start two peers replying to each other forever. A blank line is skipped.
package mcpstdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultMaxLineBytes is the longest frame read when Transport.MaxLineBytes
// is 0: 16 MiB, the Go SDK's default.
const defaultMaxLineBytes = 16 << 20

// maxSafeID is the largest integer id accepted, 2^53-1: the SDK decodes ids
// as float64, which holds every integer up to it exactly.
const maxSafeID = 1<<53 - 1

// Transport is an mcp.Transport over newline-delimited JSON-RPC on Reader
// and Writer, for one call to (*mcp.Server).Run or Connect.
type Transport struct {
	Reader io.Reader // the client's frames, one a line ("\n" or "\r\n")
	Writer io.Writer // the server's frames, one a line

	// MaxLineBytes is the longest frame read, in bytes without the line
	// end; a longer one is skipped and answered -32600. 0 or less means
	// 16 MiB.
	MaxLineBytes int

	// OnInputEnd, if set, is called once when Reader ends (EOF or a read
	// error), before the connection waits for the answers still due: the
	// place to release work that only the client could have released.
	OnInputEnd func()
}

var _ mcp.Transport = (*Transport)(nil)

// Connect starts reading Reader and returns the connection. Closing the
// connection closes neither Reader nor Writer; a read blocked in Reader
// stays blocked until it returns.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	if t.Reader == nil || t.Writer == nil {
		return nil, errors.New("mcpstdio: the transport needs a Reader and a Writer")
	}
	limit := t.MaxLineBytes
	if limit <= 0 {
		limit = defaultMaxLineBytes
	}
	c := &conn{
		w:        t.Writer,
		incoming: make(chan jsonrpc.Message),
		ended:    make(chan struct{}),
		closed:   make(chan struct{}),
		changed:  make(chan struct{}, 1),
		pending:  map[jsonrpc.ID]*call{},
	}
	go c.readLoop(t.Reader, limit, t.OnInputEnd)
	return c, nil
}

// call is a request forwarded to the SDK and not yet answered.
type call struct {
	method    string
	cancelled bool // by notifications/cancelled: its answer is not sent
}

// conn is the mcp.Connection of a Transport.
type conn struct {
	writeMu sync.Mutex // one frame a line
	w       io.Writer

	incoming chan jsonrpc.Message // well-formed frames, from readLoop to Read
	ended    chan struct{}        // closed when readLoop has returned
	readErr  error                // why the input ended; set before ended is closed

	closeOnce sync.Once
	closed    chan struct{}

	changed chan struct{} // signalled when an answer is sent or a write fails

	mu          sync.Mutex
	pending     map[jsonrpc.ID]*call // forwarded requests not yet answered
	initialized bool                 // an initialize request was answered with a result
	broken      bool                 // a write to w failed
}

// SessionID returns "": a stdio connection is its own session.
func (c *conn) SessionID() string { return "" }

// Read returns the next well-formed frame. Once the input has ended it
// returns its error (io.EOF) only when every request read has been
// answered or cancelled, or a write has failed.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.incoming:
		return m, nil
	case <-c.ended:
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Note: the SDK drops every request in flight when Read fails, so the
	// end of the input is reported only once nothing is due.
	for c.due() > 0 {
		select {
		case <-c.changed:
		case <-c.closed:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, c.readErr
}

// due returns how many requests read still wait for an answer that will be
// sent (0 once a write has failed).
func (c *conn) due() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken {
		return 0
	}
	n := 0
	for _, p := range c.pending {
		if !p.cancelled {
			n++
		}
	}
	return n
}

// Write sends msg. An answer to a cancelled request is dropped. An error
// answer without a JSON-RPC code (the SDK would send code 0) gets one.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.send(msg)
	}
	c.mu.Lock()
	p := c.pending[resp.ID]
	initialized := c.initialized
	c.mu.Unlock()
	if p != nil && p.cancelled {
		// Note: MCP (cancellation): the receiver of a cancelled request
		// should not send a response for it.
		c.answered(resp.ID, false)
		return nil
	}
	var we *jsonrpc.Error
	if resp.Error != nil && !errors.As(resp.Error, &we) {
		// Note: the SDK refuses a call made before initialize with a plain
		// error ("method %q is invalid during session initialization"),
		// code 0 on the wire. MCP defines no code for it: before the
		// session is initialized the request is invalid in that state,
		// -32600 (LSP's -32002, ServerNotInitialized, is MCP's "resource
		// not found"); after, a plain error is the server's, -32603.
		code := int64(jsonrpc.CodeInternalError)
		if !initialized {
			code = jsonrpc.CodeInvalidRequest
		}
		r := *resp
		r.Error = &jsonrpc.Error{Code: code, Message: resp.Error.Error()}
		resp = &r
	}
	err := c.send(resp)
	if p != nil {
		c.answered(resp.ID, p.method == "initialize" && resp.Error == nil)
	}
	return err
}

// answered forgets the request id and wakes a Read waiting at the end of
// the input.
func (c *conn) answered(id jsonrpc.ID, initialize bool) {
	c.mu.Lock()
	delete(c.pending, id)
	if initialize {
		c.initialized = true
	}
	c.mu.Unlock()
	c.signal()
}

// signal wakes a Read waiting for the answers due.
func (c *conn) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Close ends the connection: a Read returns io.EOF.
func (c *conn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// send writes msg as one line.
func (c *conn) send(msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcpstdio: %w", err)
	}
	return c.writeLine(data)
}

// errorReply is an error response the transport sends itself: unlike
// jsonrpc.Response it can carry "id": null, which JSON-RPC requires when
// the request's id could not be read.
type errorReply struct {
	Version string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *jsonrpc.Error  `json:"error"`
}

// reply sends an error response to a frame the SDK will not see; id is
// the frame's id as it was sent, or nil for null.
func (c *conn) reply(id json.RawMessage, code int64, format string, args ...any) {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, err := json.Marshal(errorReply{"2.0", id, &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}})
	if err != nil {
		return // unreachable: id is valid JSON
	}
	_ = c.writeLine(data) // a failed write marks the connection broken
}

// writeLine writes data and a newline; after a failed write every write
// fails.
func (c *conn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	broken := c.broken
	c.mu.Unlock()
	if broken {
		return errors.New("mcpstdio: an earlier write failed")
	}
	_, err := c.w.Write(append(data, '\n'))
	if err != nil {
		c.mu.Lock()
		c.broken = true
		c.mu.Unlock()
		c.signal()
		return fmt.Errorf("mcpstdio: writing a frame: %w", err)
	}
	return nil
}

// readLoop reads r a line at a time, answers malformed frames and hands
// the others to Read, until r ends or the connection is closed.
func (c *conn) readLoop(r io.Reader, limit int, onEnd func()) {
	defer close(c.ended)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, err := readLine(br, limit)
		var msg jsonrpc.Message
		switch {
		case tooLong:
			c.reply(nil, jsonrpc.CodeInvalidRequest, "invalid request: a frame longer than %d bytes", limit)
		case len(bytes.TrimSpace(line)) > 0:
			msg = c.frame(line)
		}
		if msg != nil {
			select {
			case c.incoming <- msg:
			case <-c.closed:
				c.readErr = io.EOF
				return
			}
		}
		if err != nil {
			if onEnd != nil {
				onEnd()
			}
			c.readErr = err
			return
		}
	}
}

// readLine reads one line without its "\n" or "\r\n". A line longer than
// limit bytes is read to its end and dropped (tooLong). err is the read
// error that ended the line (io.EOF at the end of the input).
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, rerr := br.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > limit+2 {
				line, tooLong = nil, true
			}
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > limit {
			line, tooLong = nil, true
		}
		return line, tooLong, rerr
	}
}

// frame checks one line and returns it as the SDK's message, or nil after
// answering (or dropping) it.
func (c *conn) frame(line []byte) jsonrpc.Message {
	if !utf8.Valid(line) {
		c.reply(nil, jsonrpc.CodeParseError, "parse error: the frame is not valid UTF-8")
		return nil
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(line, &f); err != nil {
		if !json.Valid(line) {
			c.reply(nil, jsonrpc.CodeParseError, "parse error: %v", err)
			return nil
		}
		if kind(line) == "an array" {
			c.reply(nil, jsonrpc.CodeInvalidRequest, "invalid request: a batch (an array); MCP removed batching in 2025-06-18: send one request a line")
			return nil
		}
		c.reply(nil, jsonrpc.CodeInvalidRequest, "invalid request: %s, not a request object", kind(line))
		return nil
	}
	if f == nil {
		c.reply(nil, jsonrpc.CodeInvalidRequest, "invalid request: null, not a request object")
		return nil
	}
	_, hasMethod := f["method"]
	_, hasResult := f["result"]
	_, hasError := f["error"]
	if !hasMethod && (hasResult || hasError) {
		return response(f)
	}
	return c.request(f)
}

// request checks a frame that is not a response and returns it as a
// request, or nil after answering -32600.
func (c *conn) request(f map[string]json.RawMessage) jsonrpc.Message {
	rawID, hasID := f["id"]
	id, idOK := parseID(rawID)
	var echo json.RawMessage // the id to answer with: null unless valid
	if hasID && idOK {
		echo = rawID
	}
	invalid := func(format string, args ...any) jsonrpc.Message {
		c.reply(echo, jsonrpc.CodeInvalidRequest, "invalid request: "+format, args...)
		return nil
	}
	if !isString(f["jsonrpc"], "2.0") {
		return invalid(`"jsonrpc" must be "2.0"`)
	}
	if hasID && !idOK {
		return invalid(`"id" must be a string or an integer (at most 2^53-1 in magnitude), not %s`, kind(rawID))
	}
	rawMethod, ok := f["method"]
	if !ok {
		return invalid(`no "method"`)
	}
	var method string
	if kind(rawMethod) != "a string" || json.Unmarshal(rawMethod, &method) != nil {
		return invalid(`"method" must be a string, not %s`, kind(rawMethod))
	}
	params := f["params"]
	switch k := kind(params); k {
	case "null":
		params = nil
	case "", "an object", "an array":
	default:
		return invalid(`"params" must be an object, not %s`, k)
	}
	req := &jsonrpc.Request{ID: id, Method: method, Params: params}
	if !hasID {
		if method == "notifications/cancelled" {
			c.cancel(params)
		}
		return req
	}
	c.mu.Lock()
	_, inUse := c.pending[id]
	if !inUse {
		c.pending[id] = &call{method: method}
	}
	c.mu.Unlock()
	if inUse {
		// Note: id null, not the id: an answer with it would look like the
		// answer to the request that holds it.
		c.reply(nil, jsonrpc.CodeInvalidRequest, "invalid request: id %s is in use by a request not yet answered", rawID)
		return nil
	}
	return req
}

// cancel marks the request that the params of notifications/cancelled
// name as cancelled. Malformed params are left to the SDK.
func (c *conn) cancel(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, ok := parseID(p.RequestID)
	if !ok {
		return
	}
	c.mu.Lock()
	if r := c.pending[id]; r != nil {
		r.cancelled = true
	}
	c.mu.Unlock()
	c.signal()
}

// response returns a response frame as the SDK's message, or nil for a
// malformed one.
func response(f map[string]json.RawMessage) jsonrpc.Message {
	id, ok := parseID(f["id"])
	result, hasResult := f["result"]
	rawErr, hasError := f["error"]
	if !ok || !isString(f["jsonrpc"], "2.0") || hasResult == hasError {
		return nil
	}
	resp := &jsonrpc.Response{ID: id, Result: result}
	if hasError {
		var e jsonrpc.Error
		if kind(rawErr) != "an object" || json.Unmarshal(rawErr, &e) != nil {
			return nil
		}
		resp.Error = &e
	}
	return resp
}

// parseID returns a request id: a string, or an integer of at most 2^53-1
// in magnitude.
func parseID(raw json.RawMessage) (jsonrpc.ID, bool) {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return jsonrpc.ID{}, false
	}
	switch x := v.(type) {
	case string:
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > maxSafeID {
			return jsonrpc.ID{}, false
		}
	default:
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil
}

// isString reports whether raw is the JSON string want.
func isString(raw json.RawMessage, want string) bool {
	var s string
	return kind(raw) == "a string" && json.Unmarshal(raw, &s) == nil && s == want
}

// kind names the JSON type of raw, with its article ("" if absent).
func kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
