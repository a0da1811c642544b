// Package coding measures how reliable a corpus' coding is: it compares two
// codings of the same records (two people, the rules and a person, a model
// and a person) field by field, with raw agreement, Cohen's kappa, Gwet's
// AC1 and PABAK (analysis/stats), lists the disagreements, and turns them
// into an adjudication ledger whose decisions make an adjudicated corpus.
// It reads and writes corpus records (study) and depends on nothing else
// of the project but analysis/stats.
package coding

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/study"
)

// Field kinds: a profile bit or a non-harm label is binary (0 or 1); the
// cause, the target and the preferred policy are nominal (one of k
// categories).
const (
	kindBinary  = "binary"
	kindNominal = "nominal"
)

// fields lists the compared fields of a record in order: the six bits of
// the control view, then of the content view, the cause, the target, the
// preferred policy, and membership of each policy in the non-harm set.
func fields() []string {
	var f []string
	for _, v := range []string{"control", "content"} {
		for _, c := range study.Coordinates {
			f = append(f, v+"."+c)
		}
	}
	f = append(f, study.FieldCause, study.FieldTarget, study.FieldPreferred)
	for _, p := range study.Policies {
		f = append(f, "non_harm."+string(p))
	}
	return f
}

// kindOf returns the kind of a field of Fields.
func kindOf(field string) string {
	switch field {
	case study.FieldCause, study.FieldTarget, study.FieldPreferred:
		return kindNominal
	}
	return kindBinary
}

// group returns the coded field (study.CodedFields) a compared field
// belongs to.
func group(field string) string {
	switch {
	case strings.HasPrefix(field, "control.") || strings.HasPrefix(field, "content."):
		return study.FieldProfile
	case strings.HasPrefix(field, "non_harm."):
		return study.FieldNonHarm
	}
	return field
}

// valueOf returns a record's value of field and its evidence pointer ("" for
// fields that have none): "0" or "1" for a bit or a non-harm label, the
// label for a cause or policy, "tool:NAME", "parameter:POINTER",
// "credential:NAME" or "dependency:NAME" for a target.
func valueOf(s *study.Scenario, field string) (value, evidence string) {
	switch field {
	case study.FieldCause:
		return string(s.Cause), ""
	case study.FieldPreferred:
		return string(s.Preferred), ""
	case study.FieldTarget:
		return targetString(s.Target), ""
	}
	if p, ok := strings.CutPrefix(field, "non_harm."); ok {
		if s.InNonHarm(study.Policy(p)) {
			return "1", ""
		}
		return "0", ""
	}
	view, c, _ := strings.Cut(field, ".")
	v := s.Profile.Control
	if view == "content" {
		v = s.Profile.Content
	}
	b := v[c]
	return fmt.Sprint(b.Bit), b.Evidence
}

// targetString writes a target as KIND:NAME or KIND:POINTER.
func targetString(t study.Target) string {
	if t.Pointer != "" {
		return t.Kind + ":" + t.Pointer
	}
	return t.Kind + ":" + t.Name
}

// parseTarget reads a target written by targetString; its kind must be
// one of the vocabulary's (tool, parameter, credential, dependency).
func parseTarget(s string) (study.Target, error) {
	kind, rest, ok := strings.Cut(s, ":")
	switch {
	case !ok || rest == "":
		return study.Target{}, fmt.Errorf("want KIND:NAME or parameter:POINTER, got %q", s)
	case kind == "parameter":
		if !strings.HasPrefix(rest, "/") {
			return study.Target{}, fmt.Errorf("a parameter target needs a JSON pointer starting with /, got %q", rest)
		}
		return study.Target{Kind: kind, Pointer: rest}, nil
	case kind == "tool" || kind == "credential" || kind == "dependency":
		return study.Target{Kind: kind, Name: rest}, nil
	}
	return study.Target{}, fmt.Errorf("unknown target kind %q (want tool, parameter, credential or dependency)", kind)
}

// categories returns the scale of a field: "0", "1" for a binary field,
// every policy of the vocabulary for the preferred policy, and the paper's
// five causes for the cause (Compare widens it to every cause when a
// record has one of the lab's, so that the paper's agreement statistics,
// which depend on the number of categories, keep the paper's scale). The
// target's scale is open: nil here (Compare uses the values either coder
// wrote).
func categories(field string) []string {
	switch field {
	case study.FieldCause:
		return strs(study.PaperCauses)
	case study.FieldPreferred:
		return strs(study.Policies)
	case study.FieldTarget:
		return nil
	}
	return []string{"0", "1"}
}

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// Side is one of the two codings compared.
type Side struct {
	Path   string        `json:"path"`   // the corpus as the user named it
	Coders []string      `json:"coders"` // the coders its records name (Coding.Coder), sorted; empty when none does
	Corpus *study.Corpus `json:"-"`
}

// Load reads a corpus named by a path (a directory of *.json files or one
// file), as the command line names it.
func Load(path string) (*Side, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	c, err := study.LoadCorpusAs(os.DirFS(filepath.Dir(abs)), filepath.Base(abs), path)
	if err != nil {
		return nil, err
	}
	s := &Side{Path: path, Corpus: c, Coders: []string{}}
	for _, r := range c.Scenarios {
		if r.Coding != nil && r.Coding.Coder != "" && !slices.Contains(s.Coders, r.Coding.Coder) {
			s.Coders = append(s.Coders, r.Coding.Coder)
		}
	}
	sort.Strings(s.Coders)
	return s, nil
}

// Label names a side for people: its path and coders.
func (s *Side) Label() string {
	if len(s.Coders) == 0 {
		return s.Path
	}
	return fmt.Sprintf("%s (coder %s)", s.Path, strings.Join(s.Coders, ", "))
}

// Options tunes Compare.
type Options struct {
	// Common compares the records both corpora hold when their record
	// sets differ (the others are listed in the result); without it,
	// differing record sets are an error.
	Common bool
	// Conf is the level of the intervals (default 0.95).
	Conf float64
}

// result is the agreement of two codings.
type result struct {
	A       *Side    `json:"a"`
	B       *Side    `json:"b"`
	Records int      `json:"records"` // records both corpora hold
	OnlyA   []string `json:"only_a"`  // record ids only A holds
	OnlyB   []string `json:"only_b"`  // record ids only B holds
	// NotCompared lists the coded fields (study.CodedFields) that one
	// side did not code on any shared record (a machine coder copies
	// them), with why.
	NotCompared   []string       `json:"not_compared"`
	Conf          float64        `json:"conf"`
	Fields        []fieldStats   `json:"fields"`
	Disagreements []Disagreement `json:"disagreements"`
	pairs         []recordPair
}

// fieldStats is the agreement on one field.
type fieldStats struct {
	Field      string   `json:"field"`
	Kind       string   `json:"kind"`       // Binary or Nominal
	Categories []string `json:"categories"` // the scale: rows and columns of Table
	// Table counts records by A's category (row) and B's (column).
	Table [][]int `json:"table"`
	stats.Agreement
}

// Disagreement is one record's field on which the codings differ.
type Disagreement struct {
	Record    string `json:"record"`
	Field     string `json:"field"`
	A         string `json:"a"`
	AEvidence string `json:"a_evidence"`
	B         string `json:"b"`
	BEvidence string `json:"b_evidence"`
}

type recordPair struct{ a, b *study.Scenario }

// SetError is the error for two corpora whose record sets differ.
type SetError struct {
	A, B         string
	OnlyA, OnlyB []string
}

// Error lists the records only one corpus holds.
func (e *SetError) Error() string {
	return fmt.Sprintf("the corpora code different records: only in %s: %s; only in %s: %s",
		e.A, list(e.OnlyA), e.B, list(e.OnlyB))
}

func list(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// pair matches the records of two corpora by id. Records whose
// observations differ are an error (the coders did not code the same
// failure), and so is no record in common, with or without common (there
// is nothing to compare); differing record sets are a *SetError unless
// common is set.
func pair(a, b *Side, common bool) (pairs []recordPair, onlyA, onlyB []string, err error) {
	bs := map[string]*study.Scenario{}
	for i := range b.Corpus.Scenarios {
		bs[b.Corpus.Scenarios[i].ID] = &b.Corpus.Scenarios[i]
	}
	seen := map[string]bool{}
	var errs []string
	for i := range a.Corpus.Scenarios {
		ra := &a.Corpus.Scenarios[i]
		seen[ra.ID] = true
		rb, ok := bs[ra.ID]
		if !ok {
			onlyA = append(onlyA, ra.ID)
			continue
		}
		if !sameJSON(ra.Observation, rb.Observation) {
			errs = append(errs, fmt.Sprintf("record %s: %s and %s hold different observations: the coders did not code the same failure", ra.ID, a.Path, b.Path))
			continue
		}
		pairs = append(pairs, recordPair{ra, rb})
	}
	for i := range b.Corpus.Scenarios {
		if id := b.Corpus.Scenarios[i].ID; !seen[id] {
			onlyB = append(onlyB, id)
		}
	}
	if len(errs) > 0 {
		return nil, nil, nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	if len(pairs) == 0 {
		return nil, onlyA, onlyB, fmt.Errorf("%s (%d records) and %s (%d records) share no record: nothing to compare",
			a.Path, len(a.Corpus.Scenarios), b.Path, len(b.Corpus.Scenarios))
	}
	if (len(onlyA) > 0 || len(onlyB) > 0) && !common {
		return nil, onlyA, onlyB, &SetError{A: a.Path, B: b.Path, OnlyA: onlyA, OnlyB: onlyB}
	}
	return pairs, onlyA, onlyB, nil
}

// sameJSON reports whether two JSON texts are equal once compacted.
func sameJSON(x, y json.RawMessage) bool {
	var bx, by bytes.Buffer
	if json.Compact(&bx, x) != nil || json.Compact(&by, y) != nil {
		return bytes.Equal(x, y)
	}
	return bytes.Equal(bx.Bytes(), by.Bytes())
}

// Compare computes the agreement of two codings on every field of Fields.
func Compare(a, b *Side, opt Options) (*result, error) {
	if opt.Conf == 0 {
		opt.Conf = 0.95
	}
	pairs, onlyA, onlyB, err := pair(a, b, opt.Common)
	if err != nil {
		return nil, err
	}
	r := &result{A: a, B: b, Records: len(pairs), OnlyA: nonNil(onlyA), OnlyB: nonNil(onlyB), Conf: opt.Conf,
		NotCompared: []string{}, Fields: []fieldStats{}, Disagreements: []Disagreement{}, pairs: pairs}
	for _, g := range study.CodedFields {
		var who []string
		if !slices.ContainsFunc(pairs, func(p recordPair) bool { return p.a.CodesField(g) }) {
			who = append(who, "A")
		}
		if !slices.ContainsFunc(pairs, func(p recordPair) bool { return p.b.CodesField(g) }) {
			who = append(who, "B")
		}
		if len(who) > 0 {
			r.NotCompared = append(r.NotCompared, fmt.Sprintf("%s (%s did not code it)", g, strings.Join(who, " and ")))
		}
	}
	for _, f := range fields() {
		g := group(f)
		if slices.ContainsFunc(r.NotCompared, func(nc string) bool { return strings.HasPrefix(nc, g+" ") }) {
			continue
		}
		fa := fieldStats{Field: f, Kind: kindOf(f), Categories: categories(f)}
		type val struct{ a, b, ea, eb, id string }
		var vals []val
		for _, p := range pairs {
			if !p.a.CodesField(g) || !p.b.CodesField(g) {
				continue
			}
			va, ea := valueOf(p.a, f)
			vb, eb := valueOf(p.b, f)
			vals = append(vals, val{va, vb, ea, eb, p.a.ID})
		}
		if f == study.FieldCause && slices.ContainsFunc(vals, func(v val) bool {
			return !slices.Contains(fa.Categories, v.a) || !slices.Contains(fa.Categories, v.b)
		}) {
			fa.Categories = strs(study.Causes)
		}
		if fa.Categories == nil { // the target: the values either coder wrote
			for _, v := range vals {
				for _, x := range []string{v.a, v.b} {
					if !slices.Contains(fa.Categories, x) {
						fa.Categories = append(fa.Categories, x)
					}
				}
			}
			sort.Strings(fa.Categories)
			for len(fa.Categories) < 2 {
				// Note: an open scale with one value used still has
				// another possible value; AC1 and PABAK need q ≥ 2.
				fa.Categories = append(fa.Categories, "(other)")
			}
		}
		q := len(fa.Categories)
		fa.Table = make([][]int, q)
		for i := range fa.Table {
			fa.Table[i] = make([]int, q)
		}
		for _, v := range vals {
			i, j := slices.Index(fa.Categories, v.a), slices.Index(fa.Categories, v.b)
			fa.Table[i][j]++
			if v.a != v.b {
				r.Disagreements = append(r.Disagreements, Disagreement{Record: v.id, Field: f, A: v.a, AEvidence: v.ea, B: v.b, BEvidence: v.eb})
			}
		}
		fa.Agreement = stats.Agree(fa.Table, opt.Conf)
		fa.Warnings = nonNil(fa.Warnings)
		r.Fields = append(r.Fields, fa)
	}
	sort.SliceStable(r.Disagreements, func(i, j int) bool { return r.Disagreements[i].Record < r.Disagreements[j].Record })
	return r, nil
}

// nonNil returns s, or an empty slice for nil (which JSON writes as null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
