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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SDKModule is the module path of the MCP client library capture uses.
const SDKModule = "github.com/modelcontextprotocol/go-sdk"

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
			if d.Path == SDKModule {
				v = d.Version
				if d.Replace != nil {
					v += " => " + d.Replace.Path + " " + d.Replace.Version
				}
			}
		}
	}
	return SDKModule + " " + v
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
	proc    *process // nil for HTTP
}

// connect starts or reaches the server and initializes a session. On
// failure the conn it returns still holds the frames and stderr, with no
// session, and the process has been stopped.
func connect(ctx context.Context, t *Target, o *Options) (*conn, error) {
	rec := newRecorder(o.MaxFrameBytes, o.MaxServerBytes, o.MaxNotifications)
	caps := &mcp.ClientCapabilities{} // Note: no roots capability unless asked.
	if len(o.Roots) > 0 {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "stress-capture", Version: "1"}, &mcp.ClientOptions{
		Capabilities: caps,
	})
	for _, r := range o.Roots {
		client.AddRoots(&mcp.Root{URI: r})
	}
	var (
		transport mcp.Transport
		proc      *process
	)
	if t.URL != "" {
		check := func(host string) error { return hostAllowed(host, o.AllowHosts) }
		hc := &http.Client{
			Transport: &teeTransport{base: http.DefaultTransport, rec: rec, check: check},
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return errors.New("redirects are not followed")
			},
		}
		transport = &mcp.StreamableClientTransport{Endpoint: t.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	} else {
		p, err := startProcess(t, rec, o.grace())
		if err != nil {
			return &conn{rec: rec}, err
		}
		proc = p
		transport = &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}
	}
	cctx, cancel := context.WithTimeout(ctx, o.timeout())
	defer cancel()
	cs, err := client.Connect(cctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: o.ProtocolVersion})
	if err != nil {
		c := &conn{rec: rec, proc: proc}
		_, _ = c.close()
		return c, fmt.Errorf("connect: %w", err)
	}
	return &conn{session: cs, rec: rec, proc: proc}, nil
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

// stderr returns what a stdio server wrote to stderr (bounded).
func (c *conn) stderr() []byte {
	if c.proc == nil {
		return nil
	}
	return c.proc.stderr.Bytes()
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
	p := &process{cmd: cmd, stderr: &capBuffer{max: 64 << 10}, grace: grace, done: make(chan struct{})}
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
	p.stdin = &teeWriter{w: inW, s: lineSplitter{rec: rec, dir: Send}}
	p.stdout = newStdoutPump(outR, rec)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// How a stdio server ended (Server.Exit).
const (
	ExitClean      = "exited"     // it exited within the grace period after stdin closed
	ExitTerminated = "terminated" // it needed SIGTERM
	ExitKilled     = "killed"     // it needed SIGKILL
)

// stop closes stdin, waits the grace period for the server to exit, then
// sends SIGTERM to its process group, and SIGKILL a second later. Some
// servers ignore EOF on stdin; this bounds how long one can linger.
// The pump then records what the server wrote up to its exit.
func (p *process) stop() (string, error) {
	p.once.Do(func() {
		p.stdin.Close()
		p.how = ExitClean
		defer func() { p.stdout.finish(time.Second) }()
		if p.wait(p.grace) {
			return
		}
		pgid := p.cmd.Process.Pid
		p.how = ExitTerminated
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		if p.wait(time.Second) {
			return
		}
		p.how = ExitKilled
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		if !p.wait(5 * time.Second) {
			p.stopErr = fmt.Errorf("server %s did not exit after SIGKILL", p.cmd.Path)
		}
	})
	return p.how, p.stopErr
}

func (p *process) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// capBuffer keeps the first max bytes written to it.
type capBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// Bytes returns a copy of what was kept.
func (b *capBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
