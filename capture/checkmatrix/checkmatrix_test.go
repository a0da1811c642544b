package checkmatrix

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// tsDir is the TypeScript clients' directory that scripts/test installs.
const tsDir = "../../scripts/ts-clients"

// column is one column of the matrix: a client in a discovery state.
type column struct {
	client     string
	discovered bool
}

// columns are the columns of want, in its order.
var columns = []column{
	{clientGoSDK, true}, {clientGoSDK, false},
	{clientValidating, true}, {clientValidating, false},
	{clientTSv1, true}, {clientTSv1, false},
	{clientTSv2, true}, {clientTSv2, false},
}

// want is the expected outcome per shape, in the order of columns. The Go
// SDK client (v1.8.0) does no client-side output check at all: its 12
// cells all return the result as the server sent it. The TypeScript clients
// check only when they hold the tool's outputSchema (listed); there v1.32.2
// rejects the off-schema isError result and v2.4.0 returns it. The
// validating columns (the emulation) equal the ts-v1 columns.
var want = map[string][8]string{
	"conforming_success": {
		`returned {"value":7}`, `returned {"value":7}`,
		`returned {"value":7}`, `returned {"value":7}`,
		`returned {"value":7}`, `returned {"value":7}`,
		`returned {"value":7}`, `returned {"value":7}`},
	"offschema_success": {
		`returned {"error":"unavailable"}`, `returned {"error":"unavailable"}`,
		"rejected -32602", `returned {"error":"unavailable"}`,
		"rejected -32602", `returned {"error":"unavailable"}`,
		"rejected -32602", `returned {"error":"unavailable"}`},
	"success_without_structured": {
		"returned", "returned",
		"rejected -32600", "returned",
		"rejected -32600", "returned",
		"rejected -32600", "returned"},
	"error_text_only": {
		"returned isError", "returned isError",
		"returned isError", "returned isError",
		"returned isError", "returned isError",
		"returned isError", "returned isError"},
	"error_offschema": {
		`returned isError {"error":"unavailable"}`, `returned isError {"error":"unavailable"}`,
		"rejected -32602", `returned isError {"error":"unavailable"}`,
		"rejected -32602", `returned isError {"error":"unavailable"}`,
		`returned isError {"error":"unavailable"}`, `returned isError {"error":"unavailable"}`},
	"error_conforming": {
		`returned isError {"value":0}`, `returned isError {"value":0}`,
		`returned isError {"value":0}`, `returned isError {"value":0}`,
		`returned isError {"value":0}`, `returned isError {"value":0}`,
		`returned isError {"value":0}`, `returned isError {"value":0}`},
}

// seed003 is seed 003's fixture, cell for cell (seed
// 003_176f0236f7e285a5, "MCP isError Results Meet Different Client
// Checks"): the twelve rows of its table in "What the TypeScript clients
// actually checked" (six result shapes, each for v1.32.2 and v2.4.0 after
// listTools) and the cold-client control of "Discovery changes the v1
// control" (a v1 client that did not discover the tool, calling it with the
// off-schema isError result): thirteen cases. seed is the seed's wording,
// want the same outcome as Cell.Outcome prints it.
var seed003 = []struct {
	shape, client string
	discovered    bool
	seed, want    string
}{
	{"conforming_success", clientTSv1, true, "Returned", `returned {"value":7}`},
	{"conforming_success", clientTSv2, true, "Returned", `returned {"value":7}`},
	{"offschema_success", clientTSv1, true, "Rejected, -32602", "rejected -32602"},
	{"offschema_success", clientTSv2, true, "Rejected, -32602", "rejected -32602"},
	{"success_without_structured", clientTSv1, true, "Rejected, -32600", "rejected -32600"},
	{"success_without_structured", clientTSv2, true, "Rejected, -32600", "rejected -32600"},
	{"error_text_only", clientTSv1, true, "Returned with isError: true", "returned isError"},
	{"error_text_only", clientTSv2, true, "Returned with isError: true", "returned isError"},
	{"error_offschema", clientTSv1, true, "Rejected, -32602", "rejected -32602"},
	{"error_offschema", clientTSv2, true, "Returned with the off-schema object", `returned isError {"error":"unavailable"}`},
	{"error_conforming", clientTSv1, true, "Returned with isError: true", `returned isError {"value":0}`},
	{"error_conforming", clientTSv2, true, "Returned with isError: true", `returned isError {"value":0}`},
	{"error_offschema", clientTSv1, false, "returned the off-schema structured error", `returned isError {"error":"unavailable"}`},
}

// withTS runs the matrix with the TypeScript clients once for the tests
// that need them, failing with the install hint when they are missing.
var withTS = sync.OnceValues(func() (*Matrix, error) {
	return Run(context.Background(), Options{TSClients: tsDir})
})

func tsMatrix(t *testing.T) *Matrix {
	t.Helper()
	m, err := withTS()
	if err != nil {
		t.Fatal(err)
	}
	if m.TSSkipped != "" {
		t.Fatalf("the TypeScript clients did not run: %s", m.TSSkipped)
	}
	return m
}

func TestMatrix(t *testing.T) {
	check := func(m *Matrix, cols []column) {
		t.Helper()
		if len(m.Cells) != len(cols)*len(shapes) {
			t.Fatalf("protocol %s: %d cells, want %d (6 per client and discovery state)", m.ProtocolVersion, len(m.Cells), len(cols)*len(shapes))
		}
		for _, sh := range shapes {
			w, ok := want[sh.Name]
			if !ok {
				t.Fatalf("no expectation for shape %s", sh.Name)
			}
			for i, col := range cols {
				c, ok := m.Cell(sh.Name, col.client, col.discovered)
				if !ok {
					t.Fatalf("protocol %s: no cell %s/%s/%v", m.ProtocolVersion, sh.Name, col.client, col.discovered)
				}
				if got := c.Outcome(); got != w[i] {
					t.Errorf("protocol %s: %s, %s, listed %v: got %q, want %q (%s)", m.ProtocolVersion, sh.Name, col.client, col.discovered, got, w[i], c.Error)
				}
				if !c.Returned && c.Error == "" {
					t.Errorf("%s %s: a rejection without a reason", sh.Name, col.client)
				}
			}
		}
	}
	m := tsMatrix(t)
	check(m, columns)
	if m.Node == "" {
		t.Error("no Node.js version recorded")
	}
	for i, w := range []TSClient{
		{clientTSv1, "@modelcontextprotocol/sdk", "1.32.2", "2025-11-25"},
		{clientTSv2, "@modelcontextprotocol/client", "2.4.0", "2025-11-25"},
	} {
		if i >= len(m.TSClients) || m.TSClients[i] != w {
			t.Errorf("TypeScript clients %+v, want %+v at %d", m.TSClients, w, i)
		}
	}
	// The Go clients alone, at pinned protocol versions.
	for _, pv := range []string{"2025-11-25", "2025-03-26"} {
		m, err := Run(context.Background(), Options{ProtocolVersion: pv})
		if err != nil {
			t.Fatalf("protocol %q: %v", pv, err)
		}
		if m.ProtocolVersion != pv {
			t.Errorf("pinned %s, negotiated %s", pv, m.ProtocolVersion)
		}
		check(m, columns[:4])
	}
}

// TestSeed003 checks that the real TypeScript clients reproduce seed 003.
func TestSeed003(t *testing.T) {
	m := tsMatrix(t)
	if len(seed003) != 13 {
		t.Fatalf("%d seed cases, want 13", len(seed003))
	}
	for _, s := range seed003 {
		c, ok := m.Cell(s.shape, s.client, s.discovered)
		if !ok {
			t.Fatalf("no cell %s/%s/%v", s.shape, s.client, s.discovered)
		}
		if got := c.Outcome(); got != s.want {
			t.Errorf("%s, %s, listed %v: got %q, want %q (seed 003: %q) %s", s.shape, s.client, s.discovered, got, s.want, s.seed, c.Error)
		}
	}
}

// TestEmulationMatchesTSv1 checks capture.CheckOutput (the validating
// columns) against the real client it emulates, cell for cell.
func TestEmulationMatchesTSv1(t *testing.T) {
	m := tsMatrix(t)
	for _, discovered := range []bool{true, false} {
		for _, sh := range shapes {
			v, _ := m.Cell(sh.Name, clientValidating, discovered)
			ts, _ := m.Cell(sh.Name, clientTSv1, discovered)
			if v.Outcome() != ts.Outcome() {
				t.Errorf("%s, listed %v: emulation %q, ts-v1 %q (%s)", sh.Name, discovered, v.Outcome(), ts.Outcome(), ts.Error)
			}
		}
	}
}

// TestTSSkipped checks that missing TypeScript clients are reported, with
// the Go columns still there.
func TestTSSkipped(t *testing.T) {
	empty := t.TempDir()
	noModules := t.TempDir()
	if err := os.WriteFile(filepath.Join(noModules, tsScript), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(tsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{}, "no TypeScript clients directory"},
		{Options{TSClients: empty}, filepath.Join(empty, tsScript) + " is missing"},
		{Options{TSClients: noModules}, "@modelcontextprotocol/sdk is not installed: run scripts/test"},
		{Options{TSClients: abs, Node: filepath.Join(empty, "node")}, "not found: install Node.js"},
	} {
		t.Run(c.want, func(t *testing.T) {
			m, err := Run(context.Background(), c.o)
			if err != nil {
				t.Fatalf("%+v: %v", c.o, err)
			}
			if !strings.Contains(m.TSSkipped, c.want) {
				t.Errorf("%+v: skipped %q, want it to say %q", c.o, m.TSSkipped, c.want)
			}
			if len(m.Cells) != 4*len(shapes) || len(m.TSClients) != 0 {
				t.Errorf("%+v: %d cells and %d TypeScript clients, want the Go clients' %d alone", c.o, len(m.Cells), len(m.TSClients), 4*len(shapes))
			}
			var b strings.Builder
			if err := WriteTable(&b, m); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "TypeScript clients (ts-v1, ts-v2) not run: "+m.TSSkipped) || strings.Contains(b.String(), "ts-v1 ") {
				t.Errorf("%+v: table\n%s", c.o, b.String())
			}
		})
	}
}

func TestFindTSClients(t *testing.T) {
	want, err := filepath.Abs(tsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{".", "../..", tsDir} {
		t.Run(dir, func(t *testing.T) {
			if got := FindTSClients(dir); got != want {
				t.Errorf("FindTSClients(%q) = %q, want %q", dir, got, want)
			}
		})
	}
	if got := FindTSClients(t.TempDir()); got != "" {
		t.Errorf("FindTSClients(a temporary directory) = %q, want none", got)
	}
}

// TestLockPinsTSClients keeps the TypeScript clients pinned at seed 003's
// versions, and the lock file free of download locations (npm writes none
// with omit-lockfile-registry-resolved, scripts/ts-clients/.npmrc).
func TestLockPinsTSClients(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(tsDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`"resolved"`, ".tgz"} {
		if strings.Contains(string(data), bad) {
			t.Errorf("package-lock.json contains %s: regenerate it with omit-lockfile-registry-resolved (scripts/ts-clients/.npmrc)", bad)
		}
	}
	for pkg, version := range map[string]string{"sdk": "1.32.2", "client": "2.4.0"} {
		if !strings.Contains(string(data), `"node_modules/@modelcontextprotocol/`+pkg+`": {`+"\n"+`      "version": "`+version+`"`) {
			t.Errorf("package-lock.json does not pin @modelcontextprotocol/%s %s", pkg, version)
		}
	}
}
