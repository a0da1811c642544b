package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/env/proxy"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/study"
)

// proxyLong is what stress help proxy prints after the forms.
const proxyLong = `proxy puts a fault-injecting MCP proxy between an MCP client and any MCP
server: the command after -- (started over stdio) or the streamable HTTP
endpoint -upstream URL. It applies the one fault of -fault FILE to the
calls of one tool, on the wall clock, and passes everything else through
unchanged. It serves over stdio (stdin and stdout: give the client
"stress proxy -fault FILE -- COMMAND ARGS..." as the server's command) or,
with -http ADDR, streamable HTTP at http://ADDR/mcp (a command upstream is
started once per session). -upstream needs -http. On exit (stdin closed,
SIGINT) it prints on stderr one line per tools/call it saw: the tool and
what the proxy did (passed, failed, lost, partial, noop, auth). With
-shape it serves every failed call, the injected one and the server's
own, in an error shape proposed for MCP, as a server following that
shape's proposals alone would send it (docs/error-shapes.md). The fault
file's fields, with one example per class: docs/proxy.md.`

// faultCap bounds a fault file.
var faultCap = input.Cap{What: "a fault file", Bytes: 1 << 20}

// cmdProxy runs stress proxy.
func cmdProxy(fs *flag.FlagSet) action {
	faultFile := fs.String("fault", "", "the fault to inject, a JSON `FILE` (docs/proxy.md)")
	addr := fs.String("http", "", "serve streamable HTTP on `ADDR` (host:port, loopback; port 0 picks one), at /mcp (default: stdio)")
	upstream := fs.String("upstream", "", "forward to the streamable HTTP endpoint `URL` (with -http) instead of a command")
	shape := fs.String("shape", "", fmt.Sprintf("serve every failed call in error shape `SHAPE`, one of %v (docs/error-shapes.md)", study.ShapeConditions))
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if (len(args) > 0) == (*upstream != "") {
			return usageError("proxy: give exactly one of -upstream URL and -- COMMAND ARGS...")
		}
		data, err := input.ReadFile(*faultFile, faultCap)
		if err != nil {
			return usageError("proxy: flag -fault: %v", err)
		}
		f, err := proxy.ParseFault(*faultFile, data)
		if err != nil {
			return usageError("proxy: flag -fault: %v", err)
		}
		in := proxy.NewInjector(f, proxy.WallClock())
		if *shape != "" {
			if c := study.Condition(*shape); !c.Shape() {
				return usageError("proxy: flag -shape: %q is not an error shape (want one of %v)", *shape, study.ShapeConditions)
			}
			in.Reshape = proxy.ShapeAnswers(study.Condition(*shape), f)
		}
		var u *url.URL
		if *upstream != "" {
			if *addr == "" {
				return usageError("proxy: flag -upstream needs -http: a stdio client of an HTTP server is not relayed")
			}
			if u, err = url.Parse(*upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usageError("proxy: flag -upstream: %q is not an http(s) URL", *upstream)
			}
		}
		what := fmt.Sprintf("%s on %s", f.Class, f.Tool)
		if *addr == "" {
			fmt.Fprintf(stderr, "stress proxy: %s, over stdio, to %s\n", what, args[0])
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Stderr = stderr
			err = proxy.Serve(ctx, &mcp.IOTransport{Reader: os.Stdin, Writer: nopWriteCloser{stdout}},
				&mcp.CommandTransport{Command: cmd, TerminateDuration: proxy.TerminateGrace}, in)
			if errors.Is(err, context.Canceled) {
				err = nil
			}
		} else {
			err = serveProxy(ctx, *addr, u, args, in, what, stderr)
		}
		printCalls(stderr, in)
		if err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		return nil
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// printCalls prints one line per call the proxy saw.
func printCalls(w io.Writer, in *proxy.Injector) {
	calls := in.Calls()
	fmt.Fprintf(w, "stress proxy: %d calls\n", len(calls))
	for i, c := range calls {
		what := c.Injected
		if what == "" {
			what = "passed"
		}
		fmt.Fprintf(w, "stress proxy: call %d: %s %s\n", i+1, c.Tool, what)
	}
}

// serveProxy serves streamable HTTP at http://addr/mcp until ctx ends,
// to upstream u or to command args (one process per session).
func serveProxy(ctx context.Context, addr string, u *url.URL, args []string, in *proxy.Injector, what string, stderr io.Writer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError("proxy: flag -http: %v", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageError("proxy: flag -http: %q is not a loopback address", host)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("flag -http: %w", err)
	}
	var h http.Handler
	to := ""
	if u != nil {
		h, to = proxy.Handler(u, nil, in), u.String()
	} else {
		c := &commandSessions{args: args, in: in, stderr: stderr, live: map[string]*session{}}
		defer c.closeAll()
		h, to = proxy.GuardHost(c), args[0]
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "stress proxy: %s, on http://%s/mcp, to %s\n", what, ln.Addr(), to)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return nil
}

// commandSessions serves streamable HTTP with one command per session:
// an initialize without a session starts the command and relays the
// session's messages to it through the injector (the sessions of
// protocol versions before 2026-07-28, which begin with initialize).
type commandSessions struct {
	args   []string
	in     *proxy.Injector
	stderr io.Writer

	mu   sync.Mutex
	live map[string]*session
	wg   sync.WaitGroup
}

// A session is one client's transport and its relay's client side.
type session struct {
	t    *mcp.StreamableServerTransport
	conn mcp.Connection
}

func (c *commandSessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	c.mu.Lock()
	s := c.live[id]
	c.mu.Unlock()
	if s == nil {
		if id != "" {
			http.Error(w, "stress proxy: session not found", http.StatusNotFound)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || r.Method != http.MethodPost || !bytes.Contains(body, []byte(`"initialize"`)) {
			http.Error(w, "stress proxy: a command upstream over HTTP begins each session with initialize", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if s, err = c.start(r.Context()); err != nil {
			http.Error(w, "stress proxy: "+err.Error(), http.StatusBadGateway)
			return
		}
	}
	s.t.ServeHTTP(w, r)
	if r.Method == http.MethodDelete {
		c.end(id)
	}
}

// end closes session id's client side, which ends its relay and stops
// its command.
func (c *commandSessions) end(id string) {
	c.mu.Lock()
	s := c.live[id]
	delete(c.live, id)
	c.mu.Unlock()
	if s != nil && s.conn != nil {
		s.conn.Close()
	}
}

// start starts a session: its transport, its command and the relay.
func (c *commandSessions) start(ctx context.Context) (*session, error) {
	s := &session{t: &mcp.StreamableServerTransport{SessionID: rand.Text()}}
	cmd := exec.Command(c.args[0], c.args[1:]...)
	cmd.Stderr = c.stderr
	up := &mcp.CommandTransport{Command: cmd, TerminateDuration: proxy.TerminateGrace}
	ready := make(chan error, 1)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		err := proxy.Serve(context.WithoutCancel(ctx), &connected{s: s, ready: ready}, up, c.in)
		select {
		case ready <- err:
		default:
		}
		c.end(s.t.SessionID)
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.live[s.t.SessionID] = s
	c.mu.Unlock()
	return s, nil
}

// connected is the transport of a session's client side: it keeps the
// connection and reports that the upstream has started.
type connected struct {
	s     *session
	ready chan error
}

func (c *connected) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.s.t.Connect(ctx)
	c.s.conn = conn
	c.ready <- err
	return conn, err
}

// closeAll ends every session and waits for their commands to stop.
func (c *commandSessions) closeAll() {
	c.mu.Lock()
	ids := make([]string, 0, len(c.live))
	for id := range c.live {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.end(id)
	}
	c.wg.Wait()
}
