package lab

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/study"
)

// protocolHeader is the HTTP header naming a request's MCP version.
const protocolHeader = "Mcp-Protocol-Version"

// NewHTTPHandler returns the streamable HTTP handler that serves srv (a
// NewServer) at any path it is mounted on, for every version the Go SDK
// speaks:
//
//   - a request whose Mcp-Protocol-Version header names 2026-07-28 or later
//     goes to a stateless handler, the only one on which the SDK offers that
//     revision (its HTTP binding has no sessions: each request carries its
//     version in _meta); any other request goes to a stateful one, whose
//     sessions a client of an earlier version opens with initialize, as
//     before; on the stateless one, a client that abandons a request (its
//     POST closed) cancels it, so a held answer is not sent;
//   - a JSON-RPC error -32023 (SEP-3304's RateLimited, which the
//     ratelimited error shape serves) is answered with HTTP status 429 Too
//     Many Requests and a Retry-After header of data.retryAfterMs in whole
//     seconds, rounded up, the body being the JSON-RPC response as
//     application/json (RL-2 and RL-3 of seps/0000-rate-limited-error.md
//     of PR #3304, at 40b5c6f7b5d1e8b07887ce8a6b0c55248ba3ecc0: "For HTTP,
//     servers MUST respond with status 429 Too Many Requests"; "SHOULD set
//     an integer decimal Retry-After header consistent with retryAfterMs").
//
// Sessions of both handlers share srv, and so the one lab.
func NewHTTPHandler(srv *mcp.Server) http.Handler {
	get := func(*http.Request) *mcp.Server { return srv }
	stateful := mcp.NewStreamableHTTPHandler(get, nil)
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := stateful
		if v := r.Header.Get(protocolHeader); v >= Revision2026 {
			h = stateless
		}
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&rateLimitWriter{ResponseWriter: w}, r)
	})
}

// rateLimitWriter holds the status of a POST's response until its first
// write, which the SDK makes whole (one SSE event or one JSON body): when
// that is the JSON-RPC error -32023, the response becomes HTTP 429 with
// Retry-After and the error as an application/json body; otherwise the
// held status and the write pass through unchanged.
type rateLimitWriter struct {
	http.ResponseWriter
	status  int  // a WriteHeader held until the first write; 0: none
	decided bool // the status is written
}

// WriteHeader holds the status until the first write.
func (w *rateLimitWriter) WriteHeader(status int) {
	if w.decided {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.status = status
}

// Write decides the status on the first write, then writes b.
func (w *rateLimitWriter) Write(b []byte) (int, error) {
	if !w.decided {
		w.decided = true
		if body, wait, ok := rateLimited(b); ok && (w.status == 0 || w.status == http.StatusOK) {
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Del("Connection")
			if wait >= 0 {
				h.Set("Retry-After", strconv.FormatInt(wait, 10))
			}
			w.ResponseWriter.WriteHeader(http.StatusTooManyRequests)
			if _, err := w.ResponseWriter.Write(body); err != nil {
				return 0, err
			}
			return len(b), nil
		}
		if w.status != 0 {
			w.ResponseWriter.WriteHeader(w.status)
		}
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes what is written. Note: before the first write it does
// nothing, since flushing would send the status before it is decided.
func (w *rateLimitWriter) Flush() {
	if !w.decided {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (w *rateLimitWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// rateLimited reads b, the first write of a response (one SSE event, or a
// JSON body), and reports whether it is a JSON-RPC error response with code
// study.RateLimitedCode, returning the response as JSON and
// data.retryAfterMs in whole seconds, rounded up (-1 when it has none).
func rateLimited(b []byte) (body []byte, waitS int64, ok bool) {
	body = bytes.TrimSpace(b)
	if !bytes.HasPrefix(body, []byte("{")) {
		// An SSE event: its data lines, joined by newlines, are the message.
		var data [][]byte
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, len(b)+1)
		for sc.Scan() {
			if line, found := strings.CutPrefix(sc.Text(), "data:"); found {
				data = append(data, []byte(strings.TrimPrefix(line, " ")))
			}
		}
		body = bytes.Join(data, []byte("\n"))
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int64 `json:"code"`
			Data *struct {
				RetryAfterMs *int64 `json:"retryAfterMs"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Error == nil || msg.Result != nil || msg.Error.Code != study.RateLimitedCode {
		return nil, 0, false
	}
	waitS = -1
	if d := msg.Error.Data; d != nil && d.RetryAfterMs != nil && *d.RetryAfterMs >= 0 {
		waitS = (*d.RetryAfterMs + 999) / 1000
	}
	return body, waitS, true
}
