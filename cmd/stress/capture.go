package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpstress/stress/capture"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/internal/outdir"
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// splitCommand splits a command line into words at blanks, honouring
// single and double quotes and backslash escapes (no other shell syntax).
// Leading NAME=VALUE words become environment entries.
func splitCommand(s string) (env, argv []string, err error) {
	var words []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == '\'':
			cur.WriteRune(r)
		case r == '\\' && i+1 < len(rs) && quote != '\'':
			i++
			cur.WriteRune(rs[i])
			inWord = true
		case quote == '"':
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, nil, fmt.Errorf("unclosed %c quote", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	for len(words) > 0 && envName.MatchString(words[0]) {
		env, words = append(env, words[0]), words[1:]
	}
	if len(words) == 0 {
		return nil, nil, errors.New("no command")
	}
	return env, words, nil
}

// parseTargets reads the -stdio and -http flags (LABEL=COMMAND, LABEL=URL).
func parseTargets(stdio, web []string) ([]capture.Target, error) {
	var out []capture.Target
	for _, s := range stdio {
		label, cmdline, ok := strings.Cut(s, "=")
		if !ok || label == "" {
			return nil, usageError("capture: flag -stdio %q: want LABEL=COMMAND", s)
		}
		env, argv, err := splitCommand(cmdline)
		if err != nil {
			return nil, usageError("capture: flag -stdio %q: %v", s, err)
		}
		out = append(out, capture.Target{Label: label, Command: argv, Env: env})
	}
	for _, s := range web {
		label, url, ok := strings.Cut(s, "=")
		if !ok || label == "" || url == "" {
			return nil, usageError("capture: flag -http %q: want LABEL=URL", s)
		}
		out = append(out, capture.Target{Label: label, URL: url})
	}
	return out, nil
}

// loadSalt reads the salt file, creating it with a random salt when it does
// not exist.
func loadSalt(file string) ([]byte, error) {
	data, err := input.ReadFile(file, input.Salt)
	if errors.Is(err, fs.ErrNotExist) {
		salt, err := newSalt()
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(file, append(salt, '\n'), 0o600); err != nil {
			return nil, fmt.Errorf("flag -salt-file: %w", err)
		}
		return salt, nil
	}
	if err != nil {
		return nil, fmt.Errorf("flag -salt-file: %w", err)
	}
	salt := []byte(strings.TrimSpace(string(data)))
	if len(salt) < 16 {
		return nil, fmt.Errorf("flag -salt-file: %s holds %d bytes; want at least 16", file, len(salt))
	}
	return salt, nil
}

// newSalt is a random pseudonym salt: 32 bytes in hexadecimal.
func newSalt() ([]byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return []byte(hex.EncodeToString(b)), nil
}

// captureLong is what stress help capture says after the forms.
const captureLong = `Connects to live MCP servers with the Go SDK, sends low-risk probes (a
nonexistent tool; a wrong JSON type and a missing required field on one
read-only tool; an out-of-domain sentinel on allow-listed tools only), and
writes a pseudonymous corpus (DIR/corpus), a manifest for 'stress run'
(DIR/manifest.yaml) and the private raw frames and pseudonym key
(DIR/private: never publish it). COMMAND is split at blanks (quotes and
backslashes work; leading NAME=VALUE words set its environment).

A record the corpus loader rejects, or in which the scrubber still finds
something, is quarantined (DIR/private/quarantine, with the reason). The
exit status is 1 if a server failed or a record was quarantined, after
everything else is written.
`

// cmdCapture defines capture's flags on fs and returns the action that
// probes live MCP servers and writes a pseudonymous corpus.
func cmdCapture(fs *flag.FlagSet) action {
	out := fs.String("out", "", "output directory `DIR`, new or empty (required)")
	var o capture.Options
	var stdio, web, sentinels repeatedFlag
	fs.Var(&stdio, "stdio", "a server run over stdio, `LABEL=COMMAND` (repeatable)")
	fs.Var(&web, "http", "a streamable-HTTP server, `LABEL=URL`, on the loopback unless -allow-host names it (repeatable)")
	fs.Var((*repeatedFlag)(&o.Roots), "root", "advertise the roots capability with this root `URI` (repeatable; default: no roots capability)")
	fs.Var((*repeatedFlag)(&o.ReadOnly), "read-only", "declare `TOOL` safe to call, overriding its annotation and the name rule (repeatable)")
	fs.Var(&sentinels, "sentinel", "allow an out-of-domain sentinel on `TOOL[:FIELD[=JSON]]` (repeatable)")
	fs.Var((*repeatedFlag)(&o.AllowHosts), "allow-host", "allow a non-loopback HTTP `HOST` (repeatable)")
	fs.StringVar(&o.ProtocolVersion, "protocol", "", "pin the protocol `VERSION` the client offers, e.g. 2025-06-18 (default: the SDK's latest)")
	fs.StringVar(&o.ProbeTool, "probe-tool", "", "`TOOL` for the wrong-type and missing-field probes (default: the first read-only tool with a required field)")
	fs.DurationVar(&o.Interval, "interval", time.Second, "wait `D` between two requests to a server")
	fs.IntVar(&o.MaxCalls, "max-calls", capture.DefaultMaxCalls, "at most `N` requests per server after initialization (1 to 100)")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "bound `D` on initialization and each request")
	fs.DurationVar(&o.Grace, "grace", 2*time.Second, "the time `D` a stdio server may take to exit after stdin closes before SIGTERM")
	fs.IntVar(&o.MaxFrameBytes, "max-frame-bytes", capture.DefaultMaxFrameBytes, "at most `N` bytes recorded of one frame; a longer one is recorded truncated, with the count of bytes cut")
	fs.Int64Var(&o.MaxServerBytes, "max-server-bytes", capture.DefaultMaxServerBytes, "at most `N` frame bytes recorded per server; later frames are counted and dropped, with a marker in the frames file")
	fs.IntVar(&o.MaxNotifications, "max-notifications", capture.DefaultMaxNotifications, "at most `N` messages a server sends on its own (notifications, requests, answers to no pending request) recorded per request of the client; later ones are counted and dropped, with a marker")
	fs.IntVar(&o.MaxTextBytes, "max-text-bytes", capture.DefaultMaxTextBytes, "at most `N` bytes of server text an observation keeps; the rest is cut and marked")
	fs.BoolVar(&o.ValidateOutput, "validate-output", false, "check results against the tool's outputSchema as a validating client would, and use that view")
	fs.BoolVar(&o.RedactFailureText, "redact-text", false, "also redact URLs, file paths and public IP addresses inside the failure text (credentials and private locators are redacted everywhere)")
	saltFile := fs.String("salt-file", "", "`FILE` holding the pseudonym salt, created if missing (default: a new salt in DIR/private/salt)")
	quiet := fs.Bool("quiet", false, "print only the table")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 0 {
			return usageError("capture: unexpected arguments %q (put a server in -stdio or -http)", args)
		}
		if *out == "" {
			return usageError("capture: flag -out is required")
		}
		if len(stdio)+len(web) == 0 {
			return usageError("capture: name at least one server with -stdio or -http")
		}
		for _, n := range []struct {
			name      string
			v, lo, hi int64
		}{
			{"max-calls", int64(o.MaxCalls), 1, 100},
			{"max-frame-bytes", int64(o.MaxFrameBytes), 1 << 10, capture.MaxFrameBytesLimit},
			{"max-server-bytes", o.MaxServerBytes, 1 << 10, 1 << 40},
			{"max-notifications", int64(o.MaxNotifications), 1, 1 << 30},
			{"max-text-bytes", int64(o.MaxTextBytes), 1 << 10, capture.MaxFrameBytesLimit},
		} {
			if n.v < n.lo || n.v > n.hi {
				return usageError("capture: flag -%s: want %d to %d, got %d", n.name, n.lo, n.hi, n.v)
			}
		}
		for _, d := range []struct {
			name string
			v    time.Duration
		}{{"interval", o.Interval}, {"timeout", o.Timeout}, {"grace", o.Grace}} {
			if d.v <= 0 {
				return usageError("capture: flag -%s: want a positive duration, got %v", d.name, d.v)
			}
		}
		targets, err := parseTargets(stdio, web)
		if err != nil {
			return err
		}
		var specs []capture.SentinelSpec
		for _, s := range sentinels {
			sp, err := capture.ParseSentinel(s)
			if err != nil {
				return usageError("capture: flag -sentinel: %v", err)
			}
			specs = append(specs, sp)
		}
		if err := outdir.Check(*out, nil); err != nil {
			return usageError("capture: flag -out: %v", err)
		}
		var salt []byte
		if *saltFile != "" {
			salt, err = loadSalt(*saltFile)
		} else {
			salt, err = newSalt()
		}
		if err != nil {
			return err
		}
		log := stderr
		if *quiet {
			log = io.Discard
		}
		o.Sentinels, o.Salt, o.Log = specs, salt, log
		if err := o.Check(targets); err != nil {
			return usageError("capture: %v", err)
		}
		servers, runErr := capture.Run(ctx, targets, o)
		if ctx.Err() != nil {
			// Stopped: the servers not reached would be missing without a
			// trace; nothing is written.
			return ctx.Err()
		}
		w, werr := capture.Write(*out, servers, o)
		if werr == nil || w != nil {
			if *saltFile == "" {
				if err := os.WriteFile(filepath.Join(*out, capture.PrivateDir, "salt"), append(salt, '\n'), 0o600); err != nil {
					return err
				}
			}
			if err := writeCaptureTable(stdout, servers); err != nil {
				return err
			}
		}
		failed := 0
		for _, s := range servers {
			if s.Err != nil {
				failed++
				// The error may quote what the server sent.
				fmt.Fprintf(stderr, "capture: server %s (%s): %s\n", s.Pseudonym, s.Target.Label, input.Snippet(s.Err.Error()))
			}
		}
		switch {
		case runErr != nil:
			return runErr
		case werr != nil:
			return werr
		}
		fmt.Fprintf(log, "wrote %s: %d %s from %d %s (corpus %s, manifest %s; private: %s)\n",
			*out, w.Scenarios, plural(w.Scenarios, "record"), w.Servers, plural(w.Servers, "server"), filepath.Join(*out, capture.CorpusDir), filepath.Join(*out, capture.ManifestFile),
			filepath.Join(*out, capture.PrivateDir))
		var problems []string
		if n := len(w.Quarantined); n > 0 {
			list := make([]string, n)
			for i, q := range w.Quarantined {
				list[i] = fmt.Sprintf("%s (%s)", q.ID, q.Reason)
			}
			problems = append(problems, fmt.Sprintf("%d %s quarantined, not in the corpus (see %s): %s",
				n, plural(n, "record"), filepath.Join(*out, capture.QuarantineDir), strings.Join(list, "; ")))
		}
		if failed > 0 {
			problems = append(problems, fmt.Sprintf("%d of %d servers failed; the corpus holds the others", failed, len(servers)))
		}
		if len(problems) > 0 {
			return fmt.Errorf("capture: %s", strings.Join(problems, "; "))
		}
		return nil
	}
}

// writeCaptureTable prints one line per probe, with pseudonyms only.
func writeCaptureTable(w io.Writer, servers []*capture.Server) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "server\ttransport\tprotocol\tprobe\ttool\tstatus\twire\tsurface")
	for _, s := range servers {
		if s.Err != nil && len(s.Outcomes) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\tnot captured\t-\t-\n", s.Pseudonym, s.Target.Transport(), dash(s.ProtocolVersion))
			continue
		}
		for _, o := range s.Outcomes {
			tool := "(nonexistent)"
			if p, ok := s.ToolPseudonyms[o.Tool]; ok {
				tool = p
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Pseudonym, s.Target.Transport(), s.ProtocolVersion,
				o.Kind, tool, o.Status, dash(string(o.Wire)), dash(string(o.Surface)))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range servers {
		if len(s.Redacted) > 0 {
			fmt.Fprintf(w, "%s: redacted outside the failure text: %s\n", s.Pseudonym, capture.SortedKinds(s.Redacted))
		}
		if len(s.Flagged) > 0 {
			fmt.Fprintf(w, "%s: kept in the failure text (use -redact-text to redact): %s\n", s.Pseudonym, capture.SortedKinds(s.Flagged))
		}
		if st := s.FrameStats; st.DroppedNotifications+st.DroppedOverBytes+st.Truncated > 0 {
			fmt.Fprintf(w, "%s: frames: %d recorded, %d truncated, %d dropped past -max-notifications, %d past -max-server-bytes (markers in the frames file)\n",
				s.Pseudonym, st.Frames, st.Truncated, st.DroppedNotifications, st.DroppedOverBytes)
		}
	}
	return nil
}

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// dash is s, or "-" for nothing.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
