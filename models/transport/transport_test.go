package transport

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/internal/testserver/faultserver"
	"github.com/mcpstress/stress/models"
)

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Write([]byte(`{"message":{"content":"hi"}}`))
})

func checkJSON(b []byte) error {
	var v any
	return json.Unmarshal(b, &v)
}

// hangTimeout is the attempt timeout of a test whose server hangs: it must
// pass on the hanging attempts and not on the good answer after them, which
// on a loaded machine may take a second or two.
const hangTimeout = 5 * time.Second

// fakeClock records sleeps instead of waiting.
type fakeClock struct{ slept []time.Duration }

func (f *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	f.slept = append(f.slept, d)
	return ctx.Err()
}

// client makes a client with quick retries on clock. Its attempt timeout,
// which a good answer from the test's own server must beat on a loaded
// machine, is 30 s; a test of a hanging server sets hangTimeout.
func client(t *testing.T, clock *fakeClock, mod func(*Options)) *Client {
	opt := Options{Timeout: 30 * time.Second, MaxAttempts: 4, BaseDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second,
		MaxBody: 1 << 16, BreakerThreshold: 100, Jitter: func() float64 { return 0.5 }, Sleep: clock.sleep}
	if mod != nil {
		mod(&opt)
	}
	return New(opt)
}

func get(url string) func(ctx context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, "POST", url, strings.NewReader("{}"))
	}
}

func kinds(ev []models.TransportEvent) string {
	var k []string
	for _, e := range ev {
		k = append(k, e.Kind)
	}
	return strings.Join(k, ",")
}

// TestFaultsThenSuccess: every retryable fault is retried and recorded, and
// the call returns the exact body of the first good answer.
func TestFaultsThenSuccess(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault faultserver.Fault
		kind  string
	}{
		{"500", faultserver.Fault{Kind: faultserver.KindStatus, Status: 500}, KindStatus},
		{"503", faultserver.Fault{Kind: faultserver.KindStatus, Status: 503}, KindStatus},
		{"hang", faultserver.Fault{Kind: faultserver.KindHang}, KindTimeout},
		{"reset", faultserver.Fault{Kind: faultserver.KindReset}, KindConnect},
		{"truncated", faultserver.Fault{Kind: faultserver.KindTruncate}, KindTruncated},
		{"malformed", faultserver.Fault{Kind: faultserver.KindMalformed}, KindMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := faultserver.New(okHandler, tc.fault, tc.fault, faultserver.Fault{Kind: faultserver.KindOK})
			defer srv.Close()
			clock := &fakeClock{}
			var mod func(*Options)
			if tc.fault.Kind == faultserver.KindHang {
				mod = func(o *Options) { o.Timeout = hangTimeout }
			}
			resp, ev, err := client(t, clock, mod).Do(context.Background(), get(srv.URL), checkJSON)
			if err != nil {
				t.Fatalf("%v (events %v)", err, ev)
			}
			if string(resp.Body) != `{"message":{"content":"hi"}}` {
				t.Errorf("body %q", resp.Body)
			}
			if kinds(ev) != tc.kind+","+tc.kind || ev[0].Attempt != 1 || ev[1].Attempt != 2 {
				t.Errorf("events %+v, want two %s events", ev, tc.kind)
			}
			// Full jitter at 0.5: 50 ms after attempt 1, 100 ms after attempt 2.
			if len(clock.slept) != 2 || clock.slept[0] != 50*time.Millisecond || clock.slept[1] != 100*time.Millisecond {
				t.Errorf("backoff %v, want [50ms 100ms]", clock.slept)
			}
			if srv.Requests() != 3 {
				t.Errorf("%d requests, want 3", srv.Requests())
			}
		})
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	srv := faultserver.New(okHandler, faultserver.Fault{Kind: faultserver.KindStatus, Status: 429, RetryAfter: "1"}, faultserver.Fault{Kind: faultserver.KindStatus, Status: 429, RetryAfter: "3600"}, faultserver.Fault{Kind: faultserver.KindOK})
	defer srv.Close()
	clock := &fakeClock{}
	_, ev, err := client(t, clock, nil).Do(context.Background(), get(srv.URL), checkJSON)
	if err != nil {
		t.Fatal(err)
	}
	// 1 s as asked; 3600 s capped at MaxDelay (2 s).
	if len(clock.slept) != 2 || clock.slept[0] != time.Second || clock.slept[1] != 2*time.Second {
		t.Errorf("waits %v, want [1s 2s]", clock.slept)
	}
	if ev[0].Status != 429 || ev[0].WaitMS != 1000 {
		t.Errorf("event %+v", ev[0])
	}
}

func TestGivesUp(t *testing.T) {
	srv := faultserver.New(okHandler, faultserver.Fault{Kind: faultserver.KindStatus, Status: 500})
	defer srv.Close()
	clock := &fakeClock{}
	_, ev, err := client(t, clock, nil).Do(context.Background(), get(srv.URL), checkJSON)
	var ce *models.CallError
	if !errors.As(err, &ce) || len(ce.Events) != 4 || len(ev) != 4 || !strings.Contains(err.Error(), "giving up after 4 attempts") {
		t.Fatalf("err %v events %v; want a CallError after 4 attempts", err, ev)
	}
	if ev[3].WaitMS != 0 {
		t.Errorf("the last event has no wait, got %v", ev[3].WaitMS)
	}
}

func TestFatalFaultsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    faultserver.Fault
	}{{"status 404", faultserver.Fault{Kind: faultserver.KindStatus, Status: 404}}, {"huge body", faultserver.Fault{Kind: faultserver.KindHuge, Size: 1 << 17}}} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			srv := faultserver.New(okHandler, f, faultserver.Fault{Kind: faultserver.KindOK})
			clock := &fakeClock{}
			_, ev, err := client(t, clock, nil).Do(context.Background(), get(srv.URL), checkJSON)
			srv.Close()
			if err == nil || len(ev) != 1 || srv.Requests() != 1 || len(clock.slept) != 0 {
				t.Errorf("%+v: err %v, %d events, %d requests; want one fatal attempt", f, err, len(ev), srv.Requests())
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	clock := &fakeClock{}
	_, ev, err := client(t, clock, nil).Do(context.Background(), get(url), nil)
	if err == nil || kinds(ev) != "connect,connect,connect,connect" {
		t.Errorf("err %v events %v; want four connect faults", err, kinds(ev))
	}
}

func TestBreakerPauses(t *testing.T) {
	srv := faultserver.New(okHandler, faultserver.Fault{Kind: faultserver.KindStatus, Status: 502}, faultserver.Fault{Kind: faultserver.KindStatus, Status: 502}, faultserver.Fault{Kind: faultserver.KindOK})
	defer srv.Close()
	clock := &fakeClock{}
	now := time.Unix(1000, 0)
	c := client(t, clock, func(o *Options) {
		o.BreakerThreshold, o.BreakerCooldown = 2, 10*time.Second
		o.Now = func() time.Time { return now }
	})
	_, ev, err := c.Do(context.Background(), get(srv.URL), checkJSON)
	if err != nil {
		t.Fatal(err)
	}
	if kinds(ev) != "http_status,http_status,breaker" || ev[2].WaitMS != 10000 {
		t.Errorf("events %+v; want two 502s, then a 10 s breaker pause", ev)
	}
}

func TestCancelStops(t *testing.T) {
	srv := faultserver.New(okHandler, faultserver.Fault{Kind: faultserver.KindHang})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := New(Options{Timeout: time.Minute}).Do(ctx, get(srv.URL), nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the caller's deadline", err)
	}
}
