package coding

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpstress/stress/internal/csvcell"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/study"
)

// ledgerColumns are the columns of an adjudication ledger, a CSV file
// with this header: one row per disagreement, with both coders' values and
// evidence pointers, and the adjudicator's decision, name and note.
var ledgerColumns = []string{"record", "field", "a", "a_evidence", "b", "b_evidence", "decision", "decided_by", "note"}

// WriteLedger writes the disagreements of r as a ledger with empty
// decisions. Every cell is escaped (csvcell.Escape): a value a
// spreadsheet would take for a formula is written with an apostrophe in
// front, and ReadLedger takes it off.
func WriteLedger(w io.Writer, r *result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(ledgerColumns); err != nil {
		return err
	}
	for _, d := range r.Disagreements {
		if err := cw.Write(csvcell.EscapeRow([]string{d.Record, d.Field, d.A, d.AEvidence, d.B, d.BEvidence, "", "", ""})); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ledgerRow is one row of a ledger.
type ledgerRow struct {
	Line int // 1-based line in the file
	Disagreement
	Decision string
	By       string
	Note     string
}

// ledgerError locates a problem in a ledger: its file, row (line) and
// column.
type ledgerError struct {
	File   string
	Line   int    // 0 for the file as a whole
	Column string // "" for the whole row
	Err    error
}

// Error names the file, line and column, then the problem.
func (e *ledgerError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ": row %d", e.Line)
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ": column %s", e.Column)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap returns the problem.
func (e *ledgerError) Unwrap() error { return e.Err }

// ledger is a read ledger.
type ledger struct {
	File   string // as named
	SHA256 string // of its bytes
	Rows   []ledgerRow
}

// ReadLedger reads a ledger (name labels errors): the header must be
// ledgerColumns exactly, every row have as many cells, and no (record,
// field) appear twice. Every problem is reported, joined. Cells are
// unescaped (csvcell.Unescape): a decided_by or note written as '=x,
// by WriteLedger or by hand, reads as =x.
func ReadLedger(name string, data []byte) (*ledger, error) {
	sum := sha256.Sum256(data)
	l := &ledger{File: name, SHA256: hex.EncodeToString(sum[:])}
	data, err := input.Decode(data)
	if err != nil {
		return nil, &ledgerError{File: name, Err: err}
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, &ledgerError{File: name, Line: 1, Err: fmt.Errorf("want the header %s: %v", strings.Join(ledgerColumns, ","), err)}
	}
	if !slices.Equal(header, ledgerColumns) {
		return nil, &ledgerError{File: name, Line: 1, Err: fmt.Errorf("wrong columns %s, want %s", input.Quote(strings.Join(header, ",")), strings.Join(ledgerColumns, ","))}
	}
	var errs []error
	seen := map[[2]string]int{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			errs = append(errs, &ledgerError{File: name, Line: line, Err: err})
			if _, ok := err.(*csv.ParseError); ok {
				break
			}
			continue
		}
		if len(rec) != len(ledgerColumns) {
			errs = append(errs, &ledgerError{File: name, Line: line, Err: fmt.Errorf("%d cells, want %d (%s)", len(rec), len(ledgerColumns), strings.Join(ledgerColumns, ","))})
			continue
		}
		csvcell.UnescapeRow(rec)
		r := ledgerRow{Line: line, Disagreement: Disagreement{Record: rec[0], Field: rec[1], A: rec[2], AEvidence: rec[3], B: rec[4], BEvidence: rec[5]},
			Decision: strings.TrimSpace(rec[6]), By: strings.TrimSpace(rec[7]), Note: rec[8]}
		key := [2]string{r.Record, r.Field}
		if prev, dup := seen[key]; dup {
			errs = append(errs, &ledgerError{File: name, Line: line, Err: fmt.Errorf("duplicate row for record %s field %s (first at row %d)", input.Quote(r.Record), input.Quote(r.Field), prev)})
			continue
		}
		seen[key] = line
		if !study.ValidField(r.Field) {
			errs = append(errs, &ledgerError{File: name, Line: line, Column: "field", Err: fmt.Errorf("unknown field %s", input.Quote(r.Field))})
			continue
		}
		l.Rows = append(l.Rows, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// ApplyOptions tunes Apply.
type ApplyOptions struct {
	// By names the adjudicator of rows whose decided_by is empty; "" means
	// every decided row must name one.
	By string
}

// Apply checks a ledger against the current disagreements of a and b and
// returns A's records with every decision applied: the decided fields take
// the decided value (a bit takes the evidence and rationale of the coder
// it agrees with, and loses its proposed mark), and each record lists its
// decisions in Coding.Decisions. It refuses, naming file, row and column:
// an undecided row, a decision outside the field's vocabulary, a row for
// an unknown record, a row whose values or evidence no longer match the
// inputs, a disagreement without a row, and decided records that no
// longer load (a decided cause whose target kind does not fit).
func Apply(l *ledger, a, b *Side, opt ApplyOptions) ([]study.Scenario, error) {
	r, err := Compare(a, b, Options{})
	if err != nil {
		return nil, err
	}
	current := map[[2]string]Disagreement{}
	for _, d := range r.Disagreements {
		current[[2]string{d.Record, d.Field}] = d
	}
	ids := map[string]bool{}
	for _, s := range a.Corpus.Scenarios {
		ids[s.ID] = true
	}
	var errs []error
	bad := func(row ledgerRow, col, format string, args ...any) {
		errs = append(errs, &ledgerError{File: l.File, Line: row.Line, Column: col, Err: fmt.Errorf(format, args...)})
	}
	type decided struct {
		row   ledgerRow
		value string
	}
	byRecord := map[string][]decided{}
	inLedger := map[[2]string]bool{}
	for _, row := range l.Rows {
		key := [2]string{row.Record, row.Field}
		inLedger[key] = true
		if !ids[row.Record] {
			bad(row, "record", "unknown record %s (not in %s)", input.Quote(row.Record), a.Path)
			continue
		}
		d, ok := current[key]
		if !ok {
			bad(row, "", "record %s field %s: the coders agree now; the ledger no longer matches the inputs (write a new one)", row.Record, row.Field)
			continue
		}
		for _, c := range []struct{ col, got, want string }{
			{"a", row.A, d.A}, {"a_evidence", row.AEvidence, d.AEvidence}, {"b", row.B, d.B}, {"b_evidence", row.BEvidence, d.BEvidence},
		} {
			if c.got != c.want {
				bad(row, c.col, "%s, but the input now has %s: the ledger no longer matches the inputs", input.Quote(c.got), input.Quote(c.want))
			}
		}
		if row.Decision == "" {
			bad(row, "decision", "undecided (record %s field %s: A %s, B %s)", row.Record, row.Field, d.A, d.B)
			continue
		}
		value := row.Decision
		switch strings.ToLower(value) {
		case "a":
			value = d.A
		case "b":
			value = d.B
		}
		if err := checkValue(row.Field, value); err != nil {
			bad(row, "decision", "%v", err)
			continue
		}
		if row.By == "" {
			row.By = opt.By
		}
		if row.By == "" {
			bad(row, "decided_by", "a decision needs the adjudicator's name (or give -by)")
			continue
		}
		byRecord[row.Record] = append(byRecord[row.Record], decided{row, value})
	}
	for _, d := range r.Disagreements {
		if !inLedger[[2]string{d.Record, d.Field}] {
			errs = append(errs, &ledgerError{File: l.File, Err: fmt.Errorf("no row for the disagreement on record %s field %s (A %s, B %s): the ledger no longer matches the inputs", d.Record, d.Field, d.A, d.B)})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Note: without Options.Common, the pairs hold every record of A, in
	// order.
	out := make([]study.Scenario, 0, len(r.pairs))
	for _, p := range r.pairs {
		s := clone(*p.a)
		for _, dc := range byRecord[s.ID] {
			if err := set(&s, p.b, dc.row.Field, dc.value); err != nil {
				bad(dc.row, "decision", "%v", err)
				continue
			}
			if s.Coding == nil {
				s.Coding = &study.Coding{}
			}
			s.Coding.Decisions = append(s.Coding.Decisions, study.Decision{Field: dc.row.Field, Value: dc.value, By: dc.row.By,
				Note: dc.row.Note, Ledger: filepath.Base(l.File), LedgerSHA256: l.SHA256, Row: dc.row.Line})
		}
		out = append(out, s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	data, err := study.EncodeScenarios(out)
	if err != nil {
		return nil, err
	}
	if _, perrs := study.ParseScenarios("the adjudicated corpus", data); len(perrs) > 0 {
		return nil, fmt.Errorf("the decisions of %s make records that do not load: %w", l.File, errors.Join(perrs...))
	}
	return out, nil
}

// checkValue checks a decided value against the field's vocabulary.
func checkValue(field, value string) error {
	switch field {
	case study.FieldCause:
		if !study.Cause(value).Valid() {
			return fmt.Errorf("unknown cause %s (want one of %s)", input.Quote(value), strings.Join(strs(study.Causes), ", "))
		}
	case study.FieldPreferred:
		if !study.Policy(value).Valid() {
			return fmt.Errorf("unknown policy %s (want one of %s)", input.Quote(value), strings.Join(categories(field), ", "))
		}
	case study.FieldTarget:
		if _, err := parseTarget(value); err != nil {
			return err
		}
	default:
		if value != "0" && value != "1" {
			return fmt.Errorf("want 0 or 1 (or a, b for a coder's value), got %s", input.Quote(value))
		}
	}
	return nil
}

// clone deep-copies the parts of a record Apply changes.
func clone(s study.Scenario) study.Scenario {
	for _, v := range []*study.View{&s.Profile.Control, &s.Profile.Content} {
		c := study.View{}
		for k, b := range *v {
			c[k] = b
		}
		*v = c
	}
	s.NonHarm = slices.Clone(s.NonHarm)
	if s.Coding != nil {
		c := *s.Coding
		c.Decisions = slices.Clone(c.Decisions)
		s.Coding = &c
	}
	if s.Capture != nil {
		c := *s.Capture
		s.Capture = &c
	}
	s.ControlEnvelope = slices.Clone(s.ControlEnvelope)
	return s
}

// set sets a field of s (A's record) to a decided value; other is B's
// record, whose evidence and rationale a bit takes when B's value is the
// one decided.
func set(s, other *study.Scenario, field, value string) error {
	switch field {
	case study.FieldCause:
		s.Cause = study.Cause(value)
		info, _ := s.Cause.Info()
		s.Code = info.Code
		return setEnvelope(s)
	case study.FieldPreferred:
		s.Preferred = study.Policy(value)
		return setEnvelope(s)
	case study.FieldTarget:
		t, _ := parseTarget(value)
		s.Target = t
		return setEnvelope(s)
	}
	if p, ok := strings.CutPrefix(field, "non_harm."); ok {
		pol := study.Policy(p)
		s.NonHarm = slices.DeleteFunc(s.NonHarm, func(x study.Policy) bool { return x == pol })
		if value == "1" {
			s.NonHarm = append(s.NonHarm, pol)
			slices.SortFunc(s.NonHarm, func(x, y study.Policy) int {
				return slices.Index(study.Policies, x) - slices.Index(study.Policies, y)
			})
		}
		return nil
	}
	view, c, _ := strings.Cut(field, ".")
	v, ov := s.Profile.Control, other.Profile.Control
	if view == "content" {
		v, ov = s.Profile.Content, other.Profile.Content
	}
	b := v[c]
	if fmt.Sprint(b.Bit) != value {
		b = ov[c]
	}
	b.Proposed = false
	v[c] = b
	return nil
}

// setEnvelope makes the record's counterfactual control envelope carry
// its code, preferred policy and target again after a decision changed
// one of them (the loader requires they agree).
func setEnvelope(s *study.Scenario) error {
	var env map[string]any
	dec := json.NewDecoder(bytes.NewReader(s.ControlEnvelope))
	dec.UseNumber()
	if err := dec.Decode(&env); err != nil {
		return fmt.Errorf("control_envelope: %v", err)
	}
	e, ok := env["error"].(map[string]any)
	if !ok {
		return fmt.Errorf("control_envelope: no error object")
	}
	e["code"], e["policy"] = s.Code, string(s.Preferred)
	t := map[string]any{"kind": s.Target.Kind}
	if s.Target.Name != "" {
		t["name"] = s.Target.Name
	}
	if s.Target.Pointer != "" {
		t["pointer"] = s.Target.Pointer
	}
	e["target"] = t
	data, err := json.Marshal(env)
	if err != nil {
		return err
	}
	s.ControlEnvelope = data
	return nil
}
