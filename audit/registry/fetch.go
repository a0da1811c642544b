package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpstress/stress/internal/input"
)

// FetchOptions are Fetch's tunables; zero fields take the defaults.
type FetchOptions struct {
	// PageSize is the limit query parameter: entries per page (default
	// 100, the official registry's maximum).
	PageSize int
	// MaxPages bounds the pages read (default 10000: a million entries).
	MaxPages int
	// MaxPageBytes bounds a page's body (default 32 MiB).
	MaxPageBytes int64
	// Attempts is how many times a page is requested before giving up
	// (default 5). Network errors, 429, 5xx, a truncated body and a page
	// that is not JSON are retried; other statuses are not.
	Attempts int
	// Backoff is the wait before the first retry, doubled for each next
	// one (default 1s); a Retry-After header (seconds) overrides it, up
	// to MaxBackoff.
	Backoff time.Duration
	// MaxBackoff caps a wait (default 60s).
	MaxBackoff time.Duration
	// Timeout bounds one request (default 60s).
	Timeout time.Duration
	// Client makes the requests (default http.DefaultClient). Fetch uses
	// a copy whose redirect check refuses other hosts (AllowRedirectHosts).
	Client *http.Client
	// AllowRedirectHosts are the hosts a redirect may lead to besides the
	// list URL's own: "HOST" (any port) or "HOST:PORT". A redirect to any
	// other host is refused with a *RedirectError, not retried. A host is
	// its own when the name is the same (case-insensitively) and so is the
	// port, if either URL gives one: http://h to https://h is the same
	// host, http://h:8080 to http://h:8081 is not.
	AllowRedirectHosts []string
}

// maxRedirects is how many redirects one request follows, as net/http's
// default.
const maxRedirects = 10

// RedirectError is a redirect Fetch refused: to a host that is neither
// the list URL's nor one of FetchOptions.AllowRedirectHosts.
type RedirectError struct {
	From, To string // the URLs redirected from and to
	Host     string // the host redirected to, as AllowRedirectHosts would name it
}

// Error names both URLs.
func (e *RedirectError) Error() string {
	return fmt.Sprintf("redirect from %s to another host, %s (%s): refused", e.From, e.To, e.Host)
}

// sameHost reports whether b is on a's host: the same name and, when
// either gives a port, the same port (a default port counted as given
// only where written).
func sameHost(a, b *url.URL) bool {
	if !strings.EqualFold(strings.TrimSuffix(a.Hostname(), "."), strings.TrimSuffix(b.Hostname(), ".")) {
		return false
	}
	if a.Port() == "" && b.Port() == "" {
		return true
	}
	return effectivePort(a) == effectivePort(b)
}

// effectivePort is u's port, or its scheme's default.
func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// hostAllowed reports whether u's host is one of allow ("HOST" for any
// port, "HOST:PORT").
func hostAllowed(u *url.URL, allow []string) bool {
	name := strings.TrimSuffix(u.Hostname(), ".")
	for _, a := range allow {
		h, p, err := net.SplitHostPort(a)
		if err != nil {
			h, p = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]"), ""
		}
		if strings.EqualFold(strings.TrimSuffix(h, "."), name) && (p == "" || p == effectivePort(u)) {
			return true
		}
	}
	return false
}

// CheckAllowHost checks an AllowRedirectHosts entry: a host name or
// address, with an optional port, and nothing else.
func CheckAllowHost(h string) error {
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), ""
	}
	if host == "" || strings.ContainsAny(host, "/?#@ \t") || strings.Contains(h, "://") {
		return fmt.Errorf("%s: want a HOST or HOST:PORT", input.Quote(h))
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%s: port %s: want 1 to 65535", input.Quote(h), input.Quote(port))
		}
	}
	return nil
}

// redirectClient returns a copy of c that follows a redirect only to
// origin's host or an allowed one, at most maxRedirects in a row, and
// then as c's own check says.
func redirectClient(c *http.Client, origin *url.URL, allow []string) *http.Client {
	cc := *c
	prev := c.CheckRedirect
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if !sameHost(origin, req.URL) && !hostAllowed(req.URL, allow) {
			return &RedirectError{From: via[len(via)-1].URL.String(), To: req.URL.String(), Host: req.URL.Host}
		}
		if prev != nil {
			return prev(req, via)
		}
		return nil
	}
	return &cc
}

func (o FetchOptions) withDefaults() FetchOptions {
	o.PageSize = positiveOr(o.PageSize, 100)
	o.MaxPages = positiveOr(o.MaxPages, 10000)
	o.MaxPageBytes = positiveOr(o.MaxPageBytes, 32<<20)
	o.Attempts = positiveOr(o.Attempts, 5)
	o.Backoff = positiveOr(o.Backoff, time.Second)
	o.MaxBackoff = positiveOr(o.MaxBackoff, 60*time.Second)
	o.Timeout = positiveOr(o.Timeout, 60*time.Second)
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	return o
}

// positiveOr returns v if it is positive, else def.
func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// ListURL returns the list endpoint of a registry given by its base URL
// (https://registry.modelcontextprotocol.io becomes …/v0/servers) or by
// the endpoint itself, whose path and query are kept.
func ListURL(base string) (*url.URL, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%s: want an http or https URL", input.Quote(base))
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v0/servers"
	}
	return u, nil
}

// Fetch pages the registry list endpoint at base (ListURL) from the first
// page to the last, following metadata.nextCursor, and hands each page's
// body to page in order. It stops at the first error (a page that fails
// for good, a cursor served twice, more than MaxPages pages, or page's
// own), naming the page and its URL: a partial snapshot is not a frame.
// A redirect to a host other than base's is refused (a *RedirectError)
// unless opt.AllowRedirectHosts names it.
func Fetch(ctx context.Context, base string, opt FetchOptions, page func(body []byte) error) error {
	opt = opt.withDefaults()
	u, err := ListURL(base)
	if err != nil {
		return err
	}
	opt.Client = redirectClient(opt.Client, u, opt.AllowRedirectHosts)
	seen := map[string]bool{}
	cursor := ""
	for n := 1; ; n++ {
		if n > opt.MaxPages {
			return fmt.Errorf("registry %s: more than %d pages", base, opt.MaxPages)
		}
		q := u.Query()
		if q.Get("limit") == "" {
			q.Set("limit", strconv.Itoa(opt.PageSize))
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		} else {
			q.Del("cursor")
		}
		pu := *u
		pu.RawQuery = q.Encode()
		body, next, err := fetchPage(ctx, pu.String(), opt)
		if err != nil {
			return fmt.Errorf("registry page %d (%s): %w", n, pu.String(), err)
		}
		if err := page(body); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		if seen[next] {
			return fmt.Errorf("registry page %d (%s): nextCursor %s was served before: the listing loops", n, pu.String(), input.Quote(next))
		}
		seen[next] = true
		cursor = next
	}
}

// errRetry marks a failure worth another attempt.
type errRetry struct {
	err   error
	after time.Duration // the server's Retry-After, 0 for none
}

func (e *errRetry) Error() string { return e.err.Error() }
func (e *errRetry) Unwrap() error { return e.err }

// fetchPage gets one page, retrying as FetchOptions says, and returns its
// body and next cursor.
func fetchPage(ctx context.Context, u string, opt FetchOptions) ([]byte, string, error) {
	wait := opt.Backoff
	for attempt := 1; ; attempt++ {
		body, next, err := getPage(ctx, u, opt)
		if err == nil {
			return body, next, nil
		}
		var r *errRetry
		if !errors.As(err, &r) || attempt >= opt.Attempts || ctx.Err() != nil {
			if attempt > 1 {
				return nil, "", fmt.Errorf("%w (after %d attempts)", err, attempt)
			}
			return nil, "", err
		}
		d := wait
		if r.after > 0 {
			d = r.after
		}
		d = min(d, opt.MaxBackoff)
		wait *= 2
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-time.After(d):
		}
	}
}

// getPage makes one request for a page.
func getPage(ctx context.Context, u string, opt FetchOptions) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := opt.Client.Do(req)
	if err != nil {
		var re *RedirectError
		if errors.As(err, &re) {
			return nil, "", re // a refused redirect is refused again
		}
		return nil, "", &errRetry{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, opt.MaxPageBytes+1))
	if err != nil {
		return nil, "", &errRetry{err: fmt.Errorf("reading the body: %w", err)}
	}
	if int64(len(body)) > opt.MaxPageBytes {
		return nil, "", fmt.Errorf("the page is larger than %d bytes", opt.MaxPageBytes)
	}
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("HTTP %s: %s", resp.Status, input.Quote(string(body)))
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			secs, _ := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
			return nil, "", &errRetry{err: err, after: time.Duration(max(secs, 0)) * time.Second}
		}
		return nil, "", err
	}
	var p struct {
		Servers  *json.RawMessage `json:"servers"`
		Metadata struct {
			NextCursor string `json:"nextCursor"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, "", &errRetry{err: fmt.Errorf("the page is not a JSON object: %v", err)}
	}
	if p.Servers == nil {
		return nil, "", fmt.Errorf("the page has no \"servers\" member: %s", input.Quote(string(body)))
	}
	return body, p.Metadata.NextCursor, nil
}
