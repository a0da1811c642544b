package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/internal/pgcluster"
)

// TestDatabaseOwnPostgres runs act-database.yaml on a PostgreSQL server
// "you run" (a cluster the test starts, reached as a role with a
// password and CREATEDB) named by database_url_env: the counts are the
// SQLite run's, and the password is nowhere in the bundle or the output.
func TestDatabaseOwnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	ctx := context.Background()
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		if strings.Contains(err.Error(), "no PostgreSQL") {
			missing(t, "%v", err)
		}
		t.Fatal(err)
	}
	defer c.Stop()
	const secret = "Sekret-Zx81-pw"
	for _, q := range []string{"CREATE ROLE runner LOGIN CREATEDB PASSWORD '" + secret + "'", "CREATE DATABASE shop OWNER runner"} {
		if err := c.Exec(ctx, "postgres", q); err != nil {
			t.Fatal(err)
		}
	}
	url := strings.Replace(c.DSN("shop"), pgcluster.User+"@", "runner:"+secret+"@", 1)
	t.Setenv("STRESS_TEST_PG_URL", url)

	repo, _ := filepath.Abs("../..")
	m, err := os.ReadFile(filepath.Join(repo, "manifests", "act-database.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer(
		"corpus: corpus/act-database", "corpus: "+filepath.Join(repo, "manifests", "corpus", "act-database"),
		"path: prompts/act.tmpl", "path: "+filepath.Join(repo, "manifests", "prompts", "act.tmpl"),
		"database: sqlite", "database: postgres\ndatabase_url_env: STRESS_TEST_PG_URL",
	).Replace(string(m))
	dir := t.TempDir()
	manifest := filepath.Join(dir, "act-database-pg.yaml")
	if err := os.WriteFile(manifest, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STRESS_DB_SERVERS", filepath.Join(repo, "scripts", "db-servers", "node_modules"))
	bundle := filepath.Join(dir, "run")
	out, log, err := runCmd(t, "run", "-quiet", "-out", bundle, manifest)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	for _, row := range []string{
		"always_stop    act     normalized  16  2       4       0      0      0        0      0       3          0     0    0       0       0     0        0       16     70000  0      0",
		"naive_retry    act     normalized  16  4       5       16     2      0        0      0       4          2     2    0       0       0     0        0       54     70000  38     0",
		"schema_repair  act     normalized  16  4       6       2      0      0        0      0       5          0     0    0       0       0     0        0       18     70000  2      0",
	} {
		if !strings.Contains(out, row) {
			t.Errorf("the PostgreSQL run lacks the SQLite run's row\n%s\nin\n%s", row, out)
		}
	}
	if strings.Contains(out+log, secret) {
		t.Error("the output shows the password")
	}
	filepath.WalkDir(bundle, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the password", p)
		}
		return nil
	})
	// The run dropped every database it made.
	dbs, err := c.Databases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range dbs {
		if strings.HasPrefix(db, "stress_") {
			t.Errorf("database %s was left behind", db)
		}
	}
}
