package transport_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"

	"github.com/mcpstress/stress/internal/testserver/faultserver"
	"github.com/mcpstress/stress/models/transport"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// TestUnreachable: Unreachable goes by the error's chain: a refused
// connection through Client.Do (its *models.CallError keeps the cause), an
// unknown host name, a dial that timed out or found no route are
// unreachable servers; an HTTP status, a body error or a message that
// merely says "connection refused" are not.
func TestUnreachable(t *testing.T) {
	get := func(url string) func(ctx context.Context) (*http.Request, error) {
		return func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		}
	}
	c := transport.New(transport.Options{MaxAttempts: 2, BaseDelay: 1, MaxDelay: 1})
	_, _, refused := c.Do(context.Background(), get("http://"+faultserver.ClosedPort(t)+"/api/version"), nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "dial tcp: connect: connection refused", http.StatusBadGateway) // a proxy's words
	}))
	defer srv.Close()
	_, _, status := transport.New(transport.Options{MaxAttempts: 1}).Do(context.Background(), get(srv.URL), nil)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"refused through Do", refused, "connection refused"},
		{"unknown host", fmt.Errorf("get: %w", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "ollama.invalid", IsNotFound: true}}), `host name "ollama.invalid" not found`},
		{"dial timeout", &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}, "connecting timed out"},
		{"no route", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, "cannot connect: no route to host"},
		{"read timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, ""},
		{"HTTP status", status, ""},
		{"text only", errors.New("connection refused"), ""},
		{"nil", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := transport.Unreachable(tc.err); got != tc.want {
				t.Errorf("%s: Unreachable(%v) = %q, want %q", tc.name, tc.err, got, tc.want)
			}
		})
	}
	if refused == nil || refused.Error() == "" {
		t.Fatalf("Do on a closed port: %v", refused)
	}
}
