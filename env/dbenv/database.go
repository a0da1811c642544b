package dbenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcpstress/stress/internal/pgcluster"
	"github.com/mcpstress/stress/statediff/readers"
)

// database is one decision's database: the URL the server connects to,
// the harness's own connection (to read the state and reset it), and
// how to remove it.
type database struct {
	url  string  // sqlite:///path or postgres://… ("" for a directory)
	file string  // the SQLite file ("" on PostgreSQL)
	dir  string  // the directory of a directory state
	db   *sql.DB // the harness's connection
	drop func() error
}

// engine makes databases seeded from a set.
type engine interface {
	// create makes a fresh database, seeded.
	create(ctx context.Context) (*database, error)
	// reset brings a database back to the seeded state, in place, for
	// the next decision on a server kept running.
	reset(ctx context.Context, d *database) error
	// hasTable reports whether the database has a table of that name.
	hasTable(ctx context.Context, d *database, name string) (bool, error)
	// schema returns a fingerprint of the database's schema (tables,
	// columns, constraints, indexes, views, triggers): a kept database
	// whose schema a decision changed (execute_sql takes DDL too) is not
	// reused, since resetting its rows would not undo that.
	schema(ctx context.Context, d *database) (string, error)
	close() error
}

// sqliteEngine copies a seeded template file per database.
type sqliteEngine struct {
	set      *Set
	dir      string // holds the template and every database
	template []byte // the seeded file's bytes
	n        atomic.Int64
}

func newSQLite(ctx context.Context, set *Set) (*sqliteEngine, error) {
	if strings.TrimSpace(set.Schema[SQLite]) == "" {
		return nil, fmt.Errorf("scenario set %s has no sqlite schema", set.Name)
	}
	dir, err := os.MkdirTemp("", "stress-dbenv-")
	if err != nil {
		return nil, err
	}
	e := &sqliteEngine{set: set, dir: dir}
	path := filepath.Join(dir, "template.db")
	db, err := readers.OpenSQL("sqlite://" + path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer db.Close()
	for _, q := range []string{set.Schema[SQLite], set.Rows} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("scenario set %s: seeding SQLite: %w", set.Name, err)
		}
	}
	db.Close()
	if e.template, err = os.ReadFile(path); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return e, nil
}

func (e *sqliteEngine) create(ctx context.Context) (*database, error) {
	path := filepath.Join(e.dir, fmt.Sprintf("d%d.db", e.n.Add(1)))
	if err := os.WriteFile(path, e.template, 0o644); err != nil {
		return nil, err
	}
	db, err := readers.OpenSQL("sqlite://" + path)
	if err != nil {
		return nil, err
	}
	return &database{url: "sqlite://" + path, file: path, db: db, drop: func() error {
		db.Close()
		err := os.Remove(path)
		for _, x := range []string{"-journal", "-wal", "-shm"} {
			os.Remove(path + x)
		}
		return err
	}}, nil
}

// reset deletes every row of the set's tables (in reverse order, for
// the foreign keys), forgets the sequences and seeds the rows again, in
// one transaction.
func (e *sqliteEngine) reset(ctx context.Context, d *database) error {
	var b strings.Builder
	b.WriteString("BEGIN;\n")
	for i := len(e.set.Tables) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "DELETE FROM %q;\n", e.set.Tables[i].Name)
	}
	var seq int
	if d.db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'").Scan(&seq); seq > 0 {
		b.WriteString("DELETE FROM sqlite_sequence;\n")
	}
	b.WriteString(e.set.Rows)
	b.WriteString(";\nCOMMIT;")
	_, err := d.db.ExecContext(ctx, b.String())
	return err
}

func (e *sqliteEngine) hasTable(ctx context.Context, d *database, name string) (bool, error) {
	var n int
	err := d.db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", name).Scan(&n)
	return n > 0, err
}

func (e *sqliteEngine) schema(ctx context.Context, d *database) (string, error) {
	var fp string
	err := d.db.QueryRowContext(ctx, `SELECT coalesce(group_concat(line, char(10)), '') FROM
		(SELECT type || ' ' || name || ' ' || coalesce(sql, '') AS line FROM sqlite_master ORDER BY type, name)`).Scan(&fp)
	return fp, err
}

func (e *sqliteEngine) close() error { return os.RemoveAll(e.dir) }

// postgresEngine clones a template database per decision, on a cluster
// it started (internal/pgcluster) or on a server the user runs.
type postgresEngine struct {
	set      *Set
	cluster  *pgcluster.Cluster
	template string
	tag      string // in every database's name
	n        atomic.Int64
	mu       sync.Mutex // CREATE DATABASE … TEMPLATE wants the template unused
}

func newPostgres(ctx context.Context, set *Set, o PostgresOptions) (*postgresEngine, error) {
	if strings.TrimSpace(set.Schema[Postgres]) == "" {
		return nil, fmt.Errorf("scenario set %s has no postgres schema", set.Name)
	}
	c, err := o.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	// Note: a server the user runs may hold other runs' databases: the
	// names carry a random tag.
	tag := strings.ToLower(rand.Text()[:10])
	e := &postgresEngine{set: set, cluster: c, template: "stress_" + tag + "_template", tag: tag}
	if err := c.CreateTemplate(ctx, e.template, set.Schema[Postgres]+";\n"+set.Rows); err != nil {
		c.Stop()
		return nil, fmt.Errorf("scenario set %s: seeding PostgreSQL: %w", set.Name, err)
	}
	return e, nil
}

func (e *postgresEngine) create(ctx context.Context) (*database, error) {
	name := fmt.Sprintf("stress_%s_d%d", e.tag, e.n.Add(1))
	e.mu.Lock()
	err := e.cluster.Clone(ctx, e.template, name)
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	url := e.cluster.DSN(name)
	db, err := readers.OpenSQL(url)
	if err != nil {
		e.cluster.Drop(context.Background(), name)
		return nil, err
	}
	return &database{url: url, db: db, drop: func() error {
		db.Close()
		return e.cluster.Drop(context.Background(), name)
	}}, nil
}

// reset truncates the set's tables, restarting their identities, and
// seeds the rows again, in one transaction.
func (e *postgresEngine) reset(ctx context.Context, d *database) error {
	names := make([]string, len(e.set.Tables))
	for i, t := range e.set.Tables {
		names[i] = fmt.Sprintf("%q", t.Name)
	}
	q := "BEGIN;\nTRUNCATE " + strings.Join(names, ", ") + " RESTART IDENTITY CASCADE;\n" + e.set.Rows + ";\nCOMMIT;"
	_, err := d.db.ExecContext(ctx, q)
	return err
}

func (e *postgresEngine) hasTable(ctx context.Context, d *database, name string) (bool, error) {
	var n int
	err := d.db.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1", name).Scan(&n)
	return n > 0, err
}

// pgSchema lists the schema's columns, constraints, indexes, relations
// (tables, views, sequences), triggers and functions, one line each.
const pgSchema = `SELECT coalesce(string_agg(line, E'\n' ORDER BY line), '') FROM (
	SELECT 'c ' || table_name || ' ' || column_name || ' ' || data_type || ' ' || coalesce(column_default, '') || ' ' || is_nullable AS line
		FROM information_schema.columns WHERE table_schema = current_schema()
	UNION ALL SELECT 'k ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
		FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
	UNION ALL SELECT 'i ' || indexdef FROM pg_indexes WHERE schemaname = current_schema()
	UNION ALL SELECT 'r ' || relname || ' ' || relkind::text FROM pg_class WHERE relnamespace = current_schema()::regnamespace
	UNION ALL SELECT 't ' || tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
	UNION ALL SELECT 'f ' || proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace
) s`

func (e *postgresEngine) schema(ctx context.Context, d *database) (string, error) {
	var fp string
	err := d.db.QueryRowContext(ctx, pgSchema).Scan(&fp)
	return fp, err
}

// close drops the template and stops the cluster (a server the user
// runs keeps running).
func (e *postgresEngine) close() error {
	err := e.cluster.Drop(context.Background(), e.template)
	return errors.Join(err, e.cluster.Stop())
}

var _ io.Closer = (*Factory)(nil)

// dirEngine makes a directory per decision, seeded with the set's files.
type dirEngine struct {
	set  *Set
	root string // holds every directory
	n    atomic.Int64
}

func newDir(set *Set) (*dirEngine, error) {
	root, err := os.MkdirTemp("", "stress-dbenv-dirs-")
	if err != nil {
		return nil, err
	}
	return &dirEngine{set: set, root: root}, nil
}

func (e *dirEngine) create(ctx context.Context) (*database, error) {
	dir := filepath.Join(e.root, fmt.Sprintf("d%d", e.n.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	d := &database{dir: dir, drop: func() error { return os.RemoveAll(dir) }}
	if err := e.seed(dir); err != nil {
		d.drop()
		return nil, err
	}
	return d, nil
}

// seed writes the set's files into dir.
func (e *dirEngine) seed(dir string) error {
	for p, content := range e.set.Files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// reset empties the directory and seeds it again.
func (e *dirEngine) reset(ctx context.Context, d *database) error {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return err
	}
	for _, x := range entries {
		if err := os.RemoveAll(filepath.Join(d.dir, x.Name())); err != nil {
			return err
		}
	}
	return e.seed(d.dir)
}

func (e *dirEngine) hasTable(ctx context.Context, d *database, name string) (bool, error) {
	return false, nil
}

// schema is constant: a directory has none to change.
func (e *dirEngine) schema(ctx context.Context, d *database) (string, error) { return "", nil }

func (e *dirEngine) close() error { return os.RemoveAll(e.root) }
