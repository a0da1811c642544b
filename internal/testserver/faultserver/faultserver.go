// Package faultserver is a local HTTP server that injects transport faults
// for tests: HTTP errors, 429 with Retry-After, hangs, connection resets,
// truncated, malformed and very large bodies. It listens on loopback only.
package faultserver

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Fault is what the server does with one request.
type Fault struct {
	Kind       string // one of the Kind constants
	Status     int    // for KindStatus
	RetryAfter string // Retry-After header, for KindStatus
	Size       int    // body size in bytes, for KindHuge
}

// Fault kinds.
const (
	KindOK        = "ok"        // answer with the handler's body
	KindStatus    = "status"    // answer with Status (and Retry-After)
	KindHang      = "hang"      // never answer until the client gives up
	KindReset     = "reset"     // close the connection without a response
	KindTruncate  = "truncate"  // promise a longer body than is sent
	KindMalformed = "malformed" // send a body that is not JSON
	KindHuge      = "huge"      // send Size bytes of JSON string
)

// Server is a running fault server.
type Server struct {
	*httptest.Server
	mu     sync.Mutex
	script []Fault
	n      int
	stop   chan struct{}
}

// New starts a server on loopback. Request i gets script[i] (and the last
// fault repeats); KindOK requests are served by ok.
func New(ok http.Handler, script ...Fault) *Server {
	s := &Server{script: script, stop: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := s.next()
		switch f.Kind {
		case KindStatus:
			if f.RetryAfter != "" {
				w.Header().Set("Retry-After", f.RetryAfter)
			}
			http.Error(w, `{"error":"injected `+strconv.Itoa(f.Status)+`"}`, f.Status)
		case KindHang:
			select {
			case <-r.Context().Done():
			case <-s.stop:
			}
		case KindReset:
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
				}
			}
		case KindTruncate:
			w.Header().Set("Content-Length", "1000")
			w.Write([]byte(`{"message":{"content":"`))
		case KindMalformed:
			w.Write([]byte(`{"message": not json`))
		case KindHuge:
			w.Write([]byte(`{"pad":"` + strings.Repeat("x", f.Size) + `"}`))
		default:
			ok.ServeHTTP(w, r)
		}
	}))
	return s
}

func (s *Server) next() Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script) == 0 {
		return Fault{Kind: KindOK}
	}
	f := s.script[min(s.n, len(s.script)-1)]
	s.n++
	return f
}

// Requests is the number of requests served so far.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Close releases hanging handlers and stops the server.
func (s *Server) Close() {
	close(s.stop)
	s.Server.CloseClientConnections()
	s.Server.Close()
}

// ClosedPort returns host:port of a loopback port nothing listens on: a
// server that is not running (connections are refused).
func ClosedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
