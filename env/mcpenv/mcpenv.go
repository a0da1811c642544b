// Package mcpenv is the environment of the action task on the pinned
// reference MCP servers (server-memory, server-filesystem,
// server-everything): each decision starts its scenario's server in a
// fresh sandbox (a temporary directory, a fresh memory file, a fresh Node
// process), reaches it through the Go SDK client over stdio, makes the
// scenario's failing call, sends the calls the model writes, and reads
// the outcome from the server's own state (its memory file, the files of
// its allowed directory) and the calls made. It implements
// simulator.EnvFactory and simulator.Actor.
//
// Calls go only to the server the harness started itself. Every file
// path the model sees names the sandbox as /sandbox; the environment maps
// it to the real temporary directory in the calls it sends and back in
// what it shows.
package mcpenv

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/simulator"
)

// sandboxName is how the sandbox's directory appears to the model.
const sandboxName = "/sandbox"

// Options configure the environments.
type Options struct {
	// Modules is the directory holding the servers' packages
	// (scripts/mcp-servers/node_modules/@modelcontextprotocol).
	Modules string
	// Node is the node executable; "" for "node" on the PATH.
	Node string
	// CallTimeout bounds each call and the start; 0 for 20 s.
	CallTimeout time.Duration
	// ExternalURL, when set, is the streamable-HTTP endpoint of a server
	// the harness did not start: every decision connects to it instead of
	// starting the scenario's server, and only read-only tools may be
	// called on it (capture.ReadOnlyAccess: annotations and the name
	// rule); the scenario's first call and setup must be read-only too.
	// There is no sandbox: the state is the calls made.
	ExternalURL string
	// Reuse lets Factory keep the process of a server whose spec has
	// Reset for the next decision on that server, its sandbox emptied,
	// instead of starting a fresh one (a server that no longer answers a
	// ping is not kept). The factory's Close stops the kept processes.
	Reuse bool
	// ProtocolVersion is the MCP protocol version the client asks the
	// servers for; "" for the Go SDK's latest. What a server negotiates
	// is recorded in each decision's outcome (EnvOutcome.Protocol).
	ProtocolVersion string
}

func (o *Options) timeout() time.Duration {
	if o.CallTimeout > 0 {
		return o.CallTimeout
	}
	return 20 * time.Second
}

// Factory returns the environment factory of set on the servers in
// o.Modules.
func Factory(set *Set, o Options) simulator.EnvFactory {
	f := &factory{set: set, o: o}
	if o.Reuse {
		f.pool = &pool{idle: map[string][]*proc{}}
	}
	return f
}

type factory struct {
	set  *Set
	o    Options
	pool *pool // nil without Options.Reuse
}

// Close stops the processes the factory kept for reuse.
func (f *factory) Close() error {
	if f.pool == nil {
		return nil
	}
	return f.pool.close()
}

// NewEnv makes the environment of one decision (the seed is not used: the
// reference servers are deterministic).
func (f *factory) NewEnv(ctx context.Context, scenario string, seed int64) (simulator.Environment, error) {
	sc, ok := f.set.Scenario(scenario)
	if !ok {
		return nil, fmt.Errorf("mcpenv set %s has no scenario %q", f.set.Name, scenario)
	}
	e := New(sc, f.o)
	if f.pool != nil && Servers[sc.Server].reuses() && f.o.ExternalURL == "" {
		e.pool = f.pool
	}
	return e, nil
}

// session returns the options of a client session: the protocol version
// asked for, if any.
func (o Options) session() *mcp.ClientSessionOptions {
	if o.ProtocolVersion == "" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: o.ProtocolVersion}
}
