package scan

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpstress/stress/internal/csvcell"
	"github.com/mcpstress/stress/internal/outdir"
)

// The files of a scan's output directory.
const (
	CandidatesFile = "candidates.jsonl"
	ProjectionFile = "projection.jsonl"
	LedgerFile     = "ledger.csv"
	ManifestFile   = "scan.json"
	// WrapperCallsFile lists the wrapper calls (WrapperCall) apart from
	// the matches, as projections: no source text.
	WrapperCallsFile = "wrapper_calls.jsonl"
)

// Projection is a candidate without source text: the privacy-safe row
// that may be published. LineSHA256 is the sha256 of the matched line's
// bytes without its line terminator; ContextSHA256 that of lines Line−3
// to Line+3 of the file (its text with CRLF as LF, split at LF) joined
// with LF.
type Projection struct {
	ID            string   `json:"id"`
	Repository    string   `json:"repository"`
	Commit        string   `json:"commit,omitempty"`
	File          string   `json:"file"`
	Line          int      `json:"line"`
	Column        int      `json:"column"`
	Language      Language `json:"language"`
	Class         Class    `json:"class"`
	Construct     string   `json:"construct"`
	Key           string   `json:"key"`
	LineSHA256    string   `json:"line_sha256"`
	ContextSHA256 string   `json:"context_sha256"`
}

// Project returns c's projection.
func (c *Candidate) Project() Projection {
	return Projection{ID: c.ID, Repository: c.Repository, Commit: c.Commit, File: c.File, Line: c.Line, Column: c.Column,
		Language: c.Language, Class: c.Class, Construct: c.Construct, Key: c.Key, LineSHA256: c.LineSHA256, ContextSHA256: c.ContextSHA256}
}

// Manifest is scan.json: what was scanned, how, what was found and the
// sha256 of the other files.
type Manifest struct {
	Tool         string       `json:"tool"`
	IncludeBuild bool         `json:"include_build"`
	MaxFileSize  int64        `json:"max_file_size"`
	Repos        []RepoResult `json:"repositories"`
	Files        []Count      `json:"files"`
	Bytes        int64        `json:"bytes"`
	ExcludedDirs int          `json:"excluded_directories"`
	Matches      []Count      `json:"matches"`
	Production   int          `json:"production_matches"`
	// WrapperCalls counts the wrapper calls by class and language;
	// ProductionWrapperCalls those in production files. They are not
	// matches.
	WrapperCalls           []Count           `json:"wrapper_calls"`
	ProductionWrapperCalls int               `json:"production_wrapper_calls"`
	Skipped                []Skip            `json:"skipped"`
	Outputs                map[string]string `json:"outputs"`
}

// Matches counts the candidates (the matches) by class and language.
func (r *Result) Matches() []Count {
	return countOf(r.Candidates)
}

// WrapperCounts counts the wrapper calls by class and language.
func (r *Result) WrapperCounts() []Count {
	return countOf(r.WrapperCalls)
}

// countOf counts cands by class and language, in table order.
func countOf(cands []Candidate) []Count {
	n := map[Count]int{}
	for _, c := range cands {
		n[Count{Class: c.Class, Language: c.Language}]++
	}
	return tabulate(n)
}

// tabulate lists the counts n holds by class and language (keys with N
// 0), in table order, leaving out those of 0.
func tabulate(n map[Count]int) []Count {
	var out []Count
	for _, c := range classes {
		for _, l := range languages {
			if k := n[Count{Class: c, Language: l}]; k > 0 {
				out = append(out, Count{Class: c, Language: l, N: k})
			}
		}
	}
	return out
}

// Production returns the production candidates, the ledger's rows.
func (r *Result) Production() []Candidate {
	return production(r.Candidates)
}

// production returns the candidates of production files.
func production(cands []Candidate) []Candidate {
	var out []Candidate
	for _, c := range cands {
		if c.Class == Production {
			out = append(out, c)
		}
	}
	return out
}

// Write writes the scan's files into dir, which must not exist or be
// empty: candidates.jsonl (every match, with its source line: private),
// projection.jsonl (every match, hashes instead of text: publishable),
// ledger.csv (the production matches, to adjudicate by hand),
// wrapper_calls.jsonl (the wrapper calls, as projections: listed apart)
// and scan.json. The same scan writes the same bytes, into a temporary
// directory renamed into place (internal/outdir).
func (r *Result) Write(final string, opt Options) error {
	out, err := outdir.Create(final, nil)
	if err != nil {
		return err
	}
	defer out.Abort()
	dir := out.Path()
	var cand, proj, wrappers, ledger bytes.Buffer
	ce, pe, we := json.NewEncoder(&cand), json.NewEncoder(&proj), json.NewEncoder(&wrappers)
	for _, e := range []*json.Encoder{ce, pe, we} {
		e.SetEscapeHTML(false)
	}
	for i := range r.Candidates {
		c := &r.Candidates[i]
		ce.Encode(c)
		p := c.Project()
		pe.Encode(&p)
	}
	for i := range r.WrapperCalls {
		p := r.WrapperCalls[i].Project()
		we.Encode(&p)
	}
	if err := writeLedger(&ledger, r.Production()); err != nil {
		return err
	}
	outputs := map[string]string{}
	for _, f := range []struct {
		name string
		data []byte
	}{{CandidatesFile, cand.Bytes()}, {ProjectionFile, proj.Bytes()}, {LedgerFile, ledger.Bytes()}, {WrapperCallsFile, wrappers.Bytes()}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(f.data)
		outputs[f.name] = hex.EncodeToString(sum[:])
	}
	if opt.MaxFileSize <= 0 {
		opt.MaxFileSize = DefaultMaxFileSize
	}
	m := Manifest{Tool: "stress scan", IncludeBuild: opt.IncludeBuild, MaxFileSize: opt.MaxFileSize, Repos: r.Repos,
		Files: r.Files, Bytes: r.Bytes, ExcludedDirs: r.ExcludedDirs, Matches: r.Matches(), Production: len(r.Production()),
		WrapperCalls: r.WrapperCounts(), ProductionWrapperCalls: len(production(r.WrapperCalls)),
		Skipped: r.Skipped, Outputs: outputs}
	if m.Skipped == nil {
		m.Skipped = []Skip{}
	}
	if m.WrapperCalls == nil {
		m.WrapperCalls = []Count{}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return out.Commit()
}

// WriteSummary prints what the scan read and found: files and bytes, the
// skips, the matches by class and language, and the wrapper calls, apart.
func (r *Result) WriteSummary(w io.Writer) error {
	var b strings.Builder
	files := 0
	for _, c := range r.Files {
		files += c.N
	}
	fmt.Fprintf(&b, "scanned %d repositories: %d source files, %d bytes; %d directories not entered (dependencies, build output)\n",
		len(r.Repos), files, r.Bytes, r.ExcludedDirs)
	if len(r.Skipped) > 0 {
		reasons := map[string]int{}
		for _, s := range r.Skipped {
			reason, _, _ := strings.Cut(s.Reason, " (")
			reason, _, _ = strings.Cut(reason, ":")
			reasons[reason]++
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(reasons)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, reasons[k]))
		}
		fmt.Fprintf(&b, "skipped: %s\n", strings.Join(parts, ", "))
	}
	b.WriteString("\n")
	writeCounts(&b, "files", r.Files)
	b.WriteString("\n")
	writeCounts(&b, "matches", r.Matches())
	if len(r.WrapperCalls) > 0 {
		b.WriteString("\n")
		writeCounts(&b, "wrappers", r.WrapperCounts())
	}
	fmt.Fprintf(&b, "\nproduction matches to adjudicate: %d\n", len(r.Production()))
	if len(r.WrapperCalls) > 0 {
		fmt.Fprintf(&b, "wrapper calls, listed apart (a repository's own helper named like an SDK's; not matches): %d, %d in production\n",
			len(r.WrapperCalls), len(production(r.WrapperCalls)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCounts prints counts as a table: a row per class, a column per
// language that has any, and totals.
func writeCounts(b *strings.Builder, what string, counts []Count) {
	n := map[Count]int{} // by class and language; by language alone for the totals
	for _, c := range counts {
		n[Count{Class: c.Class, Language: c.Language}] += c.N
		n[Count{Language: c.Language}] += c.N
	}
	var langs []Language
	for _, l := range languages {
		if slices.ContainsFunc(counts, func(c Count) bool { return c.Language == l }) {
			langs = append(langs, l)
		}
	}
	fmt.Fprintf(b, "%-11s", what)
	for _, l := range langs {
		fmt.Fprintf(b, " %10s", l)
	}
	fmt.Fprintf(b, " %10s\n", "total")
	row := func(label string, class Class) {
		fmt.Fprintf(b, "%-11s", label)
		sum := 0
		for _, l := range langs {
			k := n[Count{Class: class, Language: l}]
			fmt.Fprintf(b, " %10d", k)
			sum += k
		}
		fmt.Fprintf(b, " %10d\n", sum)
	}
	for _, c := range classes {
		row(string(c), c)
	}
	row("total", "") // the totals are counted by language alone
}

// WriteList prints one line per candidate: repository, file:line:column,
// class, construct and the match; then, apart under a heading, one line
// per wrapper call.
func (r *Result) WriteList(w io.Writer) error {
	var b strings.Builder
	line := func(c *Candidate) {
		fmt.Fprintf(&b, "%s %s:%d:%d %s %s %s", c.Repository, c.File, c.Line, c.Column, c.Class, c.Construct, c.Match)
		if c.Function != "" {
			fmt.Fprintf(&b, " in %s", c.Function)
		}
		b.WriteString("\n")
	}
	for i := range r.Candidates {
		line(&r.Candidates[i])
	}
	if len(r.WrapperCalls) > 0 {
		if len(r.Candidates) > 0 {
			b.WriteString("\n")
		}
		b.WriteString("wrapper calls (not matches: a repository's own helper named like an SDK's, whose definition is the match):\n")
		for i := range r.WrapperCalls {
			line(&r.WrapperCalls[i])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ledgerColumns are ledger.csv's columns. decision and semantic_path are
// filled by hand; note is free text.
var ledgerColumns = []string{"id", "repository", "commit", "file", "line", "column", "language", "construct", "key", "decision", "semantic_path", "note"}

// writeLedger writes the ledger template: ledgerColumns, a row per
// candidate with decision, semantic_path and note empty. Every cell is
// escaped (csvcell.Escape): a file or repository name a spreadsheet would
// take for a formula is written with an apostrophe in front, and
// readLedger takes it off.
func writeLedger(w io.Writer, cands []Candidate) error {
	cw := csv.NewWriter(w)
	cw.Write(ledgerColumns)
	for _, c := range cands {
		cw.Write(csvcell.EscapeRow([]string{c.ID, c.Repository, c.Commit, c.File, strconv.Itoa(c.Line), strconv.Itoa(c.Column),
			string(c.Language), c.Construct, c.Key, "", "", ""}))
	}
	cw.Flush()
	return cw.Error()
}
