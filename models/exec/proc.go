package exec

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"sync"
	"time"
	"unicode/utf8"
)

// proc is one running program: requests go to its stdin, replies come
// from its stdout and are handed to the call waiting for their id.
type proc struct {
	cmd    *osexec.Cmd
	name   string   // the program as messages name it
	stdin  *os.File // write end of the program's stdin
	stdout *os.File // read end of the program's stdout
	stderr *tail
	max    int64 // longest reply line, bytes

	wmu sync.Mutex // one request line at a time

	mu        sync.Mutex
	pending   map[int64]chan result
	abandoned map[int64]bool // calls given up by their caller; a late reply is dropped
	reason    *fault         // why the program is gone, once it is
	dead      chan struct{}  // closed when the program is gone
	exited    chan struct{}  // closed when Wait returned
}

// result is a reply line handed to its call, or a fault that ends it.
type result struct {
	line  []byte
	reply Reply
	err   *fault
}

// fault is a transport fault of the program: its kind (a transport event
// kind) and message.
type fault struct {
	kind string
	msg  string
}

func (f *fault) Error() string { return f.msg }

// Fault kinds of the exec backend, as transport events record them.
const (
	kindStart     = "start"         // the program could not be started (missing, not executable, digest changed)
	kindExit      = "exit"          // the program exited or closed its stdout
	kindTimeout   = "timeout"       // no reply within the per-call deadline; the program was stopped
	kindMalformed = "malformed"     // a stdout line that is not a reply (not JSON, no id, an unknown id)
	kindTooLarge  = "too_large"     // a stdout line longer than the body cap
	kindProgram   = "program_error" // the program replied with an error (a vendor API's failure)
	kindProtocol  = "protocol"      // a reply in another protocol version (not retried)
)

// start runs the program with argv, its environment env, and reads its
// stdout until it ends. Its stderr is kept, and copied to stderrFile when
// it is not nil (closed when the program has exited).
func start(name, path string, argv, env []string, max int64, stderrFile io.Writer) (*proc, error) {
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
	p := &proc{name: name, stdin: inW, stdout: outR, stderr: newTail(64 << 10), max: max,
		pending: map[int64]chan result{}, abandoned: map[int64]bool{}, dead: make(chan struct{}), exited: make(chan struct{})}
	cmd := &osexec.Cmd{Path: path, Args: argv, Env: env, Stdin: inR, Stdout: outW}
	cmd.Stderr = p.stderr
	if stderrFile != nil {
		cmd.Stderr = io.MultiWriter(p.stderr, stderrFile)
	}
	cmd.WaitDelay = 2 * time.Second
	setProcAttr(cmd)
	err = cmd.Start()
	// The program holds its own ends now.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		if c, ok := stderrFile.(io.Closer); ok {
			c.Close()
		}
		return nil, err
	}
	p.cmd = cmd
	go func() {
		_ = cmd.Wait()
		if c, ok := stderrFile.(io.Closer); ok {
			c.Close()
		}
		close(p.exited)
	}()
	go p.read()
	return p, nil
}

// read hands each stdout line to its call until stdout ends or a line
// breaks the protocol, then ends the program.
func (p *proc) read() {
	br := bufio.NewReaderSize(p.stdout, 64<<10)
	for {
		line, err := readLine(br, p.max)
		if err != nil {
			switch {
			case errors.Is(err, errTooLong):
				p.kill(&fault{kindTooLarge, fmt.Sprintf("program %s wrote a stdout line over %d bytes; stopped", p.name, p.max)})
			case errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed):
				p.kill(nil)
			default:
				p.kill(&fault{kindExit, fmt.Sprintf("program %s: reading its stdout: %v", p.name, err)})
			}
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, id, perr := parseReply(line)
		p.mu.Lock()
		ch, ok := p.pending[id]
		if ok {
			delete(p.pending, id)
		}
		late := p.abandoned[id]
		delete(p.abandoned, id)
		p.mu.Unlock()
		switch {
		case ok && perr != nil:
			// A reply to a call in flight, in another protocol version.
			ch <- result{line: line, err: &fault{kindProtocol, fmt.Sprintf("program %s: %v", p.name, perr)}}
		case perr != nil:
			p.kill(&fault{kindMalformed, fmt.Sprintf("program %s wrote a line that is not a reply (%v): %s; stopped", p.name, perr, clip(line, 200))})
			return
		case ok:
			ch <- result{line: line, reply: r}
		case late:
			// The caller gave up on it; drop it.
		default:
			p.kill(&fault{kindMalformed, fmt.Sprintf("program %s answered id %d, which no request in flight has: %s; stopped", p.name, id, clip(line, 200))})
			return
		}
	}
}

var errTooLong = errors.New("line too long")

// readLine reads one line of at most max bytes (newline excluded).
func readLine(br *bufio.Reader, max int64) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if int64(len(line)+len(chunk)) > max+1 {
			return nil, errTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil // a last line without its newline
		default:
			return nil, err
		}
	}
}

// kill ends the program (its whole process group) for reason, or, with a
// nil reason, records that it ended on its own; every call in flight then
// fails with the reason. Only the first reason counts.
func (p *proc) kill(reason *fault) {
	p.mu.Lock()
	if p.reason != nil {
		p.mu.Unlock()
		return
	}
	if reason == nil {
		// Stdout ended: the program exited, or closed it. Say how.
		p.mu.Unlock()
		select {
		case <-p.exited:
		case <-time.After(2 * time.Second):
		}
		p.mu.Lock()
		if p.reason != nil {
			p.mu.Unlock()
			return
		}
		reason = &fault{kindExit, fmt.Sprintf("program %s %s%s", p.name, exitText(p.cmd), p.stderr.Note())}
	} else {
		reason.msg += p.stderr.Note()
	}
	p.reason = reason
	pending := p.pending
	p.pending = map[int64]chan result{}
	p.mu.Unlock()
	killGroup(p.cmd)
	p.stdin.Close()
	p.stdout.Close()
	for _, ch := range pending {
		select {
		case ch <- result{err: reason}:
		default:
		}
	}
	close(p.dead)
}

// exitText says how the program ended, as far as is known.
func exitText(cmd *osexec.Cmd) string {
	if st := cmd.ProcessState; st != nil {
		if st.Exited() {
			return fmt.Sprintf("exited with status %d", st.ExitCode())
		}
		return "ended: " + st.String()
	}
	return "closed its stdout"
}

// gone returns why the program is gone, or nil while it runs.
func (p *proc) gone() *fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reason
}

// call sends one request line and waits for its reply until ctx ends. A
// deadline passed stops the program (a hang); a caller that gives up for
// another reason leaves it running, and its late reply is dropped.
func (p *proc) call(ctx context.Context, id int64, line []byte) result {
	if err := ctx.Err(); err != nil {
		// Note: the deadline passed while the call waited for the program
		// to start; the program is not at fault, and is left running.
		return result{err: &fault{kindTimeout, fmt.Sprintf("program %s: request %d not sent: %v", p.name, id, err)}}
	}
	ch := make(chan result, 1)
	p.mu.Lock()
	if p.reason != nil {
		r := p.reason
		p.mu.Unlock()
		return result{err: r}
	}
	p.pending[id] = ch
	p.mu.Unlock()
	if f := p.write(ctx, line); f != nil {
		return result{err: f}
	}
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			p.kill(&fault{kindTimeout, fmt.Sprintf("program %s sent no reply to request %d within the per-call deadline; stopped", p.name, id)})
			if r := <-ch; r.err == nil {
				return r // it answered just in time
			}
			return result{err: &fault{kindTimeout, p.gone().msg}}
		}
		p.mu.Lock()
		if _, ok := p.pending[id]; ok {
			delete(p.pending, id)
			p.abandoned[id] = true
		}
		p.mu.Unlock()
		return result{err: &fault{kindTimeout, fmt.Sprintf("program %s: request %d abandoned: %v", p.name, id, ctx.Err())}}
	}
}

// write sends one line, within ctx's deadline: a program that does not
// read its stdin is stopped.
func (p *proc) write(ctx context.Context, line []byte) *fault {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if dl, ok := ctx.Deadline(); ok {
		_ = p.stdin.SetWriteDeadline(dl)
	}
	_, err := p.stdin.Write(line)
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		p.kill(&fault{kindTimeout, fmt.Sprintf("program %s did not read its stdin within the per-call deadline; stopped", p.name)})
	} else {
		// A closed pipe: the program is gone, or going; say how.
		select {
		case <-p.dead:
		case <-time.After(3 * time.Second):
			p.kill(&fault{kindExit, fmt.Sprintf("program %s: writing its stdin: %v", p.name, err)})
		}
	}
	return p.gone()
}

// stop ends the program: stdin closed, then, after grace, its process
// group killed.
func (p *proc) stop(grace time.Duration) {
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	p.kill(&fault{kindExit, fmt.Sprintf("program %s stopped", p.name)})
	<-p.exited
}

// tail keeps the last bytes a program wrote to stderr.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
	n   int64 // bytes written in all
}

func newTail(max int) *tail { return &tail{max: max} }

// Write keeps the last max bytes of everything written.
func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n += int64(len(b))
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

// Last returns at most the last n bytes kept, starting at a character.
func (t *tail) Last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > n {
		b = b[len(b)-n:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return string(b)
}

// Note is "; stderr: …" with the last 1 KiB of stderr, or "".
func (t *tail) Note() string {
	s := string(bytes.TrimSpace([]byte(t.Last(1024))))
	if s == "" {
		return ""
	}
	return "; stderr: " + s
}

// clip quotes b, cut to at most n bytes.
func clip(b []byte, n int) string {
	if len(b) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", b[:cut])
	}
	return fmt.Sprintf("%q", b)
}
