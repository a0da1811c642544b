package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/export/inspect"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/study"
)

// readDoc reads a Markdown file of the repository, named from its root.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fencedAfter returns the fenced block that follows marker in doc, its
// lines' common indentation removed.
func fencedAfter(t *testing.T, doc, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, marker)
	if !ok {
		t.Fatalf("no %q", marker)
	}
	lines := strings.Split(rest, "\n")
	var out []string
	indent := ""
	in := false
	for _, l := range lines[1:] {
		trimmed := strings.TrimLeft(l, " ")
		if strings.HasPrefix(trimmed, "```") {
			if in {
				return strings.Join(out, "\n") + "\n"
			}
			in, indent = true, l[:len(l)-len(trimmed)]
			continue
		}
		if in {
			out = append(out, strings.TrimPrefix(l, indent))
		}
	}
	t.Fatalf("no fenced block after %q", marker)
	return ""
}

// TestREADMERunOutput: the counts table the README's first study shows
// is what stress run prints.
func TestREADMERunOutput(t *testing.T) {
	want := fencedAfter(t, readDoc(t, "README.md"), "<!-- output of: stress run -->")
	got, log, err := runCmd(t, "run", "-quiet", "-out", filepath.Join(t.TempDir(), "first"))
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if got != want {
		t.Errorf("README.md's first-study table differs from what stress run prints:\n%s\nwant (as printed)\n%s", want, got)
	}
}

// TestREADMEManifests: the README's table of shipped manifests names each
// manifests/*.yaml once, with its number of decisions (models × prompts ×
// conditions × scenarios × replicates) and its environment.
func TestREADMEManifests(t *testing.T) {
	doc := readDoc(t, "README.md")
	_, table, ok := strings.Cut(doc, "<!-- manifests -->\n")
	if !ok {
		t.Fatal("README.md has no <!-- manifests --> table")
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\| ([0-9,]+) \\| ([a-z]+) \\|")
	var listed []string
	for _, l := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		m := row.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("manifest row %q: want | `NAME` | DECISIONS | ENVIRONMENT | …", l)
			continue
		}
		listed = append(listed, m[1])
		r, err := manifests.LoadBuiltin(m[1])
		if err != nil {
			t.Errorf("%s: %v", m[1], err)
			continue
		}
		mf := r.Manifest
		want := len(mf.Models) * len(mf.Prompts) * len(mf.Conditions) * len(r.Corpus.Scenarios) * mf.Replicates
		if got, _ := strconv.Atoi(strings.ReplaceAll(m[2], ",", "")); got != want {
			t.Errorf("%s: the README says %s decisions, the manifest makes %d", m[1], m[2], want)
		}
		if m[3] != r.Env() {
			t.Errorf("%s: the README says environment %s, the manifest names %s", m[1], m[3], r.Env())
		}
	}
	shipped := manifests.BuiltinNames()
	slices.Sort(listed)
	if !slices.Equal(listed, shipped) {
		t.Errorf("README.md lists %v, manifests/ holds %v", listed, shipped)
	}
}

// TestDocLinks: every relative link of README.md, docs/*.md and the
// packages' READMEs names a file that exists and, after #, a heading it
// has (GitHub's anchors: lower case, punctuation but - and _ dropped,
// spaces as -).
func TestDocLinks(t *testing.T) {
	files := []string{"README.md", "results/README.md", "models/README.md"}
	docs, _ := filepath.Glob("../../docs/*.md")
	if len(docs) < 10 {
		t.Fatalf("docs/ holds %d Markdown files", len(docs))
	}
	for _, d := range docs {
		files = append(files, "docs/"+filepath.Base(d))
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(name string) map[string]bool {
		if a, ok := anchors[name]; ok {
			return a
		}
		a := map[string]bool{}
		in := false
		for _, l := range strings.Split(readDoc(t, name), "\n") {
			if strings.HasPrefix(strings.TrimLeft(l, " "), "```") {
				in = !in
			}
			if h, ok := strings.CutPrefix(l, "#"); ok && !in {
				a[slug(strings.TrimLeft(h, "# "))] = true
			}
		}
		anchors[name] = a
		return a
	}
	checked := 0
	for _, f := range files {
		doc := readDoc(t, f)
		for _, m := range link.FindAllStringSubmatch(doc, -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue // a URL (https:, mailto:, a hostile javascript: in an example)
			}
			file, anchor, _ := strings.Cut(target, "#")
			name := f
			if file != "" {
				name = path.Clean(path.Join(path.Dir(f), file))
				if _, err := os.Stat(filepath.Join("../..", name)); err != nil {
					t.Errorf("%s: link %s: no file %s", f, target, name)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(name, ".md") && !anchorsOf(name)[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", f, target, name, anchor)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("only %d links checked", checked)
	}
}

// slug is GitHub's anchor for a heading.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocLabRows: every row docs/lab.md shows of the lab study's table
// (and its header) is a line of what stress run manifests/lab.yaml
// prints.
func TestDocLabRows(t *testing.T) {
	checkDocRows(t, "docs/lab.md", "lab.yaml")
}

// TestDocShapeRows checks docs/error-shapes.md's rows against stress run
// manifests/error-shapes.yaml, as TestDocLabRows does for the lab.
func TestDocShapeRows(t *testing.T) {
	checkDocRows(t, "docs/error-shapes.md", "error-shapes.yaml")
}

// TestDocShapeActRows checks the rows docs/error-shapes.md shows of the
// action task's shape study against stress run
// manifests/error-shapes-act.yaml.
func TestDocShapeActRows(t *testing.T) {
	checkDocRows(t, "docs/error-shapes.md", "error-shapes-act.yaml")
}

// TestDocDatabaseRows checks the rows docs/database.md shows of the
// database environment's two studies against what stress run prints.
func TestDocDatabaseRows(t *testing.T) {
	for _, tc := range []struct{ doc, manifest string }{
		{"docs/database.md", "act-database.yaml"},
		{"docs/database.md", "database.yaml"},
		{"docs/database.md", "error-shapes-database.yaml"},
		{"README.md", "act-database.yaml"},
	} {
		t.Run(tc.doc+" rows of "+tc.manifest, func(t *testing.T) {
			checkDocRows(t, tc.doc, tc.manifest)
		})
	}
}

// checkDocRows checks that every row of the block after "<!-- rows of:
// stress run manifests/MANIFEST -->" in doc is a line stress run prints.
func checkDocRows(t *testing.T, doc, manifest string) {
	t.Helper()
	block := fencedAfter(t, readDoc(t, doc), "<!-- rows of: stress run manifests/"+manifest+" -->")
	got, log, err := runCmd(t, "run", "-quiet", "-out", filepath.Join(t.TempDir(), "run"), "../../manifests/"+manifest)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	lines := strings.Split(got, "\n")
	rows := 0
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		if strings.HasPrefix(l, "$") || l == "…" {
			continue
		}
		rows++
		if !slices.Contains(lines, l) {
			t.Errorf("%s shows a row stress run does not print:\n%s\nstress run printed (see its Errors column):\n%s", doc, l, got)
		}
	}
	if rows < 6 {
		t.Errorf("only %d rows checked", rows)
	}
}

// TestREADMEFirstStudy runs the README's first study as written, line by
// line, with the built binary as ./stress in a directory that has the
// clone's manifests/ (the line that opens a browser aside): every
// command succeeds and writes what the README says.
func TestREADMEFirstStudy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	_, rest, ok := strings.Cut(readDoc(t, "README.md"), "## Your first study")
	if !ok {
		t.Fatal("README.md has no first study")
	}
	block := fencedAfter(t, rest, "\n")
	dir := t.TempDir()
	bin := stressBinary(t)
	if err := os.Rename(bin, filepath.Join(dir, "stress")); err != nil {
		t.Fatal(err)
	}
	repo, _ := filepath.Abs("../..")
	os.Symlink(filepath.Join(repo, "manifests"), filepath.Join(dir, "manifests"))
	ran := 0
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd, _, _ := strings.Cut(l, "#")
		cmd = strings.TrimSpace(cmd)
		if cmd == "" || strings.HasPrefix(cmd, "xdg-open") {
			continue
		}
		c := exec.Command("sh", "-c", cmd)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		ran++
	}
	if ran != 4 {
		t.Errorf("%d commands ran, want 4", ran)
	}
	for _, f := range []string{"first/calls.jsonl", "first/report/report.html", "first/report/report.md", "prompts/decisions.parquet"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the first study did not write %s", f)
		}
	}
}

// TestREADMEShapeTable checks the README's table of causes and ToolFailure
// classes against study.ClassifyFailure, cause by cause, every cause once.
func TestREADMEShapeTable(t *testing.T) {
	seen := map[study.Cause]bool{}
	cell := regexp.MustCompile("`([a-z_]+)`")
	for _, r := range readmeTable(t, "| cause | class | code | retryable |") {
		l, cols := r.line, r.cols
		for _, m := range cell.FindAllStringSubmatch(cols[0], -1) {
			c := study.Cause(m[1])
			seen[c] = true
			tf, ok := study.ClassifyFailure(c, "REC", "id", time.Time{}, 0)
			class := "none"
			if ok {
				class = string(tf.Class)
			}
			if !strings.Contains(cols[1], class) {
				t.Errorf("%s: README says class %q, code %s", c, cols[1], class)
			}
			if !ok {
				continue
			}
			wantCode := "`" + tf.Code + "`"
			if tf.Code == "REC" {
				wantCode = "the record's"
			}
			retry := "—"
			if tf.Retryable != nil {
				retry = fmt.Sprint(*tf.Retryable)
			}
			if strings.TrimSpace(cols[2]) != wantCode || strings.TrimSpace(cols[3]) != retry {
				t.Errorf("%s: README row %q, want code %s, retryable %s", c, l, wantCode, retry)
			}
		}
	}
	for _, c := range study.Causes {
		if !seen[c] {
			t.Errorf("cause %s is not in the README's table", c)
		}
	}
}

// TestREADMEInspectScores: the README lists the scores of an exported
// Inspect sample as stress export writes them, in order.
func TestREADMEInspectScores(t *testing.T) {
	_, after, ok := strings.Cut(readDoc(t, "README.md"), "<!-- inspect scores -->\n")
	if !ok {
		t.Fatal("README.md has no <!-- inspect scores --> list")
	}
	line, _, _ := strings.Cut(after, "\n")
	var want []string
	for _, n := range inspect.ScoreNames() {
		want = append(want, "`"+n+"`")
	}
	if w := strings.Join(want, ", ") + "."; line != w {
		t.Errorf("README.md lists the scores\n%s\nstress export writes\n%s", line, w)
	}
}

// TestREADMEShapeResults checks the README's table of the error-shape
// arms against a run of manifests/error-shapes.yaml: for each condition
// named in a row, the failures it carries (conditions.Expresses over the
// manifest's corpus), and the fail-closed client's decided (Cover),
// recovered and harmed decisions.
func TestREADMEShapeResults(t *testing.T) {
	table := readmeTable(t, "| condition | carries (of 40) | fail-closed decides | recovered | harm |")
	m, err := manifests.LoadBuiltin("error-shapes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, log, err := runCmd(t, "run", "-quiet", "-out", filepath.Join(t.TempDir(), "run"), "../../manifests/error-shapes.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	lines := strings.Split(got, "\n")
	head := strings.Fields(lines[0])
	col := func(name string) int { return slices.Index(head, name) }
	cell := regexp.MustCompile("`([a-z0-9_+]+)`")
	first := regexp.MustCompile(`^\s*(\d+)`)
	seen := map[study.Condition]bool{}
	for _, r := range table {
		l, cols := r.line, r.cols
		for _, mm := range cell.FindAllStringSubmatch(cols[0], -1) {
			c := study.Condition(mm[1])
			seen[c] = true
			carries := 0
			for i := range m.Corpus.Scenarios {
				if conditions.Expresses(&m.Corpus.Scenarios[i], c) {
					carries++
				}
			}
			var row []string
			for _, ln := range lines {
				if f := strings.Fields(ln); len(f) > 3 && f[0] == "fail_closed" && f[2] == string(c) {
					row = f
				}
			}
			if row == nil {
				t.Errorf("%s: no fail_closed row in the run", c)
				continue
			}
			want := []string{strconv.Itoa(carries), row[col("Cover")], row[col("Recovered")], row[col("Harm")]}
			for i, w := range want {
				if g := first.FindStringSubmatch(cols[i+1]); g == nil || g[1] != w {
					t.Errorf("%s: README row %q, column %d: want %s", c, l, i+1, w)
				}
			}
		}
	}
	for _, c := range m.Conditions {
		if !seen[c] {
			t.Errorf("condition %s of error-shapes.yaml is not in the README's table", c)
		}
	}
}

// TestShapeDocCommands runs every stress render command that the README
// and docs/error-shapes.md show (a command may break across lines; usage
// lines with [options] aside), with
// the manifests of the clone: each must succeed and print the messages.
func TestShapeDocCommands(t *testing.T) {
	span := regexp.MustCompile("`(stress render [^`]+)`")
	n := 0
	for _, doc := range []string{"README.md", "docs/error-shapes.md"} {
		for _, m := range span.FindAllStringSubmatch(readDoc(t, doc), -1) {
			if strings.ContainsAny(m[1], "[]") {
				continue // a usage line, not a command
			}
			t.Run(doc+": "+m[1], func(t *testing.T) {
				args := strings.Fields(m[1])[1:]
				for i, a := range args {
					if strings.HasPrefix(a, "manifests/") {
						args[i] = "../../" + a
					}
				}
				out, log, err := runCmd(t, args...)
				if err != nil || !strings.Contains(out, "--- user ---") {
					t.Errorf("%v\n%s", err, log)
				}
			})
			n++
		}
	}
	if n < 2 {
		t.Errorf("only %d commands run", n)
	}
}

// TestREADMEShapeContrasts checks the README's table of the fail-closed
// client's like-for-like shape contrasts against stress analyze -json of
// a run of manifests/error-shapes.yaml: the failures both arms carry
// (the pairs over 5 replicates), each arm's Strict count and the
// difference.
func TestREADMEShapeContrasts(t *testing.T) {
	table := readmeTable(t, "| contrast (fail-closed, Strict) | shared failures | A | B | A − B (points) |")
	dir := filepath.Join(t.TempDir(), "run")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", dir, "../../manifests/error-shapes.yaml"); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	out, log, err := runCmd(t, "analyze", "-json", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	var a struct {
		Pairs []struct {
			Model, A, B, Column string
			LikeForLike         bool    `json:"like_for_like"`
			N                   int     `json:"n"`
			CountA              int     `json:"count_a"`
			CountB              int     `json:"count_b"`
			Diff                float64 `json:"diff"`
		} `json:"pairs"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
	arm := regexp.MustCompile("`([a-z0-9_+]+)` − `([a-z0-9_+]+)`")
	rows := 0
	for _, r := range table {
		l, cols := r.line, r.cols
		m := arm.FindStringSubmatch(cols[0])
		if m == nil {
			t.Fatalf("row %q names no contrast", l)
		}
		found := false
		for _, p := range a.Pairs {
			if p.Model != "fail_closed" || p.A != m[1] || p.B != m[2] || p.Column != "strict" {
				continue
			}
			found = true
			want := []string{strconv.Itoa(p.N / 5), strconv.Itoa(p.CountA), strconv.Itoa(p.CountB), strings.Replace(fmt.Sprintf("%+.1f", 100*p.Diff), "-", "−", 1)}
			if want[3] == "+0.0" {
				want[3] = "0.0"
			}
			for i, w := range want {
				if strings.TrimSpace(cols[i+1]) != w {
					t.Errorf("%s − %s: README column %d is %q, analyze gives %s", m[1], m[2], i+1, cols[i+1], w)
				}
			}
			if !p.LikeForLike {
				t.Errorf("%s − %s is not like-for-like", m[1], m[2])
			}
		}
		if !found {
			t.Errorf("%s − %s: no such fail_closed pair on strict", m[1], m[2])
		}
		rows++
	}
	if rows != len(analysis.ShapeContrasts)-1 {
		t.Errorf("%d rows, want every shape contrast but sep2145 − structured (%d)", rows, len(analysis.ShapeContrasts)-1)
	}
}

// tableRow is one row of a Markdown table: the line, and its cells
// between the outer pipes (untrimmed).
type tableRow struct {
	line string
	cols []string
}

// readmeTable returns the rows of the README's table whose header line
// is header, up to the first line that is not a row; the test fails when
// the README has no such table.
func readmeTable(t *testing.T, header string) []tableRow {
	t.Helper()
	_, rest, ok := strings.Cut(readDoc(t, "README.md"), header+"\n")
	if !ok {
		t.Fatalf("README.md has no table with the header %s", header)
	}
	var rows []tableRow
	for _, l := range strings.Split(rest, "\n")[1:] { // after the |---| line
		if !strings.HasPrefix(l, "|") {
			break
		}
		rows = append(rows, tableRow{l, strings.Split(strings.Trim(l, "|"), "|")})
	}
	return rows
}
