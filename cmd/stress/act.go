package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/mcpenv"
	"github.com/mcpstress/stress/simulator"
)

// MCPServersVar names the environment variable that locates the
// reference MCP servers' packages for a study on them (default
// defaultMCPServers, relative to the working directory).
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
	dir := os.Getenv(MCPServersVar)
	if dir == "" {
		dir = defaultMCPServers
	}
	for _, s := range mcpenv.Servers {
		if _, err := os.Stat(filepath.Join(dir, s.Package, "dist", "index.js")); err != nil {
			return nil, true, fmt.Errorf("manifest %s: its corpus runs on the reference MCP servers, and %s is not installed in %s (run scripts/test, or (cd scripts/mcp-servers && npm ci --ignore-scripts); %s names another directory)",
				m.Source, s.Package, dir, MCPServersVar)
		}
	}
	return mcpenv.Factory(set, mcpenv.Options{Modules: dir, Reuse: true, CallTimeout: m.EnvDeadline()}), true, nil
}
