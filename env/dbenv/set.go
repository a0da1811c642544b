// Package dbenv is the database environment of the action task: a real
// SQL database (SQLite, the embedded default, or PostgreSQL) behind a
// real database MCP server (DBHub, @bytebase/dbhub, pinned in
// scripts/db-servers), reached through the fault-injecting proxy
// (env/proxy), which applies the scenario's fault. Each decision gets a
// database seeded from the set's schema and rows; the outcome is read
// from the declared tables (statediff/readers.SQL) and set against the
// state the decision started in (statediff.Evaluate).
//
// A scenario set is one JSON file: the schema (per engine), the seed
// rows, the tables the diff reads, the server's tools (DBHub custom
// tools: a name, a description, a parameterized statement) and the
// scenarios, each a first call, its fault (or none: the server's own
// failure), its goal, its proven preferred policies and the canonical
// repairs. The shipped set is scenarios/shop.json; a user's own set (a
// server of their own, a database of their own) is read from a file
// (docs/bring-your-own-server.md).
package dbenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpstress/stress/env"
	"github.com/mcpstress/stress/env/proxy"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/scenario"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/statediff"
	"github.com/mcpstress/stress/study"
)

// The engines a set can run on.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Set is a scenario set: the database every scenario starts from, the
// server's tools, and the scenarios.
type Set struct {
	Name string `json:"-"`
	// Schema is the DDL that makes the tables, by engine (sqlite,
	// postgres): the one part of a set that SQL dialects make differ.
	Schema map[string]string `json:"schema"`
	// Rows is the SQL that seeds the rows every decision starts with,
	// portable between the engines.
	Rows string `json:"rows"`
	// Tables are the tables the outcome is read from.
	Tables []Table `json:"tables"`
	// Files, instead of Schema, Rows and Tables, make the state a
	// directory: the files every decision's directory starts with, by
	// path relative to it. The server (Server: ${dir} is the directory)
	// sees it as /sandbox, and the outcome is read from its files and
	// directories (/files and /directories, keyed by path, as the
	// reference servers' are).
	Files map[string]string `json:"files,omitempty"`
	// Tools are the server's custom tools (DBHub's [[tools]]): each
	// scenario's server lists them beside DBHub's own execute_sql and
	// search_objects. A set with Server leaves them to that server.
	Tools []Tool `json:"tools,omitempty"`
	// Server, when set, is the command line of the user's own MCP server
	// instead of DBHub, over stdio: in its arguments ${dsn} is the
	// decision's database URL (sqlite:///path or postgres://…), ${db}
	// its SQLite file, ${node} the Node.js 22 found for DBHub, ${set}
	// the set file's directory.
	Server []string `json:"server,omitempty"`
	// ServerName is the pseudonym of the server in the set's corpus
	// records (their bootstrap cluster); "" for Pseudonym.
	ServerName string `json:"server_name,omitempty"`
	// Scenarios are the set's scenarios (its file's scenarios member).
	Scenarios []*Scenario `json:"-"`

	schema statediff.Schema // the diff's view of Tables
	dir    string           // the set file's directory (${set}); "" for a built-in set
}

// Table is a table the outcome is read from: its name, primary key and
// columns, and what a new row may carry that a goal does not state.
type Table struct {
	Name     string         `json:"name"`
	Key      []string       `json:"key"`
	Fields   []string       `json:"fields"`             // every column (the diff refuses a goal naming another)
	Defaults map[string]any `json:"defaults,omitempty"` // the values a new row gets for columns its insert leaves out
	Free     []string       `json:"free,omitempty"`     // columns a new row gets from the database (a sequence's id)
	Ignore   []string       `json:"ignore,omitempty"`   // columns never read (an updated_at every write stamps): not in the state, not diffed
}

// Tool is a custom tool of DBHub: a parameterized statement. Parameters
// are written $1, $2, … in order, each once (they become ? on SQLite).
type Tool struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Statement   string  `json:"statement"`
	ReadOnly    bool    `json:"readonly,omitempty"`
	Parameters  []Param `json:"parameters"`
}

// Param is a tool's parameter.
type Param struct {
	Name        string `json:"name"`
	Type        string `json:"type"` // string, integer, float, boolean
	Description string `json:"description"`
}

// Scenario is one scenario on the database: the shared act scenario
// (its id, class, task, failing first call, argument at fault, whose
// rate limit a rate_limit scenario meets, preferred policies, non-harm
// set, canonical repairs, goal effect, tolerances and extra harm checks)
// and its fault.
type Scenario struct {
	env.ActScenario
	// Fault is what the proxy does to the calls of its tool; nil: the
	// first call fails on the server itself (an unknown tool, a schema
	// or constraint violation).
	Fault *proxy.Fault `json:"fault,omitempty"`
}

// Repair returns the calls that carry out policy p (the shared act
// scenario's), but for authenticate: the proxy's credential tool, when
// the fault has one, and then the failing call.
func (sc *Scenario) Repair(p study.Policy) []simulator.ToolCall {
	if p == study.Authenticate && sc.Fault != nil && sc.Fault.AuthTool != "" {
		return []simulator.ToolCall{{Tool: sc.Fault.AuthTool, Arguments: json.RawMessage(`{}`)}, sc.First()}
	}
	return sc.ActScenario.Repair(p)
}

// Scenario returns scenario id of the set.
func (s *Set) Scenario(id string) (*Scenario, bool) { return scenario.Find(s.Scenarios, id) }

// sandboxName is how a directory state appears to the model: every path
// of the decision's directory is shown as under it, and the calls the
// model writes with it reach the real directory.
const sandboxName = "/sandbox"

// dirSchema is the diff's view of a directory state: its files and
// directories keyed by path (a new file a regular file read whole, its
// size what its content makes it), as the reference servers' are.
var dirSchema = statediff.Schema{
	Collections: []statediff.Collection{
		{Path: "/files", Key: []string{"path"}, Fields: []string{"path", "content", "size", "truncated", "link", "kind"},
			Defaults: map[string]any{"truncated": nil, "link": nil, "kind": nil}, Free: []string{"size"}},
		{Path: "/directories", Key: []string{"path"}, Fields: []string{"path"}},
	},
	Logs:    []string{"/calls", "/capped"},
	Counted: []statediff.Collection{calls},
}

// calls is the log of the calls a decision made, which the extra harm
// checks may count.
var calls = statediff.Collection{Path: "/calls", Fields: []string{"seq", "tool", "arguments", "args", "ok", "injected"}}

// pseudonym is the server's pseudonym in the set's corpus records.
func (s *Set) pseudonym() string {
	if s.ServerName != "" {
		return s.ServerName
	}
	return Pseudonym
}

// StateSchema is the diff's view of the set's state: each table at
// /tables/NAME; the calls and what the reader left out are logs.
func (s *Set) StateSchema() *statediff.Schema { return &s.schema }

var (
	identifier  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	placeholder = regexp.MustCompile(`\$[0-9]+`)
)

// paramTypes are the parameter types of a DBHub custom tool the set may
// use.
var paramTypes = []string{"string", "integer", "float", "boolean"}

// Parse reads and checks a scenario set (the format of package
// scenario, with the database's members); errors name the file, the
// scenario and the field.
func Parse(file, name string, data []byte) (*Set, error) {
	s := &Set{Name: name}
	raws, err := scenario.Decode(file, data, s)
	if err != nil {
		return nil, err
	}
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &scenario.Error{File: file, Field: field, Err: fmt.Errorf(format, a...)})
	}
	if s.Files != nil {
		if len(s.Schema) > 0 || s.Rows != "" || len(s.Tables) > 0 || len(s.Tools) > 0 {
			bad("files", "a directory's state takes no schema, rows, tables or tools")
		}
		if len(s.Server) == 0 {
			bad("server", "a directory's state needs a server of your own (DBHub serves databases)")
		}
		for p := range s.Files {
			if p == "" || strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "..") {
				bad("files", "%s is not a relative path inside the directory", input.Quote(p))
			}
		}
		s.schema = dirSchema
	} else if strings.TrimSpace(s.Schema[SQLite]) == "" && strings.TrimSpace(s.Schema[Postgres]) == "" {
		bad("schema", "give the DDL of at least one engine (sqlite, postgres), or files for a directory")
	}
	for e := range s.Schema {
		if e != SQLite && e != Postgres {
			bad("schema", "unknown engine %q (want sqlite or postgres)", e)
		}
	}
	if len(s.Tables) == 0 && s.Files == nil {
		bad("tables", "name the tables the outcome is read from")
	}
	if s.Files == nil {
		s.schema = statediff.Schema{Logs: []string{"/calls", "/capped"}, Counted: []statediff.Collection{calls}}
	}
	for i, t := range s.Tables {
		at := fmt.Sprintf("tables[%d]", i)
		if !identifier.MatchString(t.Name) {
			bad(at+".name", "want a plain SQL name, got %s", input.Quote(t.Name))
		}
		if len(t.Key) == 0 {
			bad(at+".key", "name the table's primary key columns")
		}
		for _, c := range slices.Concat(t.Key, t.Fields, t.Free, t.Ignore) {
			if !identifier.MatchString(c) {
				bad(at, "column %s is not a plain SQL name", input.Quote(c))
			} else if !slices.Contains(t.Fields, c) {
				bad(at+".fields", "column %s is used but not listed", c)
			}
		}
		s.schema.Collections = append(s.schema.Collections, statediff.Collection{
			Path: "/tables/" + t.Name, Key: t.Key, Fields: t.Fields, Defaults: t.Defaults, Free: t.Free, Ignore: t.Ignore})
	}
	for i, t := range s.Tools {
		at := fmt.Sprintf("tools[%d]", i)
		if !identifier.MatchString(t.Name) {
			bad(at+".name", "want a tool name of letters, digits and _, got %s", input.Quote(t.Name))
		}
		if strings.TrimSpace(t.Description) == "" || strings.TrimSpace(t.Statement) == "" {
			bad(at, "a tool needs a description and a statement")
		}
		refs := placeholder.FindAllString(t.Statement, -1)
		for j, r := range refs {
			if r != fmt.Sprintf("$%d", j+1) {
				bad(at+".statement", "parameters must be written $1, $2, … in order, each once (found %s as the %d. placeholder)", r, j+1)
				break
			}
		}
		if len(refs) != len(t.Parameters) {
			bad(at+".parameters", "the statement has %d placeholders and the tool %d parameters", len(refs), len(t.Parameters))
		}
		for j, p := range t.Parameters {
			if !identifier.MatchString(p.Name) || !slices.Contains(paramTypes, p.Type) {
				bad(fmt.Sprintf("%s.parameters[%d]", at, j), "want a plain name and a type of %v", paramTypes)
			}
		}
	}
	if s.ServerName != "" && !identifier.MatchString(s.ServerName) {
		bad("server_name", "want a short pseudonym of letters, digits and _, got %s", input.Quote(s.ServerName))
	}
	if len(s.Server) > 0 && len(s.Tools) > 0 {
		bad("tools", "a set with its own server lists that server's tools, not DBHub's custom tools")
	}
	scs, serrs := scenario.Parse(file, raws, check)
	errs = append(errs, serrs...)
	s.Scenarios = scs
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// check checks the database's fields of scenario sc beside
// scenario.Base's: its class and fault. Its goal and extra harm checks
// are checked against the seeded database (Factory).
func check(sc *Scenario, bad func(field, format string, a ...any)) {
	sc.ActScenario.Check(bad)
	if _, ok := sc.Class.Info(); !ok {
		bad("class", "unknown class %q", sc.Class)
	}
	if sc.Fault != nil {
		if err := sc.Fault.Check(); err != nil {
			bad("fault", "%v", err)
		} else if sc.Fault.Tool != sc.Tool {
			bad("fault.tool", "the fault is on %s, the first call on %s", sc.Fault.Tool, sc.Tool)
		} else if sc.Fault.Class != sc.Class {
			bad("fault.class", "the fault is %s, the scenario %s", sc.Fault.Class, sc.Class)
		}
	}
}
