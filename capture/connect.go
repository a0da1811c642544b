package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/internal/input"
)

// sdkModule is the module path of the MCP client library capture uses.
const sdkModule = "github.com/modelcontextprotocol/go-sdk"

// sdkRequired is the SDK version go.mod requires. Note: test binaries
// carry no dependency versions in their build information, so SDKVersion
// falls back to it; a test keeps it in step with go.mod.
const sdkRequired = "v1.8.0"

// SDKVersion returns the client library and its version from the build
// information, e.g. "github.com/modelcontextprotocol/go-sdk v1.8.0".
func SDKVersion() string {
	v := sdkRequired
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == sdkModule {
				v = d.Version
				if d.Replace != nil {
					v += " => " + d.Replace.Path + " " + d.Replace.Version
				}
			}
		}
	}
	return sdkModule + " " + v
}

// Target names one server to capture from: a command run over stdio, or a
// streamable-HTTP endpoint.
type Target struct {
	// Label is the user's name for the server; its pseudonym is derived
	// from it, so the same label and salt give the same pseudonym.
	Label string
	// Command is the server's argv for stdio.
	Command []string
	// Dir and Env are the command's working directory and extra
	// environment (appended to this process's environment).
	Dir string
	Env []string
	// URL is a streamable-HTTP endpoint (http or https).
	URL string
}

// Transport returns "stdio" or "http".
func (t *Target) Transport() string {
	if t.URL != "" {
		return "http"
	}
	return "stdio"
}

// check validates a target: exactly one of Command and URL; a URL host on
// the loopback or named in allowHosts.
func (t *Target) check(allowHosts []string) error {
	if t.Label == "" {
		return errors.New("target has no label")
	}
	if (len(t.Command) == 0) == (t.URL == "") {
		return fmt.Errorf("target %s: want exactly one of a command and a URL", t.Label)
	}
	if t.URL != "" {
		u, err := url.Parse(t.URL)
		if err != nil {
			return fmt.Errorf("target %s: URL: %w", t.Label, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("target %s: URL scheme %q: want http or https", t.Label, u.Scheme)
		}
		if u.User != nil {
			return fmt.Errorf("target %s: URL must not carry credentials", t.Label)
		}
		if err := hostAllowed(u.Hostname(), allowHosts); err != nil {
			return fmt.Errorf("target %s: %w", t.Label, err)
		}
	}
	return nil
}

// hostAllowed admits loopback hosts and the hosts the user named.
func hostAllowed(host string, allow []string) error {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" {
		return nil
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return nil
	}
	for _, a := range allow {
		if strings.EqualFold(strings.TrimSuffix(a, "."), h) {
			return nil
		}
	}
	return fmt.Errorf("%w: %q is not a loopback address; name it with -allow-host to capture from it", errHost, host)
}

// conn is a live session with its recorder and the means to end it.
type conn struct {
	session *mcp.ClientSession
	rec     *Recorder
	proc    *process      // nil for HTTP
	label   string        // the target's label
	capped  *CapTransport // HTTP: the transport that caps answers (nil for stdio)
}

// connect starts or reaches the server and initializes a session. On
// failure the conn it returns still holds the frames and stderr, with no
// session, and the process has been stopped.
func connect(ctx context.Context, t *Target, o *Options) (*conn, error) {
	rec := newRecorder(o.MaxFrameBytes, o.MaxServerBytes, o.MaxNotifications)
	caps := &mcp.ClientCapabilities{} // Note: no roots capability unless asked.
	// Note: roots are deprecated as of protocol 2026-07-28 but still how
	// servers such as server-filesystem learn what they may read; capture
	// offers them only when -root is given.
	if len(o.Roots) > 0 {
		caps.RootsV2 = &mcp.RootCapabilities{} //lint:ignore SA1019 see the note above
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "stress-capture", Version: "1"}, &mcp.ClientOptions{
		Capabilities: caps,
	})
	for _, r := range o.Roots {
		client.AddRoots(&mcp.Root{URI: r}) //lint:ignore SA1019 see the note above
	}
	var (
		transport mcp.Transport
		proc      *process
		capped    *CapTransport
	)
	if t.URL != "" {
		check := func(host string) error { return hostAllowed(host, o.AllowHosts) }
		capped = CapResponses(nil, rec.frameCap())
		hc := &http.Client{
			// Note: the cap is under the tee, so a response past it is
			// recorded cut, as a stdio frame past the SDK's line cap is.
			Transport: &teeTransport{base: capped, rec: rec, check: check},
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return errors.New("redirects are not followed")
			},
		}
		transport = &mcp.StreamableClientTransport{Endpoint: t.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	} else {
		p, err := startProcess(t, rec, o.grace())
		if err != nil {
			return &conn{rec: rec, label: t.Label}, err
		}
		proc = p
		transport = &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}
	}
	cctx, cancel := context.WithTimeout(ctx, o.timeout())
	defer cancel()
	cs, err := client.Connect(cctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: o.ProtocolVersion})
	c := &conn{session: cs, rec: rec, proc: proc, label: t.Label, capped: capped}
	if err != nil {
		err = c.explain(err, 0) // before close: the server's state is still its own
		c.session = nil
		_, _ = c.close()
		return c, fmt.Errorf("connect: %w", err)
	}
	return c, nil
}

// exchange returns a call's request and response frames. The response is
// awaited (briefly: see Recorder.AwaitExchange) only when the SDK got one,
// that is when err is nil or a JSON-RPC error; after a timeout or a broken
// connection there is none to wait for.
func (c *conn) exchange(since int, method string, err error) (req, resp *Frame) {
	var rpc *jsonrpc.Error
	if err == nil || errors.As(err, &rpc) {
		return c.rec.AwaitExchange(since, method, frameWait)
	}
	return c.rec.Exchange(since, method)
}

// exitWait bounds the wait for a stdio server to exit once its stdout has
// closed, so that its exit status can be reported.
const exitWait = time.Second

// explain adds to a failed call's error what the connection shows: how a
// stdio server ended if it did, with the last lines of its stderr; a
// non-JSON line it wrote; responses with an id no request had (frames from
// index since on). A JSON-RPC error is the server's answer and is returned
// as it is.
func (c *conn) explain(err error, since int) error {
	var rpc *jsonrpc.Error
	if err == nil || errors.As(err, &rpc) {
		return err
	}
	var why []string
	if c.proc != nil && c.proc.stdout.endedFirst() {
		// Note: the server gave up its side of the connection with its
		// stdin still open; its exit status follows at once. A server
		// that exits because its stdin was closed (the SDK does so when
		// it gives up on the connection) says nothing new, and is not
		// awaited.
		if how, ok := c.proc.ended(exitWait); ok {
			why = append(why, c.ending(how))
		}
	}
	why = append(why, c.rec.explain(since)...)
	if len(why) == 0 {
		return err
	}
	return fmt.Errorf("%s (%w)", strings.Join(why, "; "), err)
}

// ending says how a stdio server ended, with the last lines of its
// stderr.
func (c *conn) ending(how string) string {
	w := fmt.Sprintf("server %s %s", c.label, how)
	if !c.proc.stdout.endedFirst() {
		w += " after its stdin was closed"
	}
	if tail := c.proc.stderr.lastLines(3); len(tail) > 0 {
		w += "; its stderr ends: " + strings.Join(tail, " ")
	}
	return w
}

// gone returns an error when a stdio server has exited: no request can
// reach it any more.
func (c *conn) gone() error {
	if c.proc == nil {
		return nil
	}
	if how, ok := c.proc.ended(0); ok {
		return errors.New(c.ending(how))
	}
	return nil
}

// close ends the session and, for stdio, the process (promptly: see
// process.stop), saying how it ended ("" for HTTP).
func (c *conn) close() (string, error) {
	var err error
	if c.session != nil {
		err = c.session.Close()
	}
	how := ""
	if c.proc != nil {
		var perr error
		if how, perr = c.proc.stop(); perr != nil {
			err = perr
		}
	}
	return how, err
}

// collect takes the frames, their counts and the stderr of a server's
// connection, which has been closed, and notes what its caps left out and
// how a stdio server ended on its own.
func (s *Server) collect(c *conn, o *Options) {
	s.Frames, s.FrameStats = c.rec.Frames(), c.rec.Stats()
	st := s.FrameStats
	var notes []string
	if c.proc != nil {
		s.Stderr = c.proc.stderr.Bytes() // bounded
		if how, ok := c.proc.ended(0); ok {
			switch {
			case c.proc.stdout.endedFirst():
				notes = append(notes, fmt.Sprintf("the server %s on its own, before capture closed its stdin", how))
			case c.proc.how == exitClean && !c.proc.cmd.ProcessState.Success():
				// Note: a server that exits on its own right after its
				// last answer races capture closing its stdin; a status
				// other than 0 is worth a note whichever came first.
				notes = append(notes, fmt.Sprintf("the server %s after capture closed its stdin", how))
			}
		}
	}
	if st.DroppedNotifications > 0 {
		notes = append(notes, fmt.Sprintf("dropped %d messages the server sent on its own past -max-notifications %d per request (marked in the frames file)",
			st.DroppedNotifications, c.rec.notificationCap()))
	}
	if st.DroppedOverBytes > 0 {
		notes = append(notes, fmt.Sprintf("dropped %d frames past -max-server-bytes %d (marked in the frames file)", st.DroppedOverBytes, c.rec.serverCap()))
	}
	if st.Truncated > 0 {
		notes = append(notes, fmt.Sprintf("recorded %d frames truncated to -max-frame-bytes %d (%d bytes cut)", st.Truncated, c.rec.frameCap(), st.CutBytes))
	}
	if st.Unfinished > 0 {
		notes = append(notes, fmt.Sprintf("recorded %d frames unfinished: the stream stopped inside them", st.Unfinished))
	}
	if st.UnknownIDs > 0 {
		notes = append(notes, fmt.Sprintf("the server sent %d responses with an id no request had", st.UnknownIDs))
	}
	for _, n := range notes {
		o.logf("capture %s: %s", s.Pseudonym, n)
	}
	s.Notes = append(s.Notes, notes...)
}

// process is a server started over stdio, in its own process group.
type process struct {
	cmd     *exec.Cmd
	stdin   *teeWriter
	stdout  *stdoutPump
	stderr  *capBuffer
	grace   time.Duration
	done    chan struct{}
	err     error
	once    sync.Once
	how     string
	stopErr error
}

func startProcess(t *Target, rec *Recorder, grace time.Duration) (*process, error) {
	cmd := exec.Command(t.Command[0], t.Command[1:]...)
	cmd.Dir = t.Dir
	cmd.Env = append(os.Environ(), t.Env...)
	// Note: a process group lets stop reach children a launcher spawned
	// (npx, sh -c); only this group is ever signalled.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &process{cmd: cmd, stderr: &capBuffer{max: 64 << 10, tailMax: 4 << 10}, grace: grace, done: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("start %s: %w", t.Command[0], err)
	}
	inR.Close()
	outW.Close()
	p.stdout = newStdoutPump(outR, rec)
	// Note: the client closing the server's stdin, and a write to it
	// failing (the server no longer reads it), tell the pump who ended
	// the connection first.
	p.stdin = &teeWriter{w: inW, s: lineSplitter{rec: rec, dir: dirSend},
		onClose: func() { p.stdout.mark(firstClient) }, onBroken: func() { p.stdout.mark(firstServer) }}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// How a stdio server ended (Server.Exit).
const (
	exitClean      = "exited"     // it exited within the grace period after stdin closed
	exitTerminated = "terminated" // it needed SIGTERM
	exitKilled     = "killed"     // it needed SIGKILL
)

// stop closes stdin, waits the grace period for the server to exit, then
// sends SIGTERM to its process group, and SIGKILL a second later. Some
// servers ignore EOF on stdin; this bounds how long one can linger.
// The pump then records what the server wrote up to its exit.
func (p *process) stop() (string, error) {
	p.once.Do(func() {
		p.stdin.Close()
		p.how = exitClean
		defer func() { p.stdout.finish(time.Second) }()
		if within(p.done, p.grace) {
			return
		}
		pgid := p.cmd.Process.Pid
		p.how = exitTerminated
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		if within(p.done, time.Second) {
			return
		}
		p.how = exitKilled
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		if !within(p.done, 5*time.Second) {
			p.stopErr = fmt.Errorf("server %s did not exit after SIGKILL", p.cmd.Path)
		}
	})
	return p.how, p.stopErr
}

// ended waits up to d for the process to end and says how it did: "exited
// with status 3", "was killed by signal 9 (killed)".
func (p *process) ended(d time.Duration) (string, bool) {
	if !within(p.done, d) {
		return "", false
	}
	st := p.cmd.ProcessState
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (%v)", int(ws.Signal()), ws.Signal()), true
	}
	return fmt.Sprintf("exited with status %d", st.ExitCode()), true
}

// within waits up to d for done to be closed and reports whether it was
// (at once, without waiting, when d is 0 or less).
func within(done <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// capBuffer keeps the first max bytes written to it and the last tailMax.
type capBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	tail    []byte // the last tailMax bytes written
	tailMax int
	n       int64 // bytes written
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(len(p))
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	if b.tailMax > 0 {
		b.tail = append(b.tail, p[max(len(p)-b.tailMax, 0):]...)
		if over := len(b.tail) - b.tailMax; over > 0 {
			b.tail = append(b.tail[:0], b.tail[over:]...)
		}
	}
	return len(p), nil
}

// Bytes returns a copy of what was kept: all of it, or, past max, the
// first max bytes, a line saying how many were left out, and the last
// tailMax.
func (b *capBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := bytes.Clone(b.buf.Bytes())
	if b.n <= int64(len(out)) {
		return out
	}
	tail := b.tail
	if skipped := b.n - int64(len(out)) - int64(len(tail)); skipped < 0 {
		tail = tail[-skipped:] // the head holds its start
	} else if skipped > 0 {
		out = fmt.Appendf(out, "\n[stress capture left out %d bytes here]\n", skipped)
	}
	return append(out, tail...)
}

// lastLines returns up to n of the last non-blank lines written, each
// quoted, bounded and printable.
func (b *capBuffer) lastLines(n int) []string {
	b.mu.Lock()
	text := string(b.tail)
	if b.tailMax == 0 {
		text = b.buf.String()
	}
	b.mu.Unlock()
	var out []string
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			out = append(out, input.Quote(l))
		}
	}
	slices.Reverse(out)
	return out
}
