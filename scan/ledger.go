package scan

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mcpstress/stress/internal/input"
)

// The decisions of an adjudicated ledger row.
const (
	// Construction: the match builds a tool-error result.
	Construction = "construction"
	// TestString: the match is test data embedded in production code.
	TestString = "test_string"
	// NotAnErrorResult: the match sets a flag of something else (another
	// API's is_error, a local state).
	NotAnErrorResult = "not_an_error_result"
)

// Decisions lists the decisions; an empty decision is undecided.
var Decisions = []string{Construction, TestString, NotAnErrorResult}

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

// Summarize reads an adjudicated ledger (LedgerColumns; only id,
// repository, decision and semantic_path are required) and returns its
// funnel. Every bad row is an error naming the file and line (an unknown
// decision, a construction without a semantic path, an id given twice);
// the funnel counts the good rows.
func Summarize(file string, r io.Reader) (*Funnel, []error) {
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
		return nil, []error{fmt.Errorf("%s: the header lacks the column(s) %s (want %s)", file, strings.Join(missing, ", "), strings.Join(LedgerColumns, ","))}
	}
	f := &Funnel{}
	var errs []error
	seen := map[string]int{}
	paths := map[[2]string]bool{}
	repos := map[string]bool{}
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
		get := func(c string) string {
			if i := col[c]; i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		id, repo, decision, path := get("id"), get("repository"), get("decision"), get("semantic_path")
		at := fmt.Sprintf("%s:%d: row %s", file, line, input.Quote(id))
		switch {
		case id == "":
			errs = append(errs, fmt.Errorf("%s: no id", at))
			continue
		case seen[id] > 0:
			errs = append(errs, fmt.Errorf("%s: id already on line %d", at, seen[id]))
			continue
		case decision != "" && !slices.Contains(Decisions, decision):
			errs = append(errs, fmt.Errorf("%s: decision %s: want %s, or empty for undecided", at, input.Quote(decision), strings.Join(Decisions, ", ")))
			continue
		case decision == Construction && path == "":
			errs = append(errs, fmt.Errorf("%s: a construction needs its semantic_path", at))
			continue
		case decision == Construction && repo == "":
			errs = append(errs, fmt.Errorf("%s: a construction needs its repository", at))
			continue
		}
		seen[id] = line
		f.Matches++
		switch decision {
		case "":
			f.Undecided++
		case TestString:
			f.TestStrings++
		case NotAnErrorResult:
			f.NotErrorResults++
		case Construction:
			f.Constructions++
			paths[[2]string{repo, path}] = true
			repos[repo] = true
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
