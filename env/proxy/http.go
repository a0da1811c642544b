package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Handler is a streamable-HTTP reverse proxy to the MCP endpoint
// upstream (an http or https URL: every request, whatever its path, goes
// to it), applying in. hc's Transport carries the requests (nil hc, or
// nil Transport: http.DefaultTransport); its other fields are not used,
// so that no timeout cuts a stream. Everything passes unchanged
// (methods, headers, the session, GET streams) except a POST whose
// message is a tools/call the fault acts on, which the proxy answers
// itself or forwards changed, and the answer to a tools/call or
// tools/list the fault rewrites, in a JSON body or in its event of a
// text/event-stream. Each message is bounded by in.MaxMessageBytes: a
// request body over it is refused (413), an answer over it replaced by a
// JSON-RPC error, a stream cut. It guards the Host of a request that
// reached a loopback address (GuardHost).
func Handler(upstream *url.URL, hc *http.Client, in *Injector) http.Handler {
	var rt http.RoundTripper = http.DefaultTransport
	if hc != nil && hc.Transport != nil {
		rt = hc.Transport
	}
	u := *upstream
	h := &handler{in: in}
	h.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			q := pr.In.URL.RawQuery
			*pr.Out.URL = u
			if u.RawQuery == "" {
				pr.Out.URL.RawQuery = q
			}
			pr.Out.Host = ""
		},
		Transport:      rt,
		FlushInterval:  -1,
		ModifyResponse: h.modify,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "stress proxy: the upstream failed: "+err.Error(), http.StatusBadGateway)
		},
	}
	return GuardHost(h)
}

type handler struct {
	in *Injector
	rp *httputil.ReverseProxy
}

// exchangeKey keys the context value of a forwarded request's exchange.
type exchangeKey struct{}

// An exchange is a forwarded request the proxy awaits the answer of.
type exchange struct {
	id jsonrpc.ID
	rw rewrite // nil: the answer passes unchanged (but bounded)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		h.rp.ServeHTTP(w, r)
		return
	}
	limit := h.in.limit()
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		http.Error(w, "stress proxy: reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > limit {
		// Note: with the request's id (which a client writes before its
		// params) the client gets the error as the answer to its request
		// and the session goes on; without it, the status says why.
		id, ok := leadingID(body)
		status := http.StatusOK
		if !ok {
			status = http.StatusRequestEntityTooLarge
		}
		writeMessage(w, status, errorResponse(id, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("stress proxy: the request is over the proxy's bound of %d bytes per message", limit)))
		return
	}
	forward := func(body []byte, ex *exchange) {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		if ex != nil {
			r = r.WithContext(context.WithValue(r.Context(), exchangeKey{}, ex))
		}
		h.rp.ServeHTTP(w, r)
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		if h.batchTouches(body) {
			writeMessage(w, http.StatusBadRequest, errorResponse(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
				"stress proxy: a batch holding tools/call or tools/list is not relayed; send the messages one by one"))
			return
		}
		forward(body, nil) // the server answers what it is
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		forward(body, nil)
		return
	}
	fwd, reply, rw := h.in.request(req)
	if reply != nil {
		writeMessage(w, http.StatusOK, reply)
		return
	}
	if fwd != req {
		if body, err = jsonrpc.EncodeMessage(fwd); err != nil {
			writeMessage(w, http.StatusOK, errorResponse(req.ID, jsonrpc.CodeInternalError, "stress proxy: "+err.Error()))
			return
		}
	}
	forward(body, &exchange{id: req.ID, rw: rw})
}

// leadingID returns the id of the JSON-RPC request that prefix begins,
// when it comes before any member that the prefix cuts.
func leadingID(prefix []byte) (jsonrpc.ID, bool) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return jsonrpc.ID{}, false
	}
	for {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return jsonrpc.ID{}, false
		}
		if key != "id" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return jsonrpc.ID{}, false
			}
			continue
		}
		var v any
		if dec.Decode(&v) != nil {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(v)
		return id, err == nil && id.IsValid()
	}
}

// batchTouches reports whether body is a JSON array holding a request
// the injector acts on (any tools/call or tools/list).
func (h *handler) batchTouches(body []byte) bool {
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) != nil {
		return false
	}
	for _, raw := range batch {
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(raw, &m) == nil && (m.Method == "tools/call" || m.Method == "tools/list") {
			return true
		}
	}
	return false
}

// writeMessage writes one JSON-RPC message as an application/json body.
func writeMessage(w http.ResponseWriter, status int, msg jsonrpc.Message) {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		http.Error(w, "stress proxy: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// modify bounds every answer and rewrites the answer of an exchange.
func (h *handler) modify(resp *http.Response) error {
	ex, _ := resp.Request.Context().Value(exchangeKey{}).(*exchange)
	limit := h.in.limit()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.Body == nil || resp.Body == http.NoBody:
		return nil
	case mt == "text/event-stream":
		resp.Body = &eventStream{src: resp.Body, br: bufio.NewReaderSize(resp.Body, 64<<10), limit: limit, ex: ex}
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		return nil
	case mt == "application/json" && ex != nil && resp.StatusCode/100 == 2:
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
		resp.Body.Close()
		if err != nil {
			return err
		}
		if len(body) > limit {
			body = encode(tooLarge(ex.id, "server's answer", len(body), limit, jsonrpc.CodeInternalError))
		} else if ex.rw != nil {
			if m, err := jsonrpc.DecodeMessage(body); err == nil {
				if r, ok := m.(*jsonrpc.Response); ok && r.ID == ex.id {
					body = encode(ex.rw(r))
				}
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	default:
		resp.Body = &capped{src: resp.Body, left: int64(limit)}
		return nil
	}
}

func encode(msg jsonrpc.Message) []byte {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		b, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "stress proxy: " + err.Error()}})
	}
	return b
}

// errTooLarge ends a body or stream past the bound.
var errTooLarge = errors.New("stress proxy: the server's answer is over the proxy's bound per message")

// capped is a body cut after left bytes.
type capped struct {
	src  io.ReadCloser
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.src.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *capped) Close() error { return c.src.Close() }

// eventStream relays a text/event-stream event by event, each bounded,
// rewriting the event that carries the exchange's answer. An event over
// the bound is dropped and the stream ends, after an event with a
// JSON-RPC error for the exchange's request (when there is one).
type eventStream struct {
	src   io.ReadCloser
	br    *bufio.Reader
	limit int
	ex    *exchange
	out   bytes.Buffer // relayed bytes not yet read
	ev    []byte       // the current event's lines
	err   error        // the stream's end, once out is drained
}

func (s *eventStream) Read(p []byte) (int, error) {
	for s.out.Len() == 0 && s.err == nil {
		s.next()
	}
	if s.out.Len() > 0 {
		return s.out.Read(p)
	}
	return 0, s.err
}

func (s *eventStream) Close() error { return s.src.Close() }

// next reads one line and, at an event's end, relays the event.
func (s *eventStream) next() {
	line, err := s.br.ReadSlice('\n')
	for errors.Is(err, bufio.ErrBufferFull) && len(s.ev)+len(line) <= s.limit {
		s.ev = append(s.ev, line...)
		line, err = s.br.ReadSlice('\n')
	}
	if n := len(s.ev) + len(line); n > s.limit {
		s.ev = nil
		if s.ex != nil {
			s.emit(encode(tooLarge(s.ex.id, "server's answer", n, s.limit, jsonrpc.CodeInternalError)), nil)
			s.ex = nil
		}
		s.err = errTooLarge
		return
	}
	s.ev = append(s.ev, line...)
	blank := len(bytes.TrimRight(line, "\r\n")) == 0
	if blank || err != nil {
		s.flush()
	}
	if err != nil {
		s.err = err
	}
}

// flush relays the current event: as it came, or with its data replaced
// by the rewritten answer.
func (s *eventStream) flush() {
	ev := s.ev
	s.ev = nil
	if s.ex == nil || s.ex.rw == nil {
		s.out.Write(ev)
		return
	}
	var data [][]byte
	var other [][]byte
	for _, l := range bytes.SplitAfter(ev, []byte("\n")) {
		t := bytes.TrimRight(l, "\r\n")
		if d, ok := bytes.CutPrefix(t, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(d, []byte(" ")))
		} else if len(t) > 0 {
			other = append(other, l)
		}
	}
	m, err := jsonrpc.DecodeMessage(bytes.Join(data, []byte("\n")))
	r, ok := m.(*jsonrpc.Response)
	if err != nil || !ok || r.ID != s.ex.id {
		s.out.Write(ev)
		return
	}
	s.emit(encode(s.ex.rw(r)), other)
	s.ex = nil
}

// emit writes an event of data msg after the other lines (event:, id:).
func (s *eventStream) emit(msg []byte, other [][]byte) {
	for _, l := range other {
		s.out.Write(l)
	}
	if len(other) == 0 {
		s.out.WriteString("event: message\n")
	}
	s.out.WriteString("data: ")
	s.out.Write(msg)
	s.out.WriteString("\n\n")
}

// GuardHost returns h behind the DNS-rebinding protection the Go SDK's
// streamable handler gives a server on a loopback address: a request
// that reached a loopback address naming a host that is not loopback is
// refused (403). Handler applies it: it forwards with the upstream's
// Host, so the upstream's own check cannot see the client's.
func GuardHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil &&
			loopback(local.String()) && !loopback(r.Host) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopback reports whether hostport names a loopback host.
func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
