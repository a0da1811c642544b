package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/capture/labrecord"
	"github.com/mcpstress/stress/internal/mcpstdio"
	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/study"
)

// labLong is what stress help lab prints after the forms.
const labLong = `serve runs the recovery lab, a stateful MCP server (shop, billing and
files), with scenario ID of the set armed (none: every tool, no fault), over
stdio or streamable HTTP at http://ADDR/mcp. Its clock is virtual unless
-realtime: the methods lab/advance and lab/state move it and read the
outcome. Over stdio it answers every request read before stdin closes (the
clock then runs by itself, releasing held answers), a malformed line with
a JSON-RPC error (-32700 or -32600), a call before initialize with -32600,
and a cancelled request not at all. list prints the scenarios of a set.
record writes the lab corpus (manifests/corpus/lab): for each scenario it
starts stress lab serve -stdio, makes the scenario's first call through
the Go SDK client, keeps the raw frames (DIR/frames/ID.jsonl) and writes
one record per scenario, its profile coding proposed by rules, for a
person to check and stress confirm.`

// cmdLab runs the lab's subcommands, serve and list, named by the first
// argument; the flags of both are defined here and checked per subcommand.
func cmdLab(fs *flag.FlagSet) action {
	stdio := fs.Bool("stdio", false, "serve: over stdin and stdout")
	addr := fs.String("http", "", "serve: streamable HTTP on `ADDR` (host:port; port 0 picks one), at /mcp")
	seed := fs.Int64("seed", 1, "serve: seed `S` of the identifiers and tokens the lab generates")
	setName := fs.String("set", lab.DefaultSet, "scenario `NAME` (a set of lab/scenarios)")
	id := fs.String("scenario", "", "serve: arm scenario `ID` of the set (default: none, every tool of every server, no fault)")
	realtime := fs.Bool("realtime", false, "serve: run on the wall clock instead of the virtual one")
	shape := fs.String("shape", "", fmt.Sprintf("serve: serve every failure in error shape `SHAPE`, one of %v (docs/error-shapes.md)", study.ShapeConditions))
	out := fs.String("out", "", "record: write the corpus to `DIR`, which must not exist")
	asJSON := fs.Bool("json", false, `list: print [{"id","server","class","tool","surface","contract","preferred_policy","non_harm","summary"}…]`)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) == 0 {
			return usageError("lab: name a subcommand, serve, list or record")
		}
		sub, rest := args[0], args[1:]
		if len(rest) > 0 {
			return usageError("lab %s: unexpected arguments %q", sub, rest)
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		only := func(allowed ...string) error {
			for name := range set {
				if !slices.Contains(allowed, name) {
					return usageError("lab %s: flag -%s is not one of %s's", sub, name, sub)
				}
			}
			return nil
		}
		switch sub {
		case "serve":
			if err := only("stdio", "http", "seed", "set", "scenario", "realtime", "shape"); err != nil {
				return err
			}
			return labServe(ctx, *stdio, *addr, *seed, *setName, *id, *realtime, study.Condition(*shape), stdout, stderr)
		case "list":
			if err := only("json", "set"); err != nil {
				return err
			}
			return labList(*setName, *asJSON, stdout)
		case "record":
			if err := only("out", "set", "seed"); err != nil {
				return err
			}
			return labRecord(ctx, *setName, *seed, *out, stdout, stderr)
		}
		return usageError("lab: unknown subcommand %q (want serve, list or record)", sub)
	}
}

// labServe serves one lab until the client leaves (stdio), or until the
// context ends (SIGINT, SIGTERM), then prints its outcome on stderr.
func labServe(ctx context.Context, stdio bool, addr string, seed int64, setName, id string, realtime bool, shape study.Condition, stdout, stderr io.Writer) error {
	if stdio == (addr != "") {
		return usageError("lab serve: give exactly one of -stdio and -http")
	}
	set, err := lab.BuiltinSet(setName)
	if err != nil {
		return usageError("lab serve: flag -set: %v", err)
	}
	var sc *lab.Scenario
	if id != "" {
		var ok bool
		if sc, ok = set.Scenario(id); !ok {
			return usageError("lab serve: flag -scenario: set %s has no scenario %q", set.Name, id)
		}
	}
	if shape != "" {
		if !shape.Shape() {
			return usageError("lab serve: flag -shape: %q is not an error shape (want one of %v)", shape, study.ShapeConditions)
		}
		if err := lab.CanCarry(sc, shape); err != nil {
			return usageError("lab serve: flag -shape: %v", err)
		}
	}
	o := lab.Options{Seed: seed, Shape: shape}
	clock := "virtual clock"
	if realtime {
		o.Clock, clock = lab.WallClock{}, "wall clock"
	}
	l := lab.New(sc, o)
	srv := lab.NewServer(l)
	what := "a healthy lab (every tool, no fault)"
	if sc != nil {
		what = fmt.Sprintf("scenario %s (%s %s, %s on %s)", sc.ID, sc.Server, lab.Servers[sc.Server], sc.Class, sc.Tool)
	}
	if shape != "" {
		what += " in error shape " + string(shape)
	}
	if stdio {
		fmt.Fprintf(stderr, "stress lab: serving %s over stdio, %s, seed %d\n", what, clock, seed)
		t := &mcpstdio.Transport{Reader: os.Stdin, Writer: stdout}
		if vc, ok := l.Clock().(*lab.VirtualClock); ok {
			// Note: once stdin ends no client can move the virtual clock:
			// it runs by itself, so that a held answer is sent, not held
			// forever.
			t.OnInputEnd = vc.Release
		}
		err = srv.Run(ctx, t)
		if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			err = nil
		}
	} else {
		err = serveHTTP(ctx, srv, addr, what, clock, seed, stderr)
	}
	printOutcome(stderr, l)
	return err
}

// serveHTTP serves srv at http://addr/mcp until ctx ends.
func serveHTTP(ctx context.Context, srv *mcp.Server, addr, what, clock string, seed int64, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("lab serve: flag -http: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", lab.NewHTTPHandler(srv))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "stress lab: serving %s on http://%s/mcp, %s, seed %d\n", what, ln.Addr(), clock, seed)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("lab serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx) // Note: held answers end with their sessions.
	return nil
}

// printOutcome prints the lab's outcome on one line.
func printOutcome(w io.Writer, l *lab.Lab) {
	o := l.Outcome()
	if l.Scenario() == nil {
		fmt.Fprintf(w, "stress lab: %d calls, %d ms of lab time\n", o.Calls, o.ClockMS)
		return
	}
	fmt.Fprintf(w, "stress lab: outcome of %s: recovered %v, harm %v, %d calls, %d ms of lab time\n", l.Scenario().ID, o.Recovered, o.Harm, o.Calls, o.ClockMS)
}

// labRow is one scenario as lab list prints it.
type labRow struct {
	ID        string   `json:"id"`
	Server    string   `json:"server"`
	Class     string   `json:"class"`
	Tool      string   `json:"tool"`
	Surface   string   `json:"surface"`
	Contract  bool     `json:"contract"`
	Preferred []string `json:"preferred_policies"` // Strict credits the first
	NonHarm   []string `json:"non_harm"`
	Summary   string   `json:"summary"`
}

// labList prints the scenarios of set name.
func labList(name string, asJSON bool, stdout io.Writer) error {
	set, err := lab.BuiltinSet(name)
	if err != nil {
		return usageError("lab list: flag -set: %v", err)
	}
	rows := make([]labRow, 0, len(set.Scenarios))
	for _, sc := range set.Scenarios {
		r := labRow{ID: sc.ID, Server: sc.Server, Class: string(sc.Class), Tool: sc.Tool, Surface: string(sc.Surface),
			Contract: sc.Contract, Summary: sc.Summary}
		for _, p := range sc.PreferredSet {
			r.Preferred = append(r.Preferred, string(p))
		}
		for _, p := range sc.NonHarm {
			r.NonHarm = append(r.NonHarm, string(p))
		}
		rows = append(rows, r)
	}
	if asJSON {
		return writeJSON(stdout, rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tServer\tClass\tTool\tSurface\tContract\tPreferred\tNon-harm")
	for _, r := range rows {
		c := "-"
		if r.Contract {
			c = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Server, r.Class, r.Tool, r.Surface, c, strings.Join(r.Preferred, ","), strings.Join(r.NonHarm, ","))
	}
	return tw.Flush()
}

// labRecord records the scenarios of set name through stress lab serve
// -stdio (this executable) into a new corpus directory out.
func labRecord(ctx context.Context, name string, seed int64, out string, stdout, stderr io.Writer) error {
	if out == "" {
		return usageError("lab record: flag -out is required")
	}
	if err := outdir.Check(out, nil); err != nil {
		return usageError("lab record: flag -out: %v", err)
	}
	set, err := lab.BuiltinSet(name)
	if err != nil {
		return usageError("lab record: flag -set: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("lab record: finding this executable: %w", err)
	}
	recs, err := labrecord.Record(ctx, set, labrecord.Options{Command: func(id string) *exec.Cmd {
		return exec.CommandContext(ctx, exe, "lab", "serve", "-stdio", "-set", set.Name, "-scenario", id, "-seed", strconv.FormatInt(seed, 10))
	}})
	if err != nil {
		return fmt.Errorf("lab record: %w", err)
	}
	if err := labrecord.Write(out, recs); err != nil {
		return fmt.Errorf("lab record: writing %s: %w", out, err)
	}
	fmt.Fprintf(stdout, "recorded %d scenarios of lab set %s into %s (profile coding proposed by rules: check each record, then stress confirm)\n", len(recs), set.Name, out)
	return nil
}
