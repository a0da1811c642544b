package scan

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mcpstress/stress/internal/csvcell"
	"github.com/mcpstress/stress/internal/input"
)

// The decisions of an adjudicated ledger row.
const (
	// construction: the match builds a tool-error result.
	construction = "construction"
	// testString: the match is test data embedded in production code.
	testString = "test_string"
	// notAnErrorResult: the match sets a flag of something else (another
	// API's is_error, a local state).
	notAnErrorResult = "not_an_error_result"
)

// decisions lists the decisions; an empty decision is undecided.
var decisions = []string{construction, testString, notAnErrorResult}

// Funnel is the paper's audit funnel from an adjudicated ledger: the
// production matches, what they were judged, and the semantic paths and
// repositories of the constructions.
type Funnel struct {
	// Matches counts the ledger's rows: production matches.
	Matches int `json:"production_matches"`
	// Undecided, TestStrings, NotErrorResults and Constructions count the
	// rows by decision.
	Undecided       int `json:"undecided"`
	TestStrings     int `json:"test_strings"`
	NotErrorResults int `json:"not_error_results"`
	Constructions   int `json:"constructions"`
	// SemanticPaths counts the distinct (repository, semantic_path) pairs
	// of the constructions: matches that build the same result on one
	// code path are one path.
	SemanticPaths int `json:"semantic_paths"`
	// Repositories counts the repositories with a construction.
	Repositories int `json:"repositories"`
}

// ledgerRow is one row of a ledger.csv as read: its cells by column
// (ledgerColumns), unescaped (csvcell), decision and semantic_path without
// surrounding blanks; a column the file lacks reads as "".
type ledgerRow struct {
	// Row is the row's line in the file (the header is line 1).
	Row                                                                  int
	ID, Repository, Commit, File, Line, Column, Language, Construct, Key string
	Decision, SemanticPath, Note                                         string
}

// readLedger reads a ledger (ledgerColumns; only id, repository, decision
// and semantic_path are required, in any order) and checks every row: an
// unknown decision, a construction without a semantic path or a
// repository, an id given twice or missing are errors naming the file and
// line. It returns the good rows and every error; nil rows when the header
// is wrong. Cells are unescaped (csvcell.Unescape): a cell written as
// '=x reads as =x.
func readLedger(file string, r io.Reader) ([]ledgerRow, []error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, []error{fmt.Errorf("%s: no header row: %v", file, err)}
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	var missing []string
	for _, c := range []string{"id", "repository", "decision", "semantic_path"} {
		if _, ok := col[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, []error{fmt.Errorf("%s: the header lacks the column(s) %s (want %s)", file, strings.Join(missing, ", "), strings.Join(ledgerColumns, ","))}
	}
	rows := []ledgerRow{} // not nil: the header was read
	var errs []error
	seen := map[string]int{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				errs = append(errs, fmt.Errorf("%s:%d: %v", file, pe.Line, pe.Err))
				continue
			}
			errs = append(errs, fmt.Errorf("%s: %v", file, err))
			break
		}
		csvcell.UnescapeRow(rec)
		get := func(c string) string {
			if i, ok := col[c]; ok && i < len(rec) {
				return rec[i]
			}
			return ""
		}
		row := ledgerRow{Row: line, ID: strings.TrimSpace(get("id")), Repository: strings.TrimSpace(get("repository")),
			Commit: get("commit"), File: get("file"), Line: get("line"), Column: get("column"), Language: get("language"),
			Construct: get("construct"), Key: get("key"), Decision: strings.TrimSpace(get("decision")),
			SemanticPath: strings.TrimSpace(get("semantic_path")), Note: get("note")}
		at := fmt.Sprintf("%s:%d: row %s", file, line, input.Quote(row.ID))
		switch {
		case row.ID == "":
			errs = append(errs, fmt.Errorf("%s: no id", at))
			continue
		case seen[row.ID] > 0:
			errs = append(errs, fmt.Errorf("%s: id already on line %d", at, seen[row.ID]))
			continue
		case row.Decision != "" && !slices.Contains(decisions, row.Decision):
			errs = append(errs, fmt.Errorf("%s: decision %s: want %s, or empty for undecided", at, input.Quote(row.Decision), strings.Join(decisions, ", ")))
			continue
		case row.Decision == construction && row.SemanticPath == "":
			errs = append(errs, fmt.Errorf("%s: a construction needs its semantic_path", at))
			continue
		case row.Decision == construction && row.Repository == "":
			errs = append(errs, fmt.Errorf("%s: a construction needs its repository", at))
			continue
		}
		seen[row.ID] = line
		rows = append(rows, row)
	}
	return rows, errs
}

// Summarize reads an adjudicated ledger (ledger.csv) and returns its
// funnel. Every bad row is an error naming the file and line; the funnel
// counts the good rows. The funnel is nil when the header is wrong.
func Summarize(file string, r io.Reader) (*Funnel, []error) {
	rows, errs := readLedger(file, r)
	if rows == nil {
		return nil, errs
	}
	f := &Funnel{}
	paths := map[[2]string]bool{}
	repos := map[string]bool{}
	for _, row := range rows {
		f.Matches++
		switch row.Decision {
		case "":
			f.Undecided++
		case testString:
			f.TestStrings++
		case notAnErrorResult:
			f.NotErrorResults++
		case construction:
			f.Constructions++
			paths[[2]string{row.Repository, row.SemanticPath}] = true
			repos[row.Repository] = true
		}
	}
	f.SemanticPaths, f.Repositories = len(paths), len(repos)
	return f, errs
}

// WriteText prints the funnel, one step a line.
func (f *Funnel) WriteText(w io.Writer) error {
	var b strings.Builder
	row := func(label string, n int) { fmt.Fprintf(&b, "%-30s %6d\n", label, n) }
	row("production matches", f.Matches)
	row("  embedded test strings", f.TestStrings)
	row("  not error results", f.NotErrorResults)
	row("  undecided", f.Undecided)
	row("adjudicated constructions", f.Constructions)
	row("semantic construction paths", f.SemanticPaths)
	row("repositories", f.Repositories)
	_, err := io.WriteString(w, b.String())
	return err
}
