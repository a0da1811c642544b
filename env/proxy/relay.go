package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TerminateGrace is how long Command's transport waits for the command
// to exit after closing its stdin, before SIGTERM (and as long again
// before SIGKILL).
const TerminateGrace = 2 * time.Second

// Command returns a client-side mcp.Transport that starts cmd and relays
// every message between the client and it through in. Closing the
// client session stops cmd, as mcp.CommandTransport does (stdin closed,
// then SIGTERM after TerminateGrace, then SIGKILL).
func Command(cmd *exec.Cmd, in *Injector) mcp.Transport {
	return Wrap(&mcp.CommandTransport{Command: cmd, TerminateDuration: TerminateGrace}, in)
}

// Wrap returns a client-side mcp.Transport that connects to upstream and
// relays every message between the client and it through in. Closing
// the client's connection closes upstream's and waits for it.
func Wrap(upstream mcp.Transport, in *Injector) mcp.Transport {
	return &wrapped{upstream: upstream, in: in}
}

type wrapped struct {
	upstream mcp.Transport
	in       *Injector
}

func (w *wrapped) Connect(ctx context.Context) (mcp.Connection, error) {
	up, err := w.upstream.Connect(ctx)
	if err != nil {
		return nil, err
	}
	near, far := mcp.NewInMemoryTransports()
	client, err := far.Connect(ctx)
	if err != nil {
		up.Close()
		return nil, err
	}
	proxySide, err := near.Connect(ctx)
	if err != nil {
		up.Close()
		client.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = relay(context.WithoutCancel(ctx), proxySide, up, w.in)
	}()
	return &clientConn{Connection: client, done: done}, nil
}

// clientConn is the client's end of a wrapped transport: Close waits for
// the relay to end, the upstream closed.
type clientConn struct {
	mcp.Connection
	done chan struct{}
}

func (c *clientConn) Close() error {
	err := c.Connection.Close()
	<-c.done
	return err
}

// Serve connects to upstream, then to client, and relays every message
// between them through in until either side ends (or ctx does); then it
// closes both. stress proxy serves stdio with it.
func Serve(ctx context.Context, client, upstream mcp.Transport, in *Injector) error {
	up, err := upstream.Connect(ctx)
	if err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	cc, err := client.Connect(ctx)
	if err != nil {
		up.Close()
		return fmt.Errorf("client: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { cc.Close() })
	defer stop()
	return relay(ctx, cc, up, in)
}

// relay copies messages between the client's connection and the
// server's, applying in, until one of them ends; it closes both.
func relay(ctx context.Context, client, server mcp.Connection, in *Injector) error {
	r := &relayState{in: in, client: client, server: server, pending: map[jsonrpc.ID]rewrite{}}
	errc := make(chan error, 2)
	go func() { errc <- r.fromServer(ctx) }()
	err := r.fromClient(ctx)
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	server.Close()
	serr := <-errc
	client.Close()
	if errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		err = nil
	}
	if err == nil && !errors.Is(serr, io.EOF) && !errors.Is(serr, mcp.ErrConnectionClosed) {
		err = serr
	}
	return err
}

type relayState struct {
	in             *Injector
	client, server mcp.Connection

	mu      sync.Mutex
	pending map[jsonrpc.ID]rewrite // the client's requests the server has not answered, with their answers' rewrites
	closed  bool                   // the server's side ended
	closing bool                   // the relay closed the server's side itself: its read's error is that close
}

// fromClient relays the client's messages until its connection ends.
func (r *relayState) fromClient(ctx context.Context) error {
	for {
		msg, err := r.client.Read(ctx)
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if n := size(m); n > r.in.limit() {
				if m.IsCall() {
					if err := r.client.Write(ctx, tooLarge(m.ID, "request", n, r.in.limit(), jsonrpc.CodeInvalidRequest)); err != nil {
						return err
					}
				}
				continue
			}
			if !m.IsCall() {
				if err := r.server.Write(ctx, m); err != nil {
					return err
				}
				continue
			}
			fwd, reply, rw := r.in.request(m)
			if reply != nil {
				if err := r.client.Write(ctx, reply); err != nil {
					return err
				}
				continue
			}
			r.mu.Lock()
			gone := r.closed
			if !gone {
				r.pending[m.ID] = rw
			}
			r.mu.Unlock()
			if gone {
				if err := r.client.Write(ctx, errorResponse(m.ID, jsonrpc.CodeInternalError, "stress proxy: the server's connection has ended")); err != nil {
					return err
				}
				continue
			}
			if err := r.server.Write(ctx, fwd); err != nil {
				return err
			}
		case *jsonrpc.Response: // an answer to a request of the server
			if n := size(m); n > r.in.limit() {
				m = tooLarge(m.ID, "client's answer", n, r.in.limit(), jsonrpc.CodeInternalError)
			}
			if err := r.server.Write(ctx, m); err != nil {
				return err
			}
		}
	}
}

// fromServer relays the server's messages until its connection ends,
// then answers the client's requests it left unanswered with an error.
func (r *relayState) fromServer(ctx context.Context) error {
	for {
		msg, err := r.server.Read(ctx)
		if err != nil {
			r.mu.Lock()
			if r.closing {
				// A command's pipe closed by its Wait can fail the read
				// ("file already closed") instead of ending it.
				err = io.EOF
			}
			r.closed = true
			left := r.pending
			r.pending = map[jsonrpc.ID]rewrite{}
			r.mu.Unlock()
			why := "stress proxy: the server's connection ended before it answered"
			if !errors.Is(err, io.EOF) {
				why += ": " + err.Error()
			}
			for id := range left {
				_ = r.client.Write(ctx, errorResponse(id, jsonrpc.CodeInternalError, why))
			}
			return err
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			r.mu.Lock()
			rw, ok := r.pending[m.ID]
			delete(r.pending, m.ID)
			r.mu.Unlock()
			if n := size(m); n > r.in.limit() {
				m = tooLarge(m.ID, "server's answer", n, r.in.limit(), jsonrpc.CodeInternalError)
			} else if ok && rw != nil {
				m = rw(m)
			}
			if err := r.client.Write(ctx, m); err != nil {
				return err
			}
		case *jsonrpc.Request: // the server's request or notification
			if n := size(m); n > r.in.limit() {
				if m.IsCall() {
					if err := r.server.Write(ctx, tooLarge(m.ID, "server's request", n, r.in.limit(), jsonrpc.CodeInvalidRequest)); err != nil {
						return err
					}
				}
				continue
			}
			if err := r.client.Write(ctx, m); err != nil {
				return err
			}
		}
	}
}

// size returns the bytes of JSON a message's payload holds (its params,
// result or error), a lower bound of its encoding.
func size(msg jsonrpc.Message) int {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		return len(m.Params) + len(m.Method)
	case *jsonrpc.Response:
		n := len(m.Result)
		if e, ok := m.Error.(*jsonrpc.Error); ok {
			n += len(e.Message) + len(e.Data)
		} else if m.Error != nil {
			n += len(m.Error.Error())
		}
		return n
	}
	return 0
}

// tooLarge is the error that replaces a message over the bound.
func tooLarge(id jsonrpc.ID, what string, n, limit int, code int64) *jsonrpc.Response {
	return errorResponse(id, code, fmt.Sprintf("stress proxy: the %s is %d bytes, over the proxy's bound of %d bytes per message", what, n, limit))
}
