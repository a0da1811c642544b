package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// This file holds the crash-safe side of a bundle. calls.jsonl is the
// source of truth: whole decisions are appended to it (the lines of one
// decision are contiguous and never interleave with another's) and it is
// fsynced in batches; decisions.parquet and summary.json are derived from it
// and can always be rebuilt. A run killed at any instant leaves a prefix of
// whole decisions, possibly followed by a torn tail (part of a line, or the
// first lines of a decision whose last lines were not written), which
// GroupReader reports so that a resume discards it.
//
// How far the file is known durable (fsynced) is recorded in manifest.json
// after each sync. Damage past that point is what a crash or power loss can
// leave (a torn write, a zeroed page followed by valid lines): a torn tail.
// Damage before it cannot come from a crash: the file was changed.

// CallLog appends decisions to calls.jsonl. It buffers whole decisions and
// writes them with one write call per batch; Sync makes them durable.
type CallLog struct {
	appendFile
	enc      *json.Encoder
	msgs     *MessageLog // where requests' messages go
	defaults *Defaults   // what lines leave out
}

// appendFile is a file written by appending buffered lines: the call log
// and the message log.
type appendFile struct {
	f    *os.File
	name string
	buf  bytes.Buffer
	size int64 // bytes in the file plus bytes buffered
	// synced says nothing was written since the last sync (or since
	// openAppend made the file durable).
	synced bool
}

// Flush writes the buffered lines with one write call.
func (a *appendFile) Flush() error {
	if a.buf.Len() == 0 {
		return nil
	}
	a.synced = false
	_, err := a.f.Write(a.buf.Bytes())
	a.buf.Reset()
	if err != nil {
		return fmt.Errorf("%s: %w", a.name, err)
	}
	return nil
}

// Sync writes the buffered lines and makes the file durable.
func (a *appendFile) Sync() error {
	if err := a.Flush(); err != nil {
		return err
	}
	if a.synced {
		return nil
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", a.name, err)
	}
	a.synced = true
	return nil
}

// Size is the length the file has once the buffer is written.
func (a *appendFile) Size() int64 { return a.size }

// flushAt is the buffered size at which Append writes the batch out.
const flushAt = 1 << 20

// OpenCallLog opens file for appending after its first size bytes, which
// must be whole decisions: anything after them (a torn tail) is cut off,
// and the bytes kept are made durable. The file is created when missing
// (size must then be 0).
func OpenCallLog(file string, size int64) (*CallLog, error) {
	f, err := openAppend(file, size)
	if err != nil {
		return nil, err
	}
	l := &CallLog{appendFile: appendFile{f: f, name: file, size: size, synced: true}}
	l.enc = json.NewEncoder(&l.buf)
	l.enc.SetEscapeHTML(false)
	return l, nil
}

// SetMessages makes Append write each request's messages to m, the
// bundle's messages.jsonl, and refer to them. The log then flushes, syncs
// and closes m, always before its own file. Append needs it.
func (l *CallLog) SetMessages(m *MessageLog) { l.msgs = m }

// SetDefaults makes Append leave out of each line what d holds for it; d
// must be in the bundle's defaults.json before the first line is written
// (KeepDefaults). Append needs it.
func (l *CallLog) SetDefaults(d *Defaults) { l.defaults = d }

// Messages returns the message log set by SetMessages, or nil.
func (l *CallLog) Messages() *MessageLog { return l.msgs }

// Append adds the call lines of decision d (of scenario s) and returns the
// offset and length in bytes of the lines in the file. endpoint, when not
// "", names the server that answered (user info is removed).
func (l *CallLog) Append(d *simulator.Decision, s *study.Scenario, endpoint string) (off, n int64, err error) {
	off = l.size
	before := l.buf.Len()
	endpoint = redact(endpoint)
	for _, c := range CallsOf(d, s) {
		c.Endpoint = endpoint
		if err := l.encode(&c); err != nil {
			l.buf.Truncate(before)
			l.size = off
			return 0, 0, fmt.Errorf("%s: decision %s: %w", l.name, d.Key, err)
		}
	}
	return off, l.size - off, l.flushFull()
}

// encode buffers the line of call c.
func (l *CallLog) encode(c *Call) error {
	if l.msgs == nil || l.defaults == nil {
		return errors.New("the call log has no message log or defaults table (SetMessages, SetDefaults)")
	}
	ln, err := l.compact(c)
	if err != nil {
		return err
	}
	before := l.buf.Len()
	if e := c.Env; e != nil && e.Compact && len(e.State) > 0 {
		err = l.encodeState(ln, before)
	} else {
		err = l.enc.Encode(ln)
	}
	l.size += int64(l.buf.Len() - before)
	return err
}

// stateMark is what stands for a compact final state while its line is
// encoded (encodeState).
const stateMark = `"state":"\u0000state\u0000"`

// encodeState buffers line ln, whose final state is compact, as
// encoding/json writes it, in one pass over the state instead of two
// (encoding/json compacts a json.RawMessage again): it encodes the line
// with stateMark in the state's place, then puts the state there. A line
// that holds the mark elsewhere too is encoded whole.
func (l *CallLog) encodeState(ln *storedCall, before int) error {
	c, e, m := *ln.Call, *ln.Call.Env, *ln
	e.State, c.Env, m.Call = json.RawMessage(stateMark[len(`"state":`):]), &e, &c
	if err := l.enc.Encode(&m); err != nil {
		return err
	}
	line := l.buf.Bytes()[before:]
	i := bytes.Index(line, []byte(stateMark))
	if i < 0 || bytes.Contains(line[i+1:], []byte(stateMark)) {
		l.buf.Truncate(before)
		return l.enc.Encode(ln)
	}
	tail := bytes.Clone(line[i+len(stateMark):])
	l.buf.Truncate(before + i + len(`"state":`))
	l.buf.Write(ln.Call.Env.State)
	l.buf.Write(tail)
	return nil
}

// flushFull writes the batch out once it reaches flushAt.
func (l *CallLog) flushFull() error {
	if l.buf.Len() >= flushAt {
		return l.Flush()
	}
	return nil
}

// AppendRaw appends lines already encoded (whole decisions).
func (l *CallLog) AppendRaw(b []byte) (off int64, err error) {
	off = l.size
	l.buf.Write(b)
	l.size += int64(len(b))
	return off, l.flushFull()
}

// compact is call line c with its request's messages replaced by refs
// into the message log: one ref for the leading messages up to the first
// assistant message (the rendered prompt, shared by every replicate and
// model), then one per message. The request's seed is left out when it is
// the call's, and what the defaults table holds (SetDefaults) is left out
// of the line.
func (l *CallLog) compact(c *Call) (*storedCall, error) {
	req := &c.Request
	ln := &storedCall{Call: c, Request: wireRequest{Temperature: req.Temperature, Options: req.Options, Tools: req.Tools}}
	ln.carry(l.defaults.carries(c))
	if req.Seed != c.Seed {
		seed := req.Seed
		ln.Request.Seed = &seed
	}
	k := 0
	for k < len(req.Messages) && req.Messages[k].Role != conditions.Assistant {
		k++
	}
	refs := make([]string, 0, len(req.Messages)-k+1)
	if k > 1 {
		ref, err := l.msgs.RefRun(req.Messages[:k])
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	} else {
		k = 0
	}
	for i := k; i < len(req.Messages); i++ {
		ref, err := l.msgs.Ref(&req.Messages[i])
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	ln.Request.Refs = refs
	return ln, nil
}

// Flush writes the buffered decisions with one write call, after the
// buffered messages they refer to.
func (l *CallLog) Flush() error {
	if l.msgs != nil {
		if err := l.msgs.Flush(); err != nil {
			return err
		}
	}
	return l.appendFile.Flush()
}

// Sync writes the buffered decisions and makes the file durable, after
// making the messages they refer to durable.
func (l *CallLog) Sync() error {
	if l.msgs != nil {
		if err := l.msgs.Sync(); err != nil {
			return err
		}
	}
	return l.appendFile.Sync()
}

// Close syncs and closes the file (and the message log).
func (l *CallLog) Close() error {
	err := l.Sync()
	if l.msgs != nil {
		err = errors.Join(err, l.msgs.Close())
	}
	return errors.Join(err, l.f.Close())
}

// redact drops user info (credentials) from a URL-shaped endpoint.
func redact(endpoint string) string {
	if endpoint == "" {
		return ""
	}
	if u, err := url.Parse(endpoint); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	return endpoint
}
