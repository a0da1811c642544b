package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// missing skips a test whose tool is not installed, and fails it in CI
// (CI=true), where .ci/run installs it.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// start starts a cluster for the test, stopped at its end.
func start(t testing.TB) *Cluster {
	t.Helper()
	if _, err := findBin(""); err != nil {
		missing(t, "%v", err)
	}
	c, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// schema is a small template: 3 tables, 20 rows.
const schema = `
CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, email text UNIQUE);
CREATE TABLE products (sku text PRIMARY KEY, title text NOT NULL, price_cents integer NOT NULL);
CREATE TABLE orders (id serial PRIMARY KEY, customer_id integer REFERENCES customers(id), sku text REFERENCES products(sku),
	quantity integer NOT NULL, status text NOT NULL DEFAULT 'open');
INSERT INTO customers (name, email) VALUES ('Ada', 'ada@example.com'), ('Grace', 'grace@example.com'),
	('Linus', 'linus@example.com'), ('Barbara', 'barbara@example.com'), ('Ken', 'ken@example.com');
INSERT INTO products VALUES ('P-1', 'Tea', 450), ('P-2', 'Coffee', 600), ('P-3', 'Cocoa', 520), ('P-4', 'Mate', 700),
	('P-5', 'Chai', 480);
INSERT INTO orders (customer_id, sku, quantity) VALUES (1, 'P-1', 2), (2, 'P-2', 1), (3, 'P-3', 5), (4, 'P-4', 1),
	(5, 'P-5', 3), (1, 'P-2', 1), (2, 'P-3', 2), (3, 'P-4', 4), (4, 'P-5', 1), (5, 'P-1', 6);
`

// count returns the rows of table in database db.
func count(t testing.TB, c *Cluster, db, table string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCluster starts a real cluster, fills a template, clones it, changes
// the clone (the template keeps its rows), drops the clone and the
// template, and stops: the directory is gone.
func TestCluster(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	if !strings.HasPrefix(c.DSN("x"), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/x?sslmode=disable", c.Port())) {
		t.Errorf("DSN %s", c.DSN("x"))
	}
	if err := c.CreateTemplate(ctx, "shop", schema); err != nil {
		t.Fatal(err)
	}
	if err := c.Clone(ctx, "shop", "task_1"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, c, "task_1", "orders"); n != 10 {
		t.Errorf("the clone holds %d orders, want 10", n)
	}
	if n := count(t, c, "task_1", "customers"); n != 5 {
		t.Errorf("the clone holds %d customers, want 5", n)
	}
	if err := c.Exec(ctx, "task_1", "DELETE FROM orders WHERE id > 3; UPDATE products SET price_cents = 1"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, c, "task_1", "orders"); n != 3 {
		t.Errorf("after the delete the clone holds %d orders, want 3", n)
	}
	// A second clone starts from the template, not from the first.
	if err := c.Clone(ctx, "shop", "task_2"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, c, "task_2", "orders"); n != 10 {
		t.Errorf("a second clone holds %d orders, want 10", n)
	}
	// A session open on the clone does not stop Drop.
	conn, err := pgx.Connect(ctx, c.DSN("task_2"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, db := range []string{"task_1", "task_2", "shop"} {
		if err := c.Drop(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Exec(ctx, "task_1", "SELECT 1"); err == nil || !strings.Contains(err.Error(), "task_1") {
		t.Errorf("a dropped database: %v", err)
	}
	if err := c.Clone(ctx, "shop", "task_3"); err == nil {
		t.Error("a clone of a dropped template")
	}
	dir := c.Dir()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Stop the cluster's directory %s: %v", dir, err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// TestErrors: bad names are refused before any SQL runs, a bad template
// script names the template and leaves no database behind, and a
// directory with no programs says where it looked.
func TestErrors(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	for _, name := range []string{"", "a-b", `x"; DROP DATABASE postgres; --`, "1abc", strings.Repeat("a", 64)} {
		t.Run(fmt.Sprintf("refuses %q", name), func(t *testing.T) {
			if err := c.Clone(ctx, "template1", name); err == nil || !strings.Contains(err.Error(), "not a plain identifier") {
				t.Errorf("Clone into %q: %v", name, err)
			}
		})
	}
	err := c.CreateTemplate(ctx, "broken", "CREATE TABLE t (id int); INSERT INTO nowhere VALUES (1)")
	if err == nil || !strings.Contains(err.Error(), "broken") || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("a bad template script: %v", err)
	}
	if err := c.CreateTemplate(ctx, "broken", "CREATE TABLE t (id int)"); err != nil {
		t.Errorf("the failed template was left behind: %v", err)
	}
	_, err = Start(ctx, Options{Bin: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "does not hold initdb") {
		t.Errorf("a directory without the programs: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	t.Setenv(binVar, "")
	if _, err := findBin(""); err != nil && !strings.Contains(err.Error(), "postgresql package") {
		t.Errorf("no programs anywhere: %v", err)
	}
}

// BenchmarkClone measures the design the database environment uses: a
// fresh database per task, cloned from a small template (3 tables, 20
// rows) and dropped after it.
func BenchmarkClone(b *testing.B) {
	c := start(b)
	ctx := context.Background()
	if err := c.CreateTemplate(ctx, "shop", schema); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("task_%d", i)
		if err := c.Clone(ctx, "shop", name); err != nil {
			b.Fatal(err)
		}
		if err := c.Drop(ctx, name); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransaction measures the alternative design: one database,
// each task a transaction (a few writes) rolled back after it. It is
// cheaper but cannot hold a task that commits, opens its own
// transactions or changes the schema.
func BenchmarkTransaction(b *testing.B) {
	c := start(b)
	ctx := context.Background()
	if err := c.CreateTemplate(ctx, "shop", schema); err != nil {
		b.Fatal(err)
	}
	if err := c.Clone(ctx, "shop", "task"); err != nil {
		b.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.DSN("task"))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	b.ResetTimer()
	for b.Loop() {
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range []string{
			"INSERT INTO orders (customer_id, sku, quantity) VALUES (1, 'P-3', 2)",
			"UPDATE orders SET status = 'shipped' WHERE id = 2",
			"DELETE FROM orders WHERE id = 3",
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Rollback(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
