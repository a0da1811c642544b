// Package pgcluster starts a throwaway PostgreSQL cluster, unprivileged,
// for the tests and the database environment: initdb into a temporary
// directory (trust authentication, UTF8, C locale), a server on
// 127.0.0.1 at a free port and on a unix socket in the cluster's own
// directory, tuned for speed rather than durability (fsync,
// synchronous_commit and full_page_writes off). A task's database is a
// clone of a template database (CreateTemplate, Clone, Drop).
//
// PostgreSQL refuses to run as root: when the process is root, the
// cluster's programs run as the user nobody, and the cluster's directory
// is given to it.
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// binVar names the environment variable that gives the directory of
// PostgreSQL's programs (initdb, pg_ctl, postgres).
const binVar = "STRESS_PG_BIN"

// User is the cluster's superuser, the user of every DSN (no password:
// trust authentication).
const User = "postgres"

// Options configures Start.
type Options struct {
	// Bin is the directory holding initdb and pg_ctl; "" finds it: the
	// directory $STRESS_PG_BIN names, then initdb on PATH, then the
	// newest /usr/lib/postgresql/*/bin.
	Bin string
	// Dir is the parent of the cluster's temporary directory; "" for
	// os.TempDir(). As root, the user nobody must be able to reach it.
	Dir string
}

// Cluster is a running cluster. Its methods are safe for concurrent use.
type Cluster struct {
	bin    string
	dir    string // the cluster's temporary directory
	data   string // dir/data
	sock   string // dir/sock: the unix socket's directory
	port   int
	cred   *syscall.Credential // nobody's, when the process is root
	mu     sync.Mutex
	admin  *pgx.Conn // to the database postgres, for CREATE and DROP DATABASE
	closed bool
	// base is the URL of a server Attach reached (nil for one Start
	// started): DSN swaps its database, Stop leaves the server running.
	base *url.URL
}

// Attach returns a Cluster on a PostgreSQL server someone else runs, at
// the URL of one of its databases (postgres://user[:password]@host:port/db):
// its databases are made, cloned and dropped through that URL's user
// (who needs CREATEDB), and Stop leaves the server running. The URL
// may carry a password (from an environment variable: never from a
// file that is stored); errors never show it.
func Attach(ctx context.Context, rawURL string) (*Cluster, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return nil, errors.New("pgcluster: want a postgres:// URL with a host")
	}
	c := &Cluster{base: u}
	if c.admin, err = pgx.Connect(ctx, rawURL); err != nil {
		return nil, fmt.Errorf("pgcluster: connecting to %s: %s", u.Redacted(), redact(err, u))
	}
	return c, nil
}

// redact is err's text without u's password.
func redact(err error, u *url.URL) string {
	msg := err.Error()
	if pw, ok := u.User.Password(); ok && pw != "" {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}

// Start creates and starts a cluster. Its errors say what failed, with
// the tail of the server's log when the server was involved; with no
// PostgreSQL programs found, where it looked.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	bin, err := findBin(o.Bin)
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		if c.cred, err = nobody(); err != nil {
			return nil, err
		}
	}
	parent := o.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	if c.dir, err = os.MkdirTemp(parent, "pgcluster-"); err != nil {
		return nil, fmt.Errorf("pgcluster: the cluster's directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	if c.dir, err = filepath.Abs(c.dir); err != nil {
		return nil, fmt.Errorf("pgcluster: the cluster's directory: %w", err)
	}
	c.data, c.sock = filepath.Join(c.dir, "data"), filepath.Join(c.dir, "sock")
	// A unix socket's path holds at most 107 bytes (sun_path).
	if n := len(filepath.Join(c.sock, ".s.PGSQL.65535")); n > 107 {
		return nil, fmt.Errorf("pgcluster: the unix socket's path under %s would be %d bytes, more than the 107 a socket's path may hold: give Options.Dir a shorter directory", parent, n)
	}
	if err := os.Mkdir(c.sock, 0o700); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if c.cred != nil {
		if err := c.giveAway(); err != nil {
			return nil, err
		}
	}
	if out, err := c.run(ctx, "initdb", "-D", c.data, "-U", User, "-A", "trust", "-E", "UTF8", "--locale=C",
		"--no-sync", "--no-instructions"); err != nil {
		return nil, fmt.Errorf("pgcluster: initdb %s: %w: %s", c.data, err, tail(out, 2000))
	}
	conf := fmt.Sprintf("\n# pgcluster: a throwaway cluster, tuned for speed\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = %s\n"+
		"fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n", quoteConf(c.sock))
	f, err := os.OpenFile(filepath.Join(c.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pgcluster: writing postgresql.conf: %w", err)
	}
	// A free port may be taken between our probe and the server's bind:
	// try again on another.
	for attempt := 1; ; attempt++ {
		if c.port, err = freePort(); err != nil {
			return nil, fmt.Errorf("pgcluster: finding a free port: %w", err)
		}
		out, err := c.run(ctx, "pg_ctl", "start", "-w", "-t", "120", "-D", c.data, "-l", c.logPath(), "-o", "-p "+strconv.Itoa(c.port))
		if err == nil {
			break
		}
		log := c.logTail()
		if attempt < 3 && strings.Contains(log, "could not bind") {
			continue
		}
		return nil, fmt.Errorf("pgcluster: pg_ctl start (port %d): %w: %s; the server's log: %s", c.port, err, tail(out, 1000), log)
	}
	if c.admin, err = c.connect(ctx, "postgres"); err != nil {
		return nil, fmt.Errorf("pgcluster: connecting to the new server: %w; the server's log: %s", err, c.logTail())
	}
	ok = true
	return c, nil
}

// DSN returns the URL of database db on the cluster:
// postgres://postgres@127.0.0.1:PORT/db?sslmode=disable (no password).
func (c *Cluster) DSN(db string) string {
	if c.base != nil {
		u := *c.base
		u.Path = "/" + db
		return u.String()
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, c.port, db)
}

// Port returns the server's TCP port on 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// SocketDir returns the directory of the server's unix socket.
func (c *Cluster) SocketDir() string { return c.sock }

// Dir returns the cluster's temporary directory (Stop removes it).
func (c *Cluster) Dir() string { return c.dir }

// Exec runs sql, one or more statements separated by semicolons, in
// database db (the simple query protocol: the statements run in one
// implicit transaction unless they say otherwise).
func (c *Cluster) Exec(ctx context.Context, db, sql string) error {
	conn, err := c.connect(ctx, db)
	if err != nil {
		return fmt.Errorf("pgcluster: database %s: %w", db, err)
	}
	defer conn.Close(context.Background())
	if err := execAll(ctx, conn.PgConn(), sql); err != nil {
		return fmt.Errorf("pgcluster: database %s: %w", db, err)
	}
	return nil
}

// CreateTemplate creates database name, runs sql in it (its schema and
// rows), and marks it a template, which Clone copies. Connections to it
// are refused from then on, since a template with a session open cannot
// be copied.
func (c *Cluster) CreateTemplate(ctx context.Context, name, sql string) error {
	if err := checkName(name); err != nil {
		return err
	}
	id := quote(name)
	if err := c.adminExec(ctx, "CREATE DATABASE "+id); err != nil {
		return fmt.Errorf("pgcluster: creating the template %s: %w", name, err)
	}
	if err := c.Exec(ctx, name, sql); err != nil {
		c.Drop(context.Background(), name)
		return fmt.Errorf("pgcluster: filling the template %s: %w", name, err)
	}
	if err := c.adminExec(ctx, "ALTER DATABASE "+id+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("pgcluster: marking %s a template: %w", name, err)
	}
	return nil
}

// Clone creates database name as a copy of template (PostgreSQL 15's
// default strategy, WAL_LOG: on a small template it took 66 ms a clone
// and drop where FILE_COPY took 86 ms, BenchmarkClone).
func (c *Cluster) Clone(ctx context.Context, template, name string) error {
	if err := checkName(template); err != nil {
		return err
	}
	if err := checkName(name); err != nil {
		return err
	}
	if err := c.adminExec(ctx, "CREATE DATABASE "+quote(name)+" TEMPLATE "+quote(template)); err != nil {
		return fmt.Errorf("pgcluster: cloning %s into %s: %w", template, name, err)
	}
	return nil
}

// Drop drops database name, ending its sessions (DROP DATABASE … WITH
// (FORCE)); a template is unmarked first.
func (c *Cluster) Drop(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	drop := "DROP DATABASE " + quote(name) + " WITH (FORCE)"
	err := c.adminExec(ctx, drop)
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "42809" { // wrong_object_type: "cannot drop a template database"
		if err = c.adminExec(ctx, "ALTER DATABASE "+quote(name)+" WITH IS_TEMPLATE false"); err == nil {
			err = c.adminExec(ctx, drop)
		}
	}
	if err != nil {
		return fmt.Errorf("pgcluster: dropping %s: %w", name, err)
	}
	return nil
}

// Stop stops the server at once (pg_ctl stop -m immediate: no shutdown
// checkpoint, the data is thrown away) and removes the cluster's
// directory. It may be called more than once.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.admin.Close(ctx)
		cancel()
	}
	if c.base != nil {
		return nil // a server someone else runs
	}
	var errs []error
	if _, err := os.Stat(filepath.Join(c.data, "postmaster.pid")); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := c.run(ctx, "pg_ctl", "stop", "-m", "immediate", "-w", "-D", c.data)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("pgcluster: pg_ctl stop: %w: %s", err, tail(out, 1000)))
		}
	}
	if c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("pgcluster: removing the cluster's directory: %w", err))
		}
	}
	return errors.Join(errs...)
}

// adminExec runs one statement on the connection to postgres.
func (c *Cluster) adminExec(ctx context.Context, sql string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("the cluster is stopped")
	}
	if c.admin.IsClosed() { // the server ended the session: connect again
		conn, err := c.connect(ctx, c.adminDB())
		if err != nil {
			return err
		}
		c.admin = conn
	}
	return execAll(ctx, c.admin.PgConn(), sql)
}

// adminDB is the database of the admin session: postgres on a cluster
// Start started, the URL's own on an attached server.
func (c *Cluster) adminDB() string {
	if c.base != nil {
		return strings.TrimPrefix(c.base.Path, "/")
	}
	return "postgres"
}

// connect opens a session on database db.
func (c *Cluster) connect(ctx context.Context, db string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, c.DSN(db))
}

// execAll runs sql by the simple query protocol and reads every result.
func execAll(ctx context.Context, conn *pgconn.PgConn, sql string) error {
	_, err := conn.Exec(ctx, sql).ReadAll()
	return err
}

// run runs one of the cluster's programs (as nobody when the process is
// root) and returns its output. The output goes to a file, not a pipe:
// pg_ctl start leaves a server behind that must not hold our pipe open.
func (c *Cluster) run(ctx context.Context, prog string, args ...string) ([]byte, error) {
	out, err := os.CreateTemp(c.dir, prog+"-*.out")
	if err != nil {
		return nil, err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, prog), args...)
	cmd.Dir = c.dir
	cmd.Env = append(cleanEnv(), "LC_ALL=C")
	cmd.Stdout, cmd.Stderr = out, out
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	err = cmd.Run()
	b, _ := os.ReadFile(out.Name())
	return b, err
}

// cleanEnv is the environment without PostgreSQL's client variables
// (PGHOST, PGPORT, …), which would point the programs elsewhere.
func cleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=")
	})
}

func (c *Cluster) logPath() string { return filepath.Join(c.dir, "server.log") }

// logTail returns the end of the server's log.
func (c *Cluster) logTail() string {
	b, err := os.ReadFile(c.logPath())
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return tail(b, 2000)
}

// giveAway makes the cluster's directory nobody's, after checking that
// nobody can reach it.
func (c *Cluster) giveAway() error {
	for d := filepath.Dir(c.dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("pgcluster: PostgreSQL runs as nobody (the process is root) and cannot reach the cluster under %s: %s is mode %v; give Options.Dir a directory nobody can reach", filepath.Dir(c.dir), d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	for _, p := range []string{c.dir, c.sock} {
		if err := os.Chown(p, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return fmt.Errorf("pgcluster: giving %s to nobody: %w", p, err)
		}
	}
	return nil
}

// nobody returns the credential of the user nobody.
func nobody() (*syscall.Credential, error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: PostgreSQL refuses to run as root and the user nobody to run it as was not found: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgcluster: the user nobody has uid %q and gid %q, not numbers", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// findBin returns the directory of initdb and pg_ctl.
func findBin(bin string) (string, error) {
	var looked []string
	try := func(d, from string) bool {
		looked = append(looked, d+" ("+from+")")
		for _, p := range []string{"initdb", "pg_ctl", "postgres"} {
			if fi, err := os.Stat(filepath.Join(d, p)); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
				return false
			}
		}
		return true
	}
	if bin != "" {
		if try(bin, "Options.Bin") {
			return bin, nil
		}
		return "", fmt.Errorf("pgcluster: Options.Bin %s does not hold initdb, pg_ctl and postgres", bin)
	}
	if d := os.Getenv(binVar); d != "" {
		if try(d, "$"+binVar) {
			return d, nil
		}
		return "", fmt.Errorf("pgcluster: $%s=%s does not hold initdb, pg_ctl and postgres", binVar, d)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if p, err = filepath.Abs(p); err == nil && try(filepath.Dir(p), "initdb on PATH") {
			return filepath.Dir(p), nil
		}
	} else {
		looked = append(looked, "PATH (no initdb)")
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return slices.Compare(versionOf(b), versionOf(a)) })
	for _, d := range dirs {
		if try(d, "Debian's layout") {
			return d, nil
		}
	}
	if len(dirs) == 0 {
		looked = append(looked, "/usr/lib/postgresql/*/bin (none)")
	}
	return "", fmt.Errorf("pgcluster: no PostgreSQL programs (initdb, pg_ctl, postgres) found; looked in %s. Debian's postgresql package provides them (apt-get install postgresql), or set $%s to their directory",
		strings.Join(looked, ", "), binVar)
}

// versionOf reads the version of /usr/lib/postgresql/VERSION/bin.
func versionOf(d string) []int {
	var v []int
	for _, f := range strings.Split(filepath.Base(filepath.Dir(d)), ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return v
		}
		v = append(v, n)
	}
	return v
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// names are the database names the cluster accepts: plain identifiers,
// at most 63 bytes (PostgreSQL's NAMEDATALEN-1).
var names = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

func checkName(name string) error {
	if !names.MatchString(name) {
		return fmt.Errorf("pgcluster: database name %q: not a plain identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63 bytes)", name)
	}
	return nil
}

// quote quotes an identifier.
func quote(name string) string { return pgx.Identifier{name}.Sanitize() }

// quoteConf quotes a string value of postgresql.conf.
func quoteConf(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// tail returns at most the last n bytes of b, trimmed, as text.
func tail(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = append([]byte("…"), b[len(b)-n:]...)
	}
	return string(b)
}

// Databases lists the server's databases (templates included), sorted.
func (c *Cluster) Databases(ctx context.Context) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("the cluster is stopped")
	}
	rows, err := c.admin.Query(ctx, "SELECT datname FROM pg_database ORDER BY datname")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, rows.Err()
}
