package readers

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	_ "github.com/jackc/pgx/v5/stdlib" // the driver "pgx": PostgreSQL
	msqlite "modernc.org/sqlite"       // the driver "sqlite": SQLite, pure Go

	"github.com/mcpstress/stress/statediff"
)

// MaxRows is the rows of one table SQL reads at most.
const MaxRows = 10_000

// Table is a table SQL reads.
type Table struct {
	Name string // the table, a plain identifier matched exactly (it is quoted)
	// Key is the table's primary key, the order of its rows: at least
	// one column.
	Key []string
	// Columns are the columns read; empty: every column of the table.
	Columns []string
}

// SQL reads declared tables of a database into doc["tables"][table]: an
// array of the table's rows in the order of its Key, each an object of
// its columns. SQL values map to JSON as follows:
//
//	integers, floats        number (float64); an integer beyond 2^53
//	                        that a float64 cannot hold is its decimal text
//	numeric, decimal        number when the float64 reads back as the same
//	                        decimal (strconv's shortest form: 19.99 is
//	                        19.99), else its decimal text
//	NaN, ±Infinity          "NaN", "Infinity", "-Infinity"
//	text (and other types   string (invalid UTF-8 replaced as
//	the driver gives as     encoding/json does)
//	text: uuid, interval…)
//	bool                    true, false (SQLite: 0 and 1 of a column
//	                        declared BOOLEAN)
//	NULL                    null
//	date, timestamp[tz]     RFC 3339 string in UTC
//	                        ("2026-01-02T15:04:05.5Z")
//	json, jsonb             the JSON value
//	bytea, blob             base64 string (standard, padded)
//
// At most Limit rows of a table are read (MaxRows when 0); a table with
// more is named in capped. Names are plain identifiers
// ([A-Za-z_][A-Za-z0-9_]*), quoted in the query; any other name is an
// error naming the table. Names are quoted as identifiers ("name"; on
// SQLite [name], which cannot fall back to a string literal). A table or
// column that does not exist is an error naming the table.
type SQL struct {
	DB     *sql.DB
	Tables []Table
	Limit  int // rows a table at most; 0 for MaxRows
}

var _ statediff.Reader = (*SQL)(nil)

// Read implements statediff.Reader. doc["tables"] is made when missing,
// and each table read replaces its member.
func (r *SQL) Read(ctx context.Context, doc map[string]any) ([]string, error) {
	if r.DB == nil {
		return nil, errors.New("readers: SQL has no database")
	}
	if err := CheckTables(r.Tables); err != nil {
		return nil, err
	}
	limit := r.Limit
	if limit <= 0 {
		limit = MaxRows
	}
	tables, _ := doc["tables"].(map[string]any)
	if tables == nil {
		tables = map[string]any{}
	}
	var capped []string
	for i := range r.Tables {
		t := &r.Tables[i]
		rows, more, err := readTable(ctx, r.DB, t, limit)
		if err != nil {
			return capped, err
		}
		if more {
			note := fmt.Sprintf("table %s: more than %d rows: the rest were not read", t.Name, limit)
			var n int64
			if err := r.DB.QueryRowContext(ctx, "SELECT count(*) FROM "+quoter(r.DB)(t.Name)).Scan(&n); err == nil {
				note = fmt.Sprintf("table %s: %d of its %d rows read", t.Name, limit, n)
			}
			capped = append(capped, note)
		}
		tables[t.Name] = rows
	}
	doc["tables"] = tables
	return capped, nil
}

// identifiers are the names SQL accepts.
var identifiers = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckTables checks declared tables: plain names, a key, no table twice,
// no column twice; the error names the table.
func CheckTables(tables []Table) error {
	seen := map[string]bool{}
	for i, t := range tables {
		if !identifiers.MatchString(t.Name) {
			return fmt.Errorf("readers: table %q (tables[%d]): not a plain name ([A-Za-z_][A-Za-z0-9_]*)", t.Name, i)
		}
		if seen[t.Name] {
			return fmt.Errorf("readers: table %s (tables[%d]): declared twice", t.Name, i)
		}
		seen[t.Name] = true
		if len(t.Key) == 0 {
			return fmt.Errorf("readers: table %s: no key (the columns its rows are ordered by)", t.Name)
		}
		for _, list := range []struct {
			field string
			names []string
		}{{"key", t.Key}, {"columns", t.Columns}} {
			cols := map[string]bool{}
			for _, c := range list.names {
				if !identifiers.MatchString(c) {
					return fmt.Errorf("readers: table %s: %s column %q: not a plain name ([A-Za-z_][A-Za-z0-9_]*)", t.Name, list.field, c)
				}
				if cols[c] {
					return fmt.Errorf("readers: table %s: %s column %s named twice", t.Name, list.field, c)
				}
				cols[c] = true
			}
		}
	}
	return nil
}

// quoter returns the identifier quoting of db's dialect: "name", or
// [name] on SQLite, where a double-quoted name that is no column reads
// as a string literal (a misspelt column would be read as its own name
// on every row, a misspelt key would order nothing), while a bracketed
// one is an identifier only.
func quoter(db *sql.DB) func(string) string {
	_, lite := db.Driver().(*msqlite.Driver)
	if lite || strings.Contains(strings.ToLower(fmt.Sprintf("%T", db.Driver())), "sqlite") {
		return func(name string) string { return "[" + name + "]" }
	}
	return func(name string) string { return `"` + name + `"` }
}

// readTable reads at most limit rows of t, and whether there were more.
func readTable(ctx context.Context, db *sql.DB, t *Table, limit int) ([]any, bool, error) {
	ident := quoter(db)
	cols := "*"
	if len(t.Columns) > 0 {
		q := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			q[i] = ident(c)
		}
		cols = strings.Join(q, ", ")
	}
	keys := make([]string, len(t.Key))
	for i, k := range t.Key {
		keys[i] = ident(k)
	}
	query := fmt.Sprintf("SELECT %s FROM %s ORDER BY %s LIMIT %d", cols, ident(t.Name), strings.Join(keys, ", "), limit+1)
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, false, fmt.Errorf("readers: table %s: %w", t.Name, err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, false, fmt.Errorf("readers: table %s: %w", t.Name, err)
	}
	names := make([]string, len(types))
	for i, ct := range types {
		names[i] = ct.Name()
	}
	out := []any{}
	vals := make([]any, len(types))
	ptrs := make([]any, len(types))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	more := false
	for rows.Next() {
		if len(out) == limit {
			more = true
			break
		}
		for i := range vals {
			vals[i] = nil
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, false, fmt.Errorf("readers: table %s, row %d: %w", t.Name, len(out)+1, err)
		}
		rec := make(map[string]any, len(vals))
		for i, v := range vals {
			j, err := jsonValue(v, types[i].DatabaseTypeName())
			if err != nil {
				return nil, false, fmt.Errorf("readers: table %s, row %d, column %s: %w", t.Name, len(out)+1, names[i], err)
			}
			rec[names[i]] = j
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("readers: table %s: %w", t.Name, err)
	}
	return out, more, nil
}

// jsonValue maps a value a driver scanned into the JSON value the
// document holds; dbType is the column's type as the driver names it.
func jsonValue(v any, dbType string) (any, error) {
	typ := strings.ToUpper(dbType)
	base, _, _ := strings.Cut(typ, "(")
	base = strings.TrimSpace(base)
	switch v := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return v, nil
	case int64:
		if (base == "BOOL" || base == "BOOLEAN") && (v == 0 || v == 1) { // SQLite's booleans are integers
			return v == 1, nil
		}
		return integer(v), nil
	case int32:
		return float64(v), nil
	case int:
		return integer(int64(v)), nil
	case float32:
		return float(float64(v)), nil
	case float64:
		return float(v), nil
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano), nil
	case []byte:
		switch {
		case base == "JSON" || base == "JSONB":
			var j any
			if err := json.Unmarshal(v, &j); err != nil {
				return nil, fmt.Errorf("a %s value that is not JSON: %v", base, err)
			}
			return j, nil
		case textual(base) && utf8.Valid(v):
			return string(v), nil
		}
		return base64.StdEncoding.EncodeToString(v), nil
	case string:
		if base == "NUMERIC" || base == "DECIMAL" {
			return decimal(v), nil
		}
		if base == "JSON" || base == "JSONB" {
			var j any
			if err := json.Unmarshal([]byte(v), &j); err == nil {
				return j, nil
			}
		}
		return validUTF8(v), nil
	case fmt.Stringer:
		return validUTF8(v.String()), nil
	}
	return nil, fmt.Errorf("a value of type %s (Go %T) that the reader does not map to JSON", dbType, v)
}

// textual reports whether a column type holds text (a []byte of it is
// text, not binary).
func textual(base string) bool {
	switch base {
	case "TEXT", "VARCHAR", "CHAR", "BPCHAR", "CHARACTER", "NAME", "CLOB", "NVARCHAR", "NCHAR", "XML", "CITEXT":
		return true
	}
	return strings.Contains(base, "CHAR") || strings.Contains(base, "TEXT")
}

// integer maps an integer to a float64 when one holds it exactly, else to
// its decimal text.
func integer(n int64) any {
	if n >= -(1<<53) && n <= 1<<53 {
		return float64(n)
	}
	return strconv.FormatInt(n, 10)
}

// float maps a float, with NaN and the infinities as PostgreSQL writes
// them (JSON has no number for them).
func float(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

// decimal maps a decimal's text to a float64 when the float64 reads back
// as the same decimal (strconv's shortest form), else keeps the text.
func decimal(s string) any {
	want, ok := new(big.Rat).SetString(strings.TrimSpace(s))
	if !ok { // NaN, Infinity, or text the reader does not know
		return validUTF8(s)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsInf(f, 0) {
		return validUTF8(s)
	}
	got, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok || got.Cmp(want) != 0 {
		return validUTF8(s)
	}
	return f
}

// OpenSQL opens a database by its URL: postgres://… or postgresql://…
// (PostgreSQL through pgx's database/sql driver), sqlite:///abs/path (an
// SQLite file, by the pure-Go modernc.org/sqlite; a query after the path
// is that driver's, such as ?_pragma=foreign_keys(1)) or file:… (passed
// to the SQLite driver as it is). It does not connect: the first use
// does. Errors name the scheme, never the whole URL, which may hold a
// password.
func OpenSQL(dsn string) (*sql.DB, error) {
	switch scheme, rest, _ := strings.Cut(dsn, ":"); strings.ToLower(scheme) {
	case "postgres", "postgresql":
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, fmt.Errorf("readers: opening a %s database: %w", scheme, err)
		}
		return db, nil
	case "sqlite":
		path, ok := strings.CutPrefix(rest, "//")
		if !ok || !strings.HasPrefix(path, "/") {
			return nil, errors.New("readers: an SQLite URL is sqlite:///absolute/path (three slashes and an absolute path)")
		}
		return openSQLite("file:" + path)
	case "file":
		return openSQLite(dsn)
	case "":
		return nil, errors.New("readers: an empty database URL")
	default:
		if !identifiers.MatchString(scheme) {
			scheme = "(none)"
		}
		return nil, fmt.Errorf("readers: database URL of scheme %s: want one of scheme postgres, postgresql, sqlite (sqlite:///path) or file", scheme)
	}
}

// openSQLite opens an SQLite database by the modernc driver's DSN.
func openSQLite(dsn string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("readers: opening an SQLite database: %w", err)
	}
	return db, nil
}
