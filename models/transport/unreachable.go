package transport

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// Unreachable says why err means that the server could not be reached
// (nothing listens at its address, its host name does not resolve, the
// network has no route to it, or connecting timed out), or returns ""
// when err is another failure: an HTTP status, a bad body, or a slow
// answer on a connection that was made.
//
// Note: it goes by the error's chain (*net.DNSError, a *net.OpError of
// op "dial", syscall.ECONNREFUSED), never by its text, so an error
// message from the server that mentions "connection refused" is no
// match. The reason holds no URL, so no password.
func Unreachable(err error) string {
	if err == nil {
		return ""
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return fmt.Sprintf("host name %q not found", dns.Name)
		}
		return fmt.Sprintf("host name %q cannot be resolved: %s", dns.Name, dns.Err)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "connection refused"
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		return ""
	}
	if op.Timeout() {
		return "connecting timed out"
	}
	var sys *os.SyscallError
	if errors.As(op.Err, &sys) {
		return "cannot connect: " + sys.Err.Error() // e.g. no route to host
	}
	if op.Err != nil {
		return "cannot connect: " + op.Err.Error()
	}
	return "cannot connect"
}
