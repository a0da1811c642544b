package checkmatrix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/internal/findup"
)

// The TypeScript clients, pinned in scripts/ts-clients/package-lock.json.
const (
	clientTSv1 = "ts-v1" // @modelcontextprotocol/sdk (v1), pinned at 1.32.2
	clientTSv2 = "ts-v2" // @modelcontextprotocol/client (v2), pinned at 2.4.0
)

// tsScript is the Node script, in the TypeScript clients' directory, that
// runs them.
const tsScript = "check.mjs"

// tsPackages are the packages check.mjs imports, per client.
var tsPackages = map[string]string{clientTSv1: "@modelcontextprotocol/sdk", clientTSv2: "@modelcontextprotocol/client"}

// TSClient is one TypeScript client as it ran.
type TSClient struct {
	Client          string `json:"client"`           // "ts-v1" or "ts-v2"
	Package         string `json:"package"`          // npm package name
	Version         string `json:"version"`          // installed version
	ProtocolVersion string `json:"protocol_version"` // negotiated with the fixture server
}

// tsOutput is what check.mjs prints.
type tsOutput struct {
	Node    string     `json:"node"`
	Clients []TSClient `json:"clients"`
	Cells   []struct {
		Cell
		Structured json.RawMessage `json:"structured"`
	} `json:"cells"`
}

// FindTSClients returns the TypeScript clients' directory
// (scripts/ts-clients, the one with check.mjs) in dir or the nearest of its
// parents that has one, or "" when none has.
func FindTSClients(dir string) string {
	found, _ := findup.Find("scripts/ts-clients", findup.HasFiles(tsScript), dir)
	return found
}

// tsUnavailable says why the TypeScript clients cannot run, or "" when they
// can. node is the executable found.
func tsUnavailable(o Options) (node, why string) {
	if o.TSClients == "" {
		return "", "no TypeScript clients directory (scripts/ts-clients of the repository)"
	}
	if _, err := os.Stat(filepath.Join(o.TSClients, tsScript)); err != nil {
		return "", fmt.Sprintf("%s is missing", filepath.Join(o.TSClients, tsScript))
	}
	node, err := exec.LookPath(o.node())
	if err != nil {
		return "", fmt.Sprintf("%s not found: install Node.js (Debian: apt-get install nodejs npm)", o.node())
	}
	for _, client := range []string{clientTSv1, clientTSv2} {
		pkg := filepath.Join(o.TSClients, "node_modules", filepath.FromSlash(tsPackages[client]), "package.json")
		if _, err := os.Stat(pkg); err != nil {
			return "", fmt.Sprintf("%s is not installed: run scripts/test, or (cd %s && npm ci --ignore-scripts)", tsPackages[client], o.TSClients)
		}
	}
	return node, ""
}

// runTS serves the fixture over streamable HTTP on the loopback and runs
// check.mjs against it with node, adding the TypeScript clients' cells to m.
func runTS(ctx context.Context, o Options, node string, server *mcp.Server, m *Matrix) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)}
	go srv.Serve(ln)
	defer func() {
		srv.Close()
		for ss := range server.Sessions() {
			ss.Close()
		}
	}()

	names := make([]string, len(shapes))
	for i, sh := range shapes {
		names[i] = sh.Name
	}
	arg, err := json.Marshal(map[string]any{"url": "http://" + ln.Addr().String() + "/", "tool": toolName, "shapes": names})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, node, tsScript, string(arg))
	cmd.Dir = o.TSClients
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (after %v)", ctx.Err(), o.timeout())
		}
		return fmt.Errorf("%s %s: %w: %s", node, filepath.Join(o.TSClients, tsScript), err, strings.TrimSpace(stderr.String()))
	}
	var out tsOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return fmt.Errorf("%s printed %q: %w", tsScript, stdout.String(), err)
	}
	if len(out.Clients) != 2 || len(out.Cells) != 4*len(shapes) {
		return fmt.Errorf("%s ran %d clients and %d cells, want 2 and %d", tsScript, len(out.Clients), len(out.Cells), 4*len(shapes))
	}
	m.Node, m.TSClients = out.Node, out.Clients
	for _, c := range out.Cells {
		cell := c.Cell
		if len(c.Structured) > 0 {
			// Note: decoded and encoded again, so that objects have their
			// keys sorted as the Go cells do.
			var v any
			if err := json.Unmarshal(c.Structured, &v); err != nil {
				return err
			}
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			cell.Structured = string(b)
		}
		if !cell.Returned && cell.Error == "" {
			return errors.New(tsScript + ": a call neither returned nor failed with a reason")
		}
		m.Cells = append(m.Cells, cell)
	}
	return nil
}
