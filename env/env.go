// Package env is the registry of environments: what answers a model's
// tool calls under live replay (simulator.EnvFactory, simulator.Actor),
// by the name a manifest's environment field gives, as package models is
// the registry of model backends.
//
// A backend registers itself from its package's init: env/labenv as
// "lab" (the recovery lab, in process), env/mcpenv as "mcp" (the
// reference MCP servers). "stored", the default of a manifest that names
// none, is registered here: stored replay, which runs no environment.
// Tests register fakes (internal/testserver/fakeenv) under names of their own.
//
//	f, err := env.Open(m, env.Options{}) // nil, nil under stored replay
//
// Note: a backend is chosen by name only, never from the scenario ids of
// the corpus; it checks that the corpus fits it and says which records
// do not.
package env

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/simulator"
)

// Options tune what a backend opens; a zero field keeps the backend's
// default.
type Options struct {
	// Servers is the directory of the reference MCP servers' packages
	// (mcp; the others ignore it). "" finds them as env/mcpenv.FindServers
	// does: $STRESS_MCP_SERVERS, else from the manifest's directory up.
	Servers string
}

// Backend is a registered environment.
type Backend struct {
	// Factory makes the environments of a study of manifest m with
	// replay: live, one per decision, after checking that m's corpus
	// fits them. Its errors name the manifest and the field (or the
	// record) at fault. nil: the backend runs no live environment
	// (stored).
	Factory func(m *manifests.Resolved, o Options) (simulator.EnvFactory, error)
	// Actor returns the environment of scenario id, not started, for the
	// action task outside a study (stress render -act). nil: the backend
	// has none.
	Actor func(id string, o Options) (simulator.Actor, error)
}

var (
	mu       sync.RWMutex
	registry = map[string]Backend{}
)

func init() {
	Register(manifests.DefaultEnvironment, Backend{})
}

// Register makes an environment available under name. It panics if name
// is registered twice (a programming error).
func Register(name string, b Backend) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic("env: environment registered twice: " + name)
	}
	registry[name] = b
}

// Names lists the registered environments, sorted.
func Names() []string {
	return names(func(Backend) bool { return true })
}

// live lists the registered environments that run live replay, sorted.
func live() []string {
	return names(func(b Backend) bool { return b.Factory != nil })
}

func names(keep func(Backend) bool) []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for n, b := range registry {
		if keep(b) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Lookup returns the environment registered under name.
func Lookup(name string) (Backend, error) {
	mu.RLock()
	b, ok := registry[name]
	mu.RUnlock()
	if !ok {
		return Backend{}, fmt.Errorf("unknown environment %q (registered: %v)", name, Names())
	}
	return b, nil
}

// Open returns the environment factory of a study of manifest m: that of
// the environment its environment field names (manifests.Manifest.Env),
// or nil under stored replay, which runs none. Errors name the manifest
// file and the field. A factory that is an io.Closer holds resources (the
// reference servers kept for reuse) until closed.
func Open(m *manifests.Resolved, o Options) (simulator.EnvFactory, error) {
	name := m.Env()
	b, err := Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: field environment: %w", m.Source, err)
	}
	if !m.Live() {
		return nil, nil
	}
	if b.Factory == nil {
		if m.Environment == "" {
			return nil, fmt.Errorf("manifest %s: field environment: replay: %q needs an environment, and the manifest names none (the default, %q, runs none): name one of %v", m.Source, manifests.ReplayLive, manifests.DefaultEnvironment, live())
		}
		return nil, fmt.Errorf("manifest %s: field environment: %q runs no environment, and replay: %q needs one: name one of %v", m.Source, name, manifests.ReplayLive, live())
	}
	return b.Factory(m, o)
}

// DefaultAct is the environment Act starts when neither its caller nor
// the manifest names one that acts.
const DefaultAct = "lab"

// Act starts the environment of scenario id for the action task outside
// a study (stress render -act): that of the environment named name, else
// the one m names, else DefaultAct (stored replay has none). It returns
// the environment and the observation of its first, failing call; the
// caller closes an environment that is an io.Closer.
func Act(ctx context.Context, m *manifests.Resolved, name, id string, o Options) (simulator.Actor, json.RawMessage, error) {
	if name == "" {
		name = DefaultAct
		if m != nil && m.Env() != manifests.DefaultEnvironment {
			name = m.Env()
		}
	}
	b, err := Lookup(name)
	if err != nil {
		return nil, nil, err
	}
	if b.Actor == nil {
		acts := names(func(b Backend) bool { return b.Actor != nil })
		return nil, nil, fmt.Errorf("environment %q has no scenarios to act on (environments that do: %v)", name, acts)
	}
	e, err := b.Actor(id, o)
	if err != nil {
		return nil, nil, fmt.Errorf("environment %s: %w", name, err)
	}
	obs, err := e.Start(ctx)
	if err != nil {
		if c, ok := e.(io.Closer); ok {
			c.Close()
		}
		return nil, nil, err
	}
	return e, obs, nil
}
