package dbenv

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpstress/stress/env"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/scenario"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// Name is the database environment's name in the registry, the value of
// a manifest's environment field.
const Name = "database"

// Pseudonym is the server pseudonym of the database scenarios' corpus
// records (their bootstrap cluster), unless a set names its own
// (server_name).
const Pseudonym = "DB"

//go:embed scenarios/*.json
var builtin embed.FS

// DefaultSet is the shipped set.
const DefaultSet = "shop"

// BuiltinSet loads the embedded set name ("" for DefaultSet).
func BuiltinSet(name string) (*Set, error) {
	name = cmp.Or(name, DefaultSet)
	file, data, err := scenario.Builtin(builtin, "env/dbenv", name)
	if err != nil {
		return nil, fmt.Errorf("dbenv: %w", err)
	}
	return Parse(file, name, data)
}

func init() {
	env.Register(Name, env.Backend{Factory: open, Actor: actor})
}

// open makes the environments of a study of m: the shipped set's on the
// engine m's database field names (sqlite by default), after checking
// that every record of m's corpus is one of its scenarios.
func open(m *manifests.Resolved, o env.Options) (simulator.EnvFactory, error) {
	set, err := manifestSet(m)
	if err != nil {
		return nil, err
	}
	if err := fits(set, m.Corpus.Scenarios); err != nil {
		return nil, fmt.Errorf("manifest %s: field environment: %q runs the database scenarios, and its corpus %s does not fit them:\n%w", m.Source, Name, m.Manifest.Corpus, err)
	}
	node, script, err := FindDBHub(m.Source)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: its corpus runs on the database environment, and %w", m.Source, err)
	}
	pg := PostgresOptions{URL: m.DatabaseURL}
	if m.DatabaseURLEnv != "" {
		if pg.URL = os.Getenv(m.DatabaseURLEnv); pg.URL == "" {
			return nil, fmt.Errorf("manifest %s: field database_url_env: environment variable %s is empty or unset", m.Source, m.DatabaseURLEnv)
		}
	}
	f, err := NewFactory(context.Background(), set, Options{Engine: m.Database, Node: node, DBHub: script, Reuse: true,
		CallTimeout: m.EnvDeadline(), ProtocolVersion: m.ProtocolVersion, Postgres: pg})
	if err != nil {
		return nil, fmt.Errorf("manifest %s: field database: %w", m.Source, err)
	}
	return f, nil
}

// manifestSet is the scenario set of m: the file its scenarios field
// names (relative to the manifest), else the shipped set.
func manifestSet(m *manifests.Resolved) (*Set, error) {
	if m.Scenarios == "" {
		return BuiltinSet("")
	}
	file := m.Scenarios
	if !filepath.IsAbs(file) && !strings.HasPrefix(m.Source, "builtin:") {
		file = filepath.Join(filepath.Dir(m.Source), file)
	}
	set, err := ParseFile(file)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: field scenarios: %w", m.Source, err)
	}
	return set, nil
}

// ParseFile reads and checks the scenario set in file (its name is the
// file's base name without .json); ${set} in its server's arguments is
// the file's directory.
func ParseFile(file string) (*Set, error) {
	data, err := input.ReadFile(file, input.ScenarioSet)
	if err != nil {
		return nil, err
	}
	set, err := Parse(file, strings.TrimSuffix(filepath.Base(file), ".json"), data)
	if err != nil {
		return nil, err
	}
	if set.dir, err = filepath.Abs(filepath.Dir(file)); err != nil {
		return nil, err
	}
	return set, nil
}

// fits checks that every record of corpus is a scenario of set, on the
// database's pseudonym, with the scenario's proven preferred set.
func fits(set *Set, corpus []study.Scenario) error {
	var errs, missing []error
	for i := range corpus {
		r := &corpus[i]
		sc, ok := set.Scenario(r.ID)
		switch {
		case !ok:
			missing = append(missing, fmt.Errorf("record %s: not a scenario of dbenv set %s (a study on the database runs only its records, such as corpus/act-database)", r.ID, set.Name))
		case r.Server != set.pseudonym():
			errs = append(errs, fmt.Errorf("record %s: field server is %s, but the scenarios of set %s run on %s", r.ID, r.Server, set.Name, set.pseudonym()))
		case !slices.Equal(r.ProvenSet(), sc.PreferredSet):
			errs = append(errs, fmt.Errorf("record %s: field preferred_policies is %v, but database scenario %s has %v", r.ID, r.ProvenSet(), sc.ID, sc.PreferredSet))
		}
	}
	if len(missing) > 5 {
		missing = append(missing[:5], fmt.Errorf("and %d more records that are not", len(missing)-5))
	}
	return errors.Join(append(missing, errs...)...)
}

// actor returns the environment of database scenario id on SQLite, for
// stress render -act; closing it removes its database.
func actor(id string, o env.Options) (simulator.Actor, error) {
	set, err := BuiltinSet("")
	if err != nil {
		return nil, err
	}
	if _, ok := set.Scenario(id); !ok {
		return nil, fmt.Errorf("dbenv set %s has no scenario %q", set.Name, id)
	}
	node, script, err := FindDBHub("")
	if err != nil {
		return nil, fmt.Errorf("scenario %s runs on the database environment, and %w", id, err)
	}
	f, err := NewFactory(context.Background(), set, Options{Node: node, DBHub: script})
	if err != nil {
		return nil, err
	}
	e, err := f.Actor(id)
	if err != nil {
		f.Close()
		return nil, err
	}
	e.owned = true
	return e, nil
}
