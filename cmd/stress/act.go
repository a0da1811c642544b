package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpstress/stress/env/mcpenv"
	"github.com/mcpstress/stress/internal/findup"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/simulator"
)

// MCPServersVar names the environment variable that locates the
// reference MCP servers' packages for a study on them (default: found by
// findMCPServers).
const MCPServersVar = "STRESS_MCP_SERVERS"

// referenceEnv returns the environment factory of the reference servers
// when every record of m's corpus is one of their scenarios (ok false
// otherwise), failing when the servers are not installed.
func referenceEnv(m *manifests.Resolved) (simulator.EnvFactory, bool, error) {
	set, err := mcpenv.BuiltinSet("")
	if err != nil || len(m.Corpus.Scenarios) == 0 {
		return nil, false, err
	}
	for i := range m.Corpus.Scenarios {
		s := &m.Corpus.Scenarios[i]
		sc, ok := set.Scenario(s.ID)
		if !ok || mcpenv.Pseudonyms[sc.Server] != s.Server {
			return nil, false, nil
		}
	}
	if m.ExternalServer != "" {
		// Note: no server is started, so none needs to be installed.
		return mcpenv.Factory(set, mcpenv.Options{ExternalURL: m.ExternalServer, CallTimeout: m.EnvDeadline()}), true, nil
	}
	dir, err := findMCPServers(m.Source)
	if err != nil {
		return nil, true, fmt.Errorf("manifest %s: its corpus runs on the reference MCP servers, and %w", m.Source, err)
	}
	return mcpenv.Factory(set, mcpenv.Options{Modules: dir, Reuse: true, CallTimeout: m.EnvDeadline()}), true, nil
}

// findMCPServers returns the directory holding every reference server's
// package for the manifest read from source: $STRESS_MCP_SERVERS, else
// defaultMCPServers in the manifest's directory or the nearest of its
// parents that has them all, else the same from the working directory
// (the only start for a built-in manifest). The error says every place it
// looked and why each would not do.
//
// Note: the manifest's directory comes first, as for the corpus and
// prompts it names, so a run works from any working directory.
func findMCPServers(source string) (string, error) {
	var need []string
	for _, s := range mcpenv.Servers {
		need = append(need, s.Package+"/dist/index.js")
	}
	slices.Sort(need) // a map's order: the first missing is named
	check := findup.HasFiles(need...)
	const install = "run scripts/test, or (cd scripts/mcp-servers && npm ci --ignore-scripts) in the repository"
	if dir := os.Getenv(MCPServersVar); dir != "" {
		if why := check(dir); why != "" {
			return "", fmt.Errorf("they are not installed in %s=%s, which %s (%s, or unset %s to look for %s from the manifest's directory up)", MCPServersVar, dir, why, install, MCPServersVar, defaultMCPServers)
		}
		return dir, nil
	}
	var starts []string
	from := "the working directory and its parents"
	if !strings.HasPrefix(source, "builtin:") {
		starts = append(starts, filepath.Dir(source))
		from = "the manifest's directory, the working directory and their parents"
	}
	dir, looked := findup.Find(defaultMCPServers, check, append(starts, ".")...)
	if dir == "" {
		return "", fmt.Errorf("they are not installed: no %s in %s:\n%s\n%s, or set %s to the directory that holds their packages", defaultMCPServers, from, findup.Looked(looked), install, MCPServersVar)
	}
	return dir, nil
}
