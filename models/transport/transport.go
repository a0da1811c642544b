// Package transport is the HTTP layer shared by the backends that talk to
// inference servers (Ollama, OpenAI-compatible): per-attempt timeouts, a
// cap on response bodies, bounded retries with exponential backoff and full
// jitter (honouring Retry-After), a circuit breaker that pauses an
// endpoint that keeps failing, and the Scrubber that removes the
// credentials a backend sends from everything the server sends back (the
// one place this is done, for every backend). Every fault becomes a
// models.TransportEvent; none is ever a model answer.
package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcpstress/stress/models"
)

// Options tunes a Client. Zero fields take the documented defaults.
type Options struct {
	// Timeout bounds one attempt, headers and body (default 120 s).
	Timeout time.Duration
	// MaxAttempts is the most attempts per call, ≥ 1 (default 4).
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt (default 500 ms);
	// attempt k waits a uniform random time in [0, min(MaxDelay, BaseDelay·2^(k-1))].
	BaseDelay time.Duration
	// MaxDelay caps one backoff, and a server's Retry-After (default 30 s).
	MaxDelay time.Duration
	// MaxBody caps a response body in bytes (default 16 MiB); a larger body
	// fails the call without retry.
	MaxBody int64
	// BreakerThreshold is the number of consecutive failed attempts after
	// which the endpoint is paused (default 8).
	BreakerThreshold int
	// BreakerCooldown is how long a paused endpoint waits before it is tried
	// again (default 30 s).
	BreakerCooldown time.Duration
	// Jitter returns a uniform number in [0, 1) (default math/rand/v2).
	Jitter func() float64
	// Sleep waits d or until ctx ends (default a timer); tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now returns the time (default time.Now).
	Now func() time.Time
	// HTTP is the underlying client (default a new http.Client whose
	// connection pool keeps Conns connections alive); its own Timeout is
	// overridden per attempt by a context.
	HTTP *http.Client
	// Conns is the most calls in flight to the endpoint at once (default
	// 1): the default client keeps that many connections, at most, and
	// keeps them alive, so that no call opens a new one (Go's default keeps 2 per host, and each extra
	// one is a TCP, and against https a TLS, handshake).
	Conns int
	// Secrets are the credentials the requests carry (an API key, see
	// URLSecrets for a URL's password). The client scrubs them from the
	// body before the check sees it and from every event and error text
	// before it is clipped (see Scrubber); Reply scrubs what a backend
	// decodes. Default none.
	Secrets []string
}

// FromSpec converts a model's transport settings and parallelism; zero
// fields stay zero (defaults).
func FromSpec(spec models.Spec) Options {
	s := spec.Transport
	sec := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	return Options{Timeout: sec(s.TimeoutS), MaxAttempts: s.Attempts, BaseDelay: sec(s.BackoffMS / 1000),
		MaxDelay: sec(s.MaxBackoffMS / 1000), MaxBody: s.MaxBodyBytes, BreakerThreshold: s.BreakerAfter, BreakerCooldown: sec(s.BreakerPauseS),
		Conns: spec.Parallel}
}

// WithDefaults returns o with every unset field at its documented default
// (what New uses).
func (o Options) WithDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 120 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 4
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = 500 * time.Millisecond
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 30 * time.Second
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 16 << 20
	}
	if o.BreakerThreshold <= 0 {
		o.BreakerThreshold = 8
	}
	if o.BreakerCooldown <= 0 {
		o.BreakerCooldown = 30 * time.Second
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Conns <= 0 {
		o.Conns = 1
	}
	if o.HTTP == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = max(o.Conns, t.MaxIdleConnsPerHost)
		t.MaxIdleConns = max(o.Conns, t.MaxIdleConns)
		// Note: without a hard cap, a request issued just before another
		// call's connection returns to the pool dials a new one (and the
		// surplus is closed later), so a loaded machine churns again.
		t.MaxConnsPerHost = o.Conns
		o.HTTP = &http.Client{Transport: t}
	}
	return o
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Client sends requests to one endpoint. It is safe for concurrent use; the
// circuit breaker is shared by all calls through it.
type Client struct {
	opt   Options
	scrub *Scrubber

	mu          sync.Mutex
	failures    int       // consecutive failed attempts
	pausedUntil time.Time // breaker open until then
}

// New returns a Client with opt's settings.
func New(opt Options) *Client {
	return &Client{opt: opt.WithDefaults(), scrub: NewScrubber(opt.Secrets...)}
}

// Scrubber returns the scrubber of the client's secrets.
func (c *Client) Scrubber() *Scrubber { return c.scrub }

// Response is a successful exchange.
type Response struct {
	Status int         // HTTP status, 2xx
	Header http.Header // response headers
	// Body is the exact bytes the server sent, unless they held one of the
	// client's secrets: then it is those bytes scrubbed.
	Body []byte
	// OriginalSHA256 is the lower-case hex sha256 of the bytes the server
	// sent when Body is scrubbed, else "".
	OriginalSHA256 string
}

// Reply builds a backend's reply from a successful response, the answer
// text and the metadata the backend decoded from its body, and the events
// met on the way. It scrubs text and meta again (a secret may hide behind
// an escape the body's scrub did not decode) and sets Redacted and
// OriginalBodySHA256. Backends set the token counts.
func (c *Client) Reply(resp *Response, events []models.TransportEvent, text string, meta map[string]any) models.Reply {
	text, textChanged := c.scrub.String(text)
	m, metaChanged := c.scrub.Value(meta)
	meta, _ = m.(map[string]any)
	return models.Reply{Text: text, Body: resp.Body, Meta: meta, Events: events,
		Redacted: resp.OriginalSHA256 != "" || textChanged || metaChanged, OriginalBodySHA256: resp.OriginalSHA256}
}

// Extras sets the reasoning text and the native tool calls a backend
// decoded from a reply's body, scrubbed like Reply's text (so a secret in
// them sets Redacted). toolCalls is the server's tool_calls array as it
// sent it; scrubbed JSON stays JSON.
func (c *Client) Extras(r *models.Reply, thinking string, toolCalls json.RawMessage) {
	var a, b bool
	r.Thinking, a = c.scrub.String(thinking)
	if len(toolCalls) > 0 {
		var tc []byte
		tc, b = c.scrub.Bytes(toolCalls)
		r.ToolCalls = json.RawMessage(tc)
	}
	r.Redacted = r.Redacted || a || b
}

// Fault kinds recorded in transport events.
const (
	KindConnect   = "connect"     // dial failure, connection refused or reset
	KindTimeout   = "timeout"     // the attempt's deadline passed
	KindStatus    = "http_status" // HTTP 408, 429 or 5xx (retried, but for a spent quota) or another non-2xx (fatal)
	KindTruncated = "truncated"   // the body ended early
	KindMalformed = "malformed"   // the body failed the caller's check
	KindTooLarge  = "too_large"   // the body exceeded MaxBody
	KindBreaker   = "breaker"     // the endpoint was paused by the circuit breaker
)

// Do sends the request build makes (called once per attempt, so bodies
// are fresh) and returns the first 2xx response whose body passes check
// (nil check accepts any body; it sees the body already scrubbed of the
// client's secrets). Faults are retried up to MaxAttempts and returned as
// events; a call that fails for good returns a *models.CallError holding
// them. No event or error text holds a secret.
func (c *Client) Do(ctx context.Context, build func(ctx context.Context) (*http.Request, error), check func(body []byte) error) (*Response, []models.TransportEvent, error) {
	var events []models.TransportEvent
	fail := func(err error) (*Response, []models.TransportEvent, error) {
		return nil, events, &models.CallError{Err: err, Events: events}
	}
	for attempt := 1; ; attempt++ {
		if wait := c.pause(); wait > 0 {
			events = append(events, models.TransportEvent{Attempt: attempt, Kind: KindBreaker, Error: "endpoint paused after repeated failures", WaitMS: ms(wait), At: c.opt.Now()})
			if err := c.opt.Sleep(ctx, wait); err != nil {
				return fail(err)
			}
		}
		resp, ev, retryAfter, cause := c.attempt(ctx, attempt, build, check)
		if ev == nil {
			c.record(true)
			return resp, events, nil
		}
		c.record(false)
		if ctx.Err() != nil {
			events = append(events, *ev)
			return fail(fmt.Errorf("%s: %w", ev.Error, ctx.Err()))
		}
		retryable := retryable(*ev, cause)
		if !retryable || attempt >= c.opt.MaxAttempts {
			events = append(events, *ev)
			msg := ev.Error
			if retryable {
				msg = fmt.Sprintf("giving up after %d attempts: %s", attempt, ev.Error)
			}
			// Note: the text is the event's, scrubbed; the cause stays in
			// the chain for errors.Is and As (Unreachable).
			return fail(&scrubbedError{msg: msg, err: cause})
		}
		wait := c.backoff(attempt)
		if retryAfter > 0 {
			wait = min(retryAfter, c.opt.MaxDelay)
		}
		ev.WaitMS = ms(wait)
		events = append(events, *ev)
		if err := c.opt.Sleep(ctx, wait); err != nil {
			return fail(err)
		}
	}
}

// attempt makes one try. It returns the response, or the fault, any
// Retry-After the server asked for and the error that caused the fault.
func (c *Client) attempt(ctx context.Context, n int, build func(context.Context) (*http.Request, error), check func([]byte) error) (*Response, *models.TransportEvent, time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, c.opt.Timeout)
	defer cancel()
	ev := func(kind string, status int, err error) *models.TransportEvent {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			kind = KindTimeout
		}
		msg, _ := c.scrub.String(err.Error())
		return &models.TransportEvent{Attempt: n, Kind: kind, Status: status, Error: msg, At: c.opt.Now()}
	}
	req, err := build(actx)
	if err != nil {
		// A request that cannot be built will not build next time either.
		msg, _ := c.scrub.String(err.Error())
		return nil, &models.TransportEvent{Attempt: n, Kind: KindStatus, Error: "building request: " + msg, At: c.opt.Now()}, 0, err
	}
	resp, err := c.opt.HTTP.Do(req)
	if err != nil {
		return nil, ev(KindConnect, 0, err), 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opt.MaxBody+1))
	if err != nil {
		err = fmt.Errorf("reading body: %w", err)
		return nil, ev(KindTruncated, resp.StatusCode, err), 0, err
	}
	if int64(len(body)) > c.opt.MaxBody {
		err := fmt.Errorf("response body exceeds %d bytes", c.opt.MaxBody)
		return nil, ev(KindTooLarge, resp.StatusCode, err), 0, err
	}
	// Note: the secrets go before anything reads or clips the body, so a
	// secret is removed whole; a clip first would cut it short, and its
	// first bytes would survive.
	// The check parses the scrubbed body, so the answer a backend decodes
	// is the one the stored body holds; a secret outside a JSON string
	// (never seen in practice) would make it malformed, never leak.
	sent := body
	body, scrubbed := c.scrub.Bytes(body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := statusError(resp.StatusCode, body)
		return nil, ev(KindStatus, resp.StatusCode, err), retryAfter(resp.Header.Get("Retry-After"), c.opt.Now()), err
	}
	if check != nil {
		if err := check(body); err != nil {
			kind := KindMalformed
			if errors.Is(err, io.ErrUnexpectedEOF) {
				kind = KindTruncated
			}
			return nil, ev(kind, resp.StatusCode, err), 0, err
		}
	}
	r := &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if scrubbed {
		sum := sha256.Sum256(sent)
		r.OriginalSHA256 = hex.EncodeToString(sum[:])
	}
	return r, nil, 0, nil
}

// clip cuts b to at most n bytes, at a UTF-8 character boundary, marking a
// cut with "…".
func clip(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return append(b[:n:n], "…"...)
}

// retryable reports whether a later attempt may cure the fault ev, whose
// error is cause.
func retryable(ev models.TransportEvent, cause error) bool {
	var final *noRetry
	return ev.Kind != KindTooLarge && !(ev.Kind == KindStatus && !retryStatus(ev.Status)) && !errors.As(cause, &final)
}

// Retryable reports whether err, the error of a call Do gave up on, ended
// on a fault that Do retries (with more attempts, a later one may cure
// it); false for any other error.
func Retryable(err error) bool {
	var ce *models.CallError
	if !errors.As(err, &ce) || len(ce.Events) == 0 {
		return false
	}
	return retryable(ce.Events[len(ce.Events)-1], err)
}

// retryStatus reports whether an HTTP status is worth retrying.
func retryStatus(s int) bool {
	return s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500
}

// backoff is the full-jitter delay after failed attempt n (1-based).
func (c *Client) backoff(n int) time.Duration {
	ceil := c.opt.BaseDelay << min(n-1, 30)
	if ceil <= 0 || ceil > c.opt.MaxDelay {
		ceil = c.opt.MaxDelay
	}
	return time.Duration(c.opt.Jitter() * float64(ceil))
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(min(s, math.MaxInt32)) * time.Second // no overflow: 68 years at most
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// pause returns how long the breaker still keeps the endpoint paused.
func (c *Client) pause() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pausedUntil.Sub(c.opt.Now())
}

// record updates the breaker after an attempt.
func (c *Client) record(ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		c.failures = 0
		return
	}
	c.failures++
	if c.failures >= c.opt.BreakerThreshold {
		c.pausedUntil = c.opt.Now().Add(c.opt.BreakerCooldown)
		// Note: after the pause one attempt is let through (half-open); a
		// failure there pauses again at once.
		c.failures = c.opt.BreakerThreshold - 1
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
