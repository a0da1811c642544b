package mcpenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpstress/stress/env"
	"github.com/mcpstress/stress/internal/findup"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// Name is the reference servers' name in the environment registry, the
// value of a manifest's environment field.
const Name = "mcp"

// ServersVar names the environment variable that locates the reference
// servers' packages (default: found by FindServers).
const ServersVar = "STRESS_MCP_SERVERS"

// DefaultServers is where scripts/test installs the reference servers'
// packages, relative to the repository root.
const DefaultServers = "scripts/mcp-servers/node_modules/@modelcontextprotocol"

func init() {
	env.Register(Name, env.Backend{Factory: open, Actor: actor})
}

// open makes the environments of a study of m on the reference servers:
// the default set's, after checking that every record of m's corpus is
// one of its scenarios. Each decision connects to m's external_server if
// it names one, else starts its scenario's server from the packages in
// o.Servers, or FindServers' (processes kept for reuse until the factory
// is closed).
func open(m *manifests.Resolved, o env.Options) (simulator.EnvFactory, error) {
	set, err := BuiltinSet("")
	if err != nil {
		return nil, err
	}
	if err := fits(set, m.Corpus.Scenarios); err != nil {
		return nil, fmt.Errorf("manifest %s: field environment: %q runs the reference MCP servers, and its corpus %s does not fit them:\n%w", m.Source, Name, m.Manifest.Corpus, err)
	}
	if m.ExternalServer != "" {
		// Note: no server is started, so none needs to be installed.
		return Factory(set, Options{ExternalURL: m.ExternalServer, CallTimeout: m.EnvDeadline(), ProtocolVersion: m.ProtocolVersion}), nil
	}
	dir := o.Servers
	if dir == "" {
		if dir, err = FindServers(m.Source); err != nil {
			return nil, fmt.Errorf("manifest %s: its corpus runs on the reference MCP servers, and %w", m.Source, err)
		}
	}
	return Factory(set, Options{Modules: dir, Reuse: true, CallTimeout: m.EnvDeadline(), ProtocolVersion: m.ProtocolVersion}), nil
}

// fits checks that every record of corpus is a scenario of set, on the
// server whose pseudonym the record gives, with the scenario's proven
// preferred set (the set Proven credits).
func fits(set *Set, corpus []study.Scenario) error {
	var errs []error
	var missing []string
	for i := range corpus {
		r := &corpus[i]
		sc, ok := set.Scenario(r.ID)
		switch {
		case !ok:
			missing = append(missing, r.ID)
		case pseudonyms[sc.Server] != r.Server:
			errs = append(errs, fmt.Errorf("record %s: field server is %s, but reference scenario %s runs on server-%s (%s)", r.ID, r.Server, sc.ID, sc.Server, pseudonyms[sc.Server]))
		case !slices.Equal(r.ProvenSet(), sc.PreferredSet):
			errs = append(errs, fmt.Errorf("record %s: field preferred_policies is %v, but reference scenario %s has %v", r.ID, r.ProvenSet(), sc.ID, sc.PreferredSet))
		}
	}
	if len(missing) > 0 {
		const most = 5
		list := strings.Join(missing[:min(most, len(missing))], ", ")
		if len(missing) > most {
			list += fmt.Sprintf(" and %d more", len(missing)-most)
		}
		errs = append([]error{fmt.Errorf("record %s: not a scenario of mcpenv set %s (a study on the reference servers runs only their records, such as corpus/act-reference)", list, set.Name)}, errs...)
	}
	return errors.Join(errs...)
}

// actor returns the environment of reference scenario id, its server
// started from the packages in o.Servers, else FindServers' from the
// working directory.
func actor(id string, o env.Options) (simulator.Actor, error) {
	set, err := BuiltinSet("")
	if err != nil {
		return nil, err
	}
	sc, ok := set.Scenario(id)
	if !ok {
		return nil, fmt.Errorf("mcpenv set %s has no scenario %q", set.Name, id)
	}
	dir := o.Servers
	if dir == "" {
		if dir, err = FindServers(""); err != nil {
			return nil, fmt.Errorf("scenario %s runs on the reference MCP servers, and %w", id, err)
		}
	}
	return New(sc, Options{Modules: dir}), nil
}

// FindServers returns the directory holding every reference server's
// package for the manifest read from source ("" for none): $STRESS_MCP_SERVERS
// (ServersVar), else DefaultServers in the manifest's directory or the
// nearest of its parents that has them all, else the same from the
// working directory (the only start for a built-in manifest). The error
// says every place it looked and why each would not do.
//
// Note: the manifest's directory comes first, as for the corpus and
// prompts it names, so a run works from any working directory.
func FindServers(source string) (string, error) {
	var need []string
	for _, s := range Servers {
		need = append(need, s.Package+"/dist/index.js")
	}
	slices.Sort(need) // a map's order: the first missing is named
	check := findup.HasFiles(need...)
	const install = "run scripts/test, or (cd scripts/mcp-servers && npm ci --ignore-scripts) in the repository"
	if dir := os.Getenv(ServersVar); dir != "" {
		if why := check(dir); why != "" {
			return "", fmt.Errorf("they are not installed in %s=%s, which %s (%s, or unset %s to look for %s from the manifest's directory up)", ServersVar, dir, why, install, ServersVar, DefaultServers)
		}
		return dir, nil
	}
	var starts []string
	from := "the working directory and its parents"
	if source != "" && !strings.HasPrefix(source, "builtin:") {
		starts = append(starts, filepath.Dir(source))
		from = "the manifest's directory, the working directory and their parents"
	}
	dir, looked := findup.Find(DefaultServers, check, append(starts, ".")...)
	if dir == "" {
		return "", fmt.Errorf("they are not installed: no %s in %s:\n%s\n%s, or set %s to the directory that holds their packages", DefaultServers, from, findup.Looked(looked), install, ServersVar)
	}
	return dir, nil
}
