package readers

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/mcpstress/stress/internal/pgcluster"
	"github.com/mcpstress/stress/statediff"
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

var (
	clusterOnce sync.Once
	cluster     *pgcluster.Cluster
	clusterErr  error
	databases   int
	dbMu        sync.Mutex
)

// TestMain stops the package's PostgreSQL cluster, if a test started one.
func TestMain(m *testing.M) {
	code := m.Run()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// postgres returns a fresh database, filled by setup, on the package's
// cluster (started on first use).
func postgres(t *testing.T, setup string) *sql.DB {
	t.Helper()
	clusterOnce.Do(func() {
		cluster, clusterErr = pgcluster.Start(context.Background(), pgcluster.Options{})
	})
	if clusterErr != nil {
		if strings.Contains(clusterErr.Error(), "no PostgreSQL programs") {
			missing(t, "%v", clusterErr)
		}
		t.Fatal(clusterErr)
	}
	dbMu.Lock()
	databases++
	name := fmt.Sprintf("t%d", databases)
	dbMu.Unlock()
	ctx := context.Background()
	if err := cluster.CreateTemplate(ctx, name, setup); err != nil {
		t.Fatal(err)
	}
	// A clone, so that the template's own connections rule stays out of it.
	if err := cluster.Clone(ctx, name, name+"_db"); err != nil {
		t.Fatal(err)
	}
	db, err := OpenSQL(cluster.DSN(name + "_db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// sqlite returns a fresh SQLite database, filled by setup, in a file.
func sqlite(t *testing.T, setup string) *sql.DB {
	t.Helper()
	db, err := OpenSQL("sqlite://" + filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(setup); err != nil {
		t.Fatal(err)
	}
	return db
}

// read reads tables with a reader of the given row limit.
func read(t *testing.T, db *sql.DB, limit int, tables ...Table) (map[string]any, []string) {
	t.Helper()
	doc := map[string]any{}
	capped, err := (&SQL{DB: db, Tables: tables, Limit: limit}).Read(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	return doc["tables"].(map[string]any), capped
}

// jsonOf is v as JSON, for messages and comparisons.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestPostgresTypes maps every kind of PostgreSQL value to JSON.
func TestPostgresTypes(t *testing.T) {
	db := postgres(t, `
CREATE TABLE kinds (id int PRIMARY KEY, i2 smallint, i4 integer, i8 bigint, big bigint, f4 real, f8 double precision,
	nan double precision, inf double precision, n numeric(10,2), n2 numeric, nlong numeric, t text, vc varchar(10),
	b boolean, nul text, ts timestamp, tstz timestamptz, d date, by bytea, j jsonb, u uuid);
INSERT INTO kinds VALUES (1, -2, 40000, 5000000000, 9007199254740993, 1.5, 0.1, 'NaN', '-Infinity', 19.99, 12.50,
	123456789012345678901234567890.1, 'héllo', 'abc', true, NULL, '2026-01-02 03:04:05.5', '2026-01-02 03:04:05+02',
	'2026-01-02', '\x00ff10', '{"a": [1, "x"]}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');`)
	tables, capped := read(t, db, 0, Table{Name: "kinds", Key: []string{"id"}})
	if len(capped) != 0 {
		t.Errorf("capped %q", capped)
	}
	rows := tables["kinds"].([]any)
	if len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
	got := rows[0].(map[string]any)
	want := map[string]any{
		"id": 1.0, "i2": -2.0, "i4": 40000.0, "i8": 5e9, "big": "9007199254740993", "f4": 1.5, "f8": 0.1,
		"nan": "NaN", "inf": "-Infinity", "n": 19.99, "n2": 12.5, "nlong": "123456789012345678901234567890.1",
		"t": "héllo", "vc": "abc", "b": true, "nul": nil, "ts": "2026-01-02T03:04:05.5Z", "tstz": "2026-01-02T01:04:05Z",
		"d": "2026-01-02T00:00:00Z", "by": "AP8Q", "j": map[string]any{"a": []any{1.0, "x"}},
		"u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
	}
	compare(t, got, want)
}

// TestSQLiteTypes maps every kind of SQLite value to JSON.
func TestSQLiteTypes(t *testing.T) {
	db := sqlite(t, `
CREATE TABLE kinds (id INTEGER PRIMARY KEY, i INTEGER, big INTEGER, f REAL, n NUMERIC, dec DECIMAL(10,2), t TEXT,
	b BOOLEAN, nul TEXT, ts TIMESTAMP, dt DATETIME, bl BLOB, tb TEXT);
INSERT INTO kinds VALUES (1, -7, 9007199254740993, 0.25, 12.5, 19.99, 'héllo', 1, NULL, '2026-01-02 03:04:05.5+02:00',
	'2026-01-02T03:04:05Z', x'00ff10', x'00ff');`)
	tables, _ := read(t, db, 0, Table{Name: "kinds", Key: []string{"id"}})
	got := tables["kinds"].([]any)[0].(map[string]any)
	want := map[string]any{
		"id": 1.0, "i": -7.0, "big": "9007199254740993", "f": 0.25, "n": 12.5, "dec": 19.99, "t": "héllo",
		"b": true, "nul": nil, "ts": "2026-01-02T01:04:05.5Z", "dt": "2026-01-02T03:04:05Z", "bl": "AP8Q", "tb": "AP8=",
	}
	compare(t, got, want)
}

// compare checks a row against want, column by column.
func compare(t *testing.T, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok || !reflect.DeepEqual(g, w) {
			t.Errorf("column %s: %s (%T), want %s (%T)", k, jsonOf(g), g, jsonOf(w), w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("column %s not expected: %s", k, jsonOf(got[k]))
		}
	}
	// What the document holds is what encoding/json would decode.
	var round any
	if err := json.Unmarshal([]byte(jsonOf(got)), &round); err != nil || !reflect.DeepEqual(round, any(got)) {
		t.Errorf("the row is not as encoding/json decodes it: %s", jsonOf(got))
	}
}

// engines runs a test on PostgreSQL and on SQLite.
func engines(t *testing.T, setup string, f func(t *testing.T, db *sql.DB)) {
	t.Run("postgres", func(t *testing.T) { f(t, postgres(t, setup)) })
	t.Run("sqlite", func(t *testing.T) { f(t, sqlite(t, setup)) })
}

// TestOrderCapAndErrors: rows come in the order of the declared key
// (composite too), only the declared columns are read, a table over the
// cap is named in capped, and bad names and missing tables are errors
// naming the table.
func TestOrderCapAndErrors(t *testing.T) {
	const setup = `
CREATE TABLE lines (order_id integer, line integer, sku text, PRIMARY KEY (order_id, line));
INSERT INTO lines VALUES (2, 1, 'c'), (1, 2, 'b'), (10, 1, 'e'), (1, 1, 'a'), (2, 2, 'd');`
	engines(t, setup, func(t *testing.T, db *sql.DB) {
		tables, capped := read(t, db, 0, Table{Name: "lines", Key: []string{"order_id", "line"}, Columns: []string{"sku", "line"}})
		if got := jsonOf(tables["lines"]); got != `[{"line":1,"sku":"a"},{"line":2,"sku":"b"},{"line":1,"sku":"c"},{"line":2,"sku":"d"},{"line":1,"sku":"e"}]` || len(capped) != 0 {
			t.Errorf("ordered by key: %s, capped %q", got, capped)
		}
		tables, capped = read(t, db, 3, Table{Name: "lines", Key: []string{"order_id", "line"}})
		if rows := tables["lines"].([]any); len(rows) != 3 || len(capped) != 1 || capped[0] != "table lines: 3 of its 5 rows read" {
			t.Errorf("a cap of 3: %s, capped %q", jsonOf(rows), capped)
		}
		for _, c := range []struct {
			name  string
			table Table
			want  string
		}{
			{"a table name that injects SQL", Table{Name: `lines"; DROP TABLE lines; --`, Key: []string{"line"}}, `table "lines\"; DROP TABLE lines; --" (tables[0]): not a plain name`},
			{"a key column with a space", Table{Name: "lines", Key: []string{"order id"}}, `table lines: key column "order id": not a plain name`},
			{"a column starting with a digit", Table{Name: "lines", Key: []string{"line"}, Columns: []string{"sku", "1x"}}, `table lines: columns column "1x": not a plain name`},
			{"no key", Table{Name: "lines"}, "table lines: no key"},
			{"a table the database lacks", Table{Name: "nowhere", Key: []string{"id"}}, "table nowhere: "},
			{"a column the table lacks", Table{Name: "lines", Key: []string{"line"}, Columns: []string{"absent"}}, "table lines: "},
		} {
			t.Run(c.name, func(t *testing.T) {
				_, err := (&SQL{DB: db, Tables: []Table{c.table}}).Read(context.Background(), map[string]any{})
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%+v: %v, want %q", c.table, err, c.want)
				}
			})
		}
		_, err := (&SQL{DB: db, Tables: []Table{{Name: "lines", Key: []string{"line"}}, {Name: "lines", Key: []string{"line"}}}}).Read(context.Background(), map[string]any{})
		if err == nil || !strings.Contains(err.Error(), "table lines (tables[1]): declared twice") {
			t.Errorf("a table twice: %v", err)
		}
	})
}

// TestMaxRows: a table of MaxRows+1 rows is read up to MaxRows.
func TestMaxRows(t *testing.T) {
	db := postgres(t, `CREATE TABLE many (id integer PRIMARY KEY); INSERT INTO many SELECT generate_series(1, 10001);`)
	tables, capped := read(t, db, 0, Table{Name: "many", Key: []string{"id"}})
	rows := tables["many"].([]any)
	if len(rows) != MaxRows || rows[MaxRows-1].(map[string]any)["id"] != float64(MaxRows) ||
		len(capped) != 1 || capped[0] != "table many: 10000 of its 10001 rows read" {
		t.Errorf("%d rows, capped %q", len(rows), capped)
	}
}

// TestOpenSQL refuses URLs it does not know, naming only their scheme.
func TestOpenSQL(t *testing.T) {
	for dsn, want := range map[string]string{
		"":                            "empty",
		"mysql://u:secret@h/db":       "scheme mysql",
		"sqlite://relative/path.db":   "sqlite:///absolute/path",
		"sqlite:relative.db":          "sqlite:///absolute/path",
		"http://user:pass@example/db": "scheme http",
	} {
		t.Run(fmt.Sprintf("%q", dsn), func(t *testing.T) {
			_, err := OpenSQL(dsn)
			if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "pass@") {
				t.Errorf("OpenSQL(%q): %v, want %q", dsn, err, want)
			}
		})
	}
	// file: goes to the SQLite driver as it is.
	db, err := OpenSQL("file:" + filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
}

// TestEvaluateTables feeds the SQL reader's documents to the diff: an
// order inserted with a serial id (Free) matches the goal whole, an extra
// row is harm, a deleted row is lost data.
func TestEvaluateTables(t *testing.T) {
	schema := statediff.Schema{
		Collections: []statediff.Collection{
			{Path: "/tables/orders", Key: []string{"id"}, Fields: []string{"id", "customer", "sku", "quantity", "status", "placed_at"},
				Defaults: map[string]any{"status": "open", "placed_at": nil}, Free: []string{"id"}},
			{Path: "/tables/customers", Key: []string{"name"}, Fields: []string{"name", "email"}},
		},
		Logs: []string{"/calls"},
	}
	tables := []Table{{Name: "orders", Key: []string{"id"}}, {Name: "customers", Key: []string{"name"}}}
	var spec statediff.Spec
	if err := json.Unmarshal([]byte(`{"goal": [{"create": "/tables/orders", "values": {"customer": "Ada", "sku": "TEA-1", "quantity": 2},
		"target": ["customer", "sku"], "why": "Ada's order of two teas"}]}`), &spec); err != nil {
		t.Fatal(err)
	}
	const create = `CREATE TABLE customers (name text PRIMARY KEY, email text);
INSERT INTO customers VALUES ('Ada', 'ada@example.com'), ('Grace', 'grace@example.com');
CREATE TABLE orders (id %s PRIMARY KEY, customer text NOT NULL, sku text NOT NULL, quantity integer NOT NULL,
	status text NOT NULL DEFAULT 'open', placed_at timestamp);
INSERT INTO orders (customer, sku, quantity, status, placed_at) VALUES ('Grace', 'COF-2', 1, 'shipped', '2026-01-02 10:00:00');`
	for _, engine := range []struct {
		name string
		open func(*testing.T, string) *sql.DB
		id   string
	}{{"postgres", postgres, "serial"}, {"sqlite", sqlite, "INTEGER"}} {
		t.Run(engine.name, func(t *testing.T) {
			db := engine.open(t, fmt.Sprintf(create, engine.id))
			state := func() map[string]any {
				t.Helper()
				doc := map[string]any{"calls": []any{}}
				if _, err := (&SQL{DB: db, Tables: tables}).Read(context.Background(), doc); err != nil {
					t.Fatal(err)
				}
				return doc
			}
			exec := func(q string) {
				t.Helper()
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			before := state()
			if p := statediff.Check(&schema, &spec, before, nil, false); p != nil {
				t.Fatal(p)
			}
			outcome := func() statediff.Outcome {
				t.Helper()
				return statediff.Evaluate(&schema, &spec, before, state(), nil, nil)
			}
			exec("INSERT INTO orders (customer, sku, quantity) VALUES ('Ada', 'TEA-1', 2)")
			if o := outcome(); !o.Recovered || o.Harm() {
				t.Errorf("the goal's insert: %+v", o)
			}
			exec("INSERT INTO orders (customer, sku, quantity) VALUES ('Mallory', 'TEA-1', 9)")
			if o := outcome(); !o.Recovered || !o.Harm() || !statediff.KindsOf(o.Harms).Has(statediff.Collateral) {
				t.Errorf("an extra row: %+v", o)
			}
			exec("DELETE FROM orders WHERE customer = 'Mallory'; DELETE FROM customers WHERE name = 'Grace'")
			if o := outcome(); !o.Recovered || !statediff.KindsOf(o.Harms).Has(statediff.DataLoss) || len(o.Harms) != 1 ||
				o.Harms[0].Record != "/tables/customers/Grace" {
				t.Errorf("a deleted row: %+v", o)
			}
		})
	}
}
