package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// registryServer serves the fixture pages as the official registry's
// list endpoint does: GET /v0/servers?limit=N[&cursor=C], the next page's
// cursor in metadata.nextCursor. fail(n) may answer the n-th request
// (1-based) instead; it returns false to serve the page.
func registryServer(t *testing.T, fail func(n int64, w http.ResponseWriter) bool) (*httptest.Server, *[]string) {
	t.Helper()
	pages := map[string][]byte{}
	for cursor, f := range map[string]string{"": "page-1.json", "com.example/tickets:2025.11.3": "page-2.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		pages[cursor] = data
	}
	var n atomic.Int64
	var requests []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests = append(requests, r.URL.RequestURI())
		if fail != nil && fail(n.Add(1), w) {
			return
		}
		if r.URL.Path != "/v0/servers" || r.URL.Query().Get("limit") != "100" {
			http.Error(w, `{"title":"Not Found","status":404}`, http.StatusNotFound)
			return
		}
		page, ok := pages[r.URL.Query().Get("cursor")]
		if !ok {
			http.Error(w, `{"title":"Bad Request","status":400,"detail":"invalid cursor"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(page)
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

var quick = FetchOptions{Backoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}

// TestFetch pages a local registry from its base URL, following the
// cursor (URL-encoded), and retries a 503 and a truncated page; the pages
// decode to the same frame as the files.
func TestFetch(t *testing.T) {
	srv, requests := registryServer(t, func(n int64, w http.ResponseWriter) bool {
		switch n {
		case 2:
			w.Header().Set("Retry-After", "0")
			http.Error(w, "upstream busy", http.StatusServiceUnavailable)
			return true
		case 3:
			w.Write([]byte(`{"servers":[{"server":`))
			return true
		}
		return false
	})
	var got []Record
	pages := 0
	err := Fetch(context.Background(), srv.URL, quick, func(body []byte) error {
		pages++
		recs, errs := Decode("page", body)
		if len(errs) > 0 {
			t.Errorf("page %d: %v", pages, errs)
		}
		got = append(got, recs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages != 2 {
		t.Errorf("%d pages, want 2", pages)
	}
	want := "/v0/servers?limit=100 /v0/servers?cursor=com.example%2Ftickets%3A2025.11.3&limit=100 " +
		"/v0/servers?cursor=com.example%2Ftickets%3A2025.11.3&limit=100 /v0/servers?cursor=com.example%2Ftickets%3A2025.11.3&limit=100"
	if s := strings.Join(*requests, " "); s != want {
		t.Errorf("requests\n%s\nwant\n%s", s, want)
	}
	if frameLines(BuildFrame(got, FrameOptions{})) != frameLines(BuildFrame(readPages(t), FrameOptions{})) {
		t.Errorf("the fetched frame differs from the files'")
	}
}

// TestFetchErrors: a client error is not retried; lasting server errors
// give up after the attempts; a page without servers, a cursor served
// twice and a page over the size bound stop the fetch, naming the page
// and its URL.
func TestFetchErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		base string
		fail func(n int64, w http.ResponseWriter) bool
		opt  FetchOptions
		want string
		reqs int
	}{
		{"not found", "/v1/nothing", nil, quick,
			`registry page 1 (URL/v1/nothing?limit=100): HTTP 404 Not Found: "{\"title\":\"Not Found\",\"status\":404}\n"`, 1},
		{"lasting 502", "", func(n int64, w http.ResponseWriter) bool {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return true
		}, quick, `registry page 1 (URL/v0/servers?limit=100): HTTP 502 Bad Gateway: "bad gateway\n" (after 5 attempts)`, 5},
		{"no servers", "", func(n int64, w http.ResponseWriter) bool {
			w.Write([]byte(`{"error":"maintenance"}`))
			return true
		}, quick, `registry page 1 (URL/v0/servers?limit=100): the page has no "servers" member: "{\"error\":\"maintenance\"}"`, 1},
		{"loop", "", func(n int64, w http.ResponseWriter) bool {
			w.Write([]byte(`{"servers":[],"metadata":{"nextCursor":"same"}}`))
			return true
		}, quick, `registry page 2 (URL/v0/servers?cursor=same&limit=100): nextCursor "same" was served before: the listing loops`, 2},
		{"too large", "", nil, FetchOptions{MaxPageBytes: 100},
			"registry page 1 (URL/v0/servers?limit=100): the page is larger than 100 bytes", 1},
		{"too many pages", "", nil, FetchOptions{MaxPages: 1},
			"registry URL: more than 1 pages", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, requests := registryServer(t, tc.fail)
			err := Fetch(context.Background(), srv.URL+tc.base, tc.opt, func([]byte) error { return nil })
			want := strings.ReplaceAll(tc.want, "URL", srv.URL)
			if err == nil || err.Error() != want {
				t.Errorf("%s: %v\nwant %s", tc.name, err, want)
			}
			if len(*requests) != tc.reqs {
				t.Errorf("%s: %d requests, want %d", tc.name, len(*requests), tc.reqs)
			}
		})
	}
	if err := Fetch(context.Background(), "ftp://example.com", quick, nil); err == nil || !strings.Contains(err.Error(), "want an http or https URL") {
		t.Errorf("ftp URL: %v", err)
	}
}

// TestFetchRedirect: a redirect to another host (here another port of
// the loopback, as two test servers are) is refused at once, naming both
// URLs, and not retried; AllowRedirectHosts admits it (HOST:PORT, or HOST
// for any port); a redirect on the list URL's own host is followed.
func TestFetchRedirect(t *testing.T) {
	target, _ := registryServer(t, nil)
	var hits atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, target.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer origin.Close()
	tu, _ := url.Parse(target.URL)
	pages := func(opt FetchOptions, base string) (int, error) {
		n := 0
		err := Fetch(context.Background(), base, opt, func([]byte) error { n++; return nil })
		return n, err
	}
	n, err := pages(quick, origin.URL)
	var re *RedirectError
	if !errors.As(err, &re) || re.Host != tu.Host || re.To != target.URL+"/v0/servers?limit=100" || n != 0 || hits.Load() != 1 {
		t.Errorf("a redirect to another host: %d pages, %d requests, %v; want refused at once", n, hits.Load(), err)
	}
	if err != nil && !strings.Contains(err.Error(), "registry page 1 ("+origin.URL+"/v0/servers?limit=100): redirect from "+origin.URL+"/v0/servers?limit=100 to another host, "+target.URL+"/v0/servers?limit=100") {
		t.Errorf("error %q", err)
	}
	for _, allow := range []string{tu.Host, tu.Hostname()} {
		t.Run("allows "+allow, func(t *testing.T) {
			opt := quick
			opt.AllowRedirectHosts = []string{"registry.example", allow}
			if n, err := pages(opt, origin.URL); err != nil || n != 2 {
				t.Errorf("allowing %s: %d pages, %v", allow, n, err)
			}
		})
	}
	opt := quick
	opt.AllowRedirectHosts = []string{tu.Hostname() + ":1"}
	if _, err := pages(opt, origin.URL); !errors.As(err, &re) {
		t.Errorf("allowing another port: %v, want refused", err)
	}
	same := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old/servers" {
			http.Redirect(w, r, "/v0/servers?"+r.URL.RawQuery, http.StatusMovedPermanently)
			return
		}
		page, _ := os.ReadFile(filepath.Join("testdata", "page-2.json"))
		w.Write(page)
	}))
	defer same.Close()
	if n, err := pages(quick, same.URL+"/old/servers"); err != nil || n != 1 {
		t.Errorf("a redirect on the same host: %d pages, %v", n, err)
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"http://Registry.example/x", "https://registry.example./y", true},
		{"http://h:8080/", "http://h:8080/z", true},
		{"http://h:8080/", "http://h:8081/", false},
		{"https://h/", "https://h:443/", true},
		{"https://h/", "https://evil.example/", false},
	} {
		t.Run(tc.a+" vs "+tc.b, func(t *testing.T) {
			a, _ := url.Parse(tc.a)
			b, _ := url.Parse(tc.b)
			if got := sameHost(a, b); got != tc.same {
				t.Errorf("sameHost(%s, %s) = %v", tc.a, tc.b, got)
			}
		})
	}
	for _, h := range []string{"", "http://h", "h/x", "h:0", "h:x", "a b"} {
		t.Run(fmt.Sprintf("refuses %q", h), func(t *testing.T) {
			if CheckAllowHost(h) == nil {
				t.Errorf("CheckAllowHost(%q) accepts it", h)
			}
		})
	}
	for _, h := range []string{"h", "h:8080", "127.0.0.1", "[::1]:80", "::1"} {
		t.Run("accepts "+h, func(t *testing.T) {
			if err := CheckAllowHost(h); err != nil {
				t.Errorf("CheckAllowHost(%q): %v", h, err)
			}
		})
	}
}
