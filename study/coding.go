package study

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcpstress/stress/internal/input"
)

// Coding is the provenance of a record's coding: who coded it, which
// fields that coder coded, whether a person confirmed it, and which fields
// an adjudication decided. The paper corpus' records have none (one coder,
// the author, confirmed by publication).
type Coding struct {
	// Coder names who made the coding: a person, "rules" (the capture
	// rules) or "model:NAME" (stress code).
	Coder string `json:"coder,omitempty"`
	// Coded lists the fields the coder coded (CodedFields); empty means
	// all. A machine coder codes only the profile and copies the rest
	// from the corpus it was given, so an agreement leaves the copied
	// fields out.
	Coded []string `json:"coded,omitempty"`
	// Confirmed records that a person confirmed the whole record (stress
	// confirm): no bit of it is a proposal any more.
	Confirmed *Confirmation `json:"confirmed,omitempty"`
	// Decisions are the fields an adjudication decided (stress adjudicate
	// -apply), in ledger order.
	Decisions []Decision `json:"decisions,omitempty"`
}

// Confirmation is a person's confirmation of a whole record.
type Confirmation struct {
	By string `json:"by"` // the person's name
	At string `json:"at"` // when, RFC 3339 UTC
}

// Decision is one adjudicated field of a record: the value decided, by
// whom, and the ledger row it came from.
type Decision struct {
	Field        string `json:"field"`          // e.g. "content.P", "cause", "non_harm.retry_later"
	Value        string `json:"value"`          // the decided value, as the ledger writes it
	By           string `json:"by"`             // the adjudicator
	Note         string `json:"note,omitempty"` // the adjudicator's note
	Ledger       string `json:"ledger"`         // the ledger's file name
	LedgerSHA256 string `json:"ledger_sha256"`  // the ledger's sha256
	Row          int    `json:"row"`            // the 1-based line of the row in the ledger
}

// The coded fields of a record (Coding.Coded): the profile (both views'
// bits), the cause, the target, the preferred policy and the non-harm set.
const (
	FieldProfile   = "profile"
	FieldCause     = "cause"
	FieldTarget    = "target"
	FieldPreferred = "preferred_policy"
	FieldNonHarm   = "non_harm"
)

// CodedFields lists the coded fields in canonical order.
var CodedFields = []string{FieldProfile, FieldCause, FieldTarget, FieldPreferred, FieldNonHarm}

// CodesField reports whether the record's coder coded field (one of
// CodedFields): true when the record says nothing.
func (s *Scenario) CodesField(field string) bool {
	return s.Coding == nil || len(s.Coding.Coded) == 0 || slices.Contains(s.Coding.Coded, field)
}

// Unconfirmed is a record whose coding no person has confirmed, and why.
type Unconfirmed struct {
	ID string
	// Proposed lists the proposed bits ("control.D", …) and, for a
	// captured record whose cause is still the rule's, "capture.proposed".
	Proposed []string
}

// Unconfirmed lists the records of the corpus with a bit marked proposed
// or a capture whose cause and coding are still proposals, in id order
// (as they were before DropCodings, when the codings were dropped).
func (c *Corpus) Unconfirmed() []Unconfirmed {
	if c.dropped {
		return slices.Clone(c.unconfirmed)
	}
	var out []Unconfirmed
	for i := range c.Scenarios {
		if p := c.Scenarios[i].proposed(); len(p) > 0 {
			out = append(out, Unconfirmed{ID: c.Scenarios[i].ID, Proposed: p})
		}
	}
	return out
}

// proposed lists what of s is still a proposal.
func (s *Scenario) proposed() []string {
	var p []string
	for _, v := range []struct {
		name string
		view View
	}{{"control", s.Profile.Control}, {"content", s.Profile.Content}} {
		for _, c := range Coordinates {
			if v.view[c].Proposed {
				p = append(p, v.name+"."+c)
			}
		}
	}
	if s.Capture != nil && s.Capture.Proposed {
		p = append(p, "capture.proposed")
	}
	return p
}

// UnconfirmedError describes the unconfirmed records of a corpus, for a
// refusal.
func UnconfirmedError(un []Unconfirmed) string {
	ids := make([]string, 0, len(un))
	for _, u := range un {
		ids = append(ids, u.ID)
	}
	const most = 10
	more := ""
	if len(ids) > most {
		more = fmt.Sprintf(" and %d more", len(ids)-most)
		ids = ids[:most]
	}
	return fmt.Sprintf("%d records have proposed (unconfirmed) coding: %s%s", len(un), strings.Join(ids, ", "), more)
}

// Confirm records that person by confirmed the whole coding of s at time
// at: every bit loses its proposed mark, a capture's cause is no longer a
// proposal, and Coding.Confirmed says who and when.
func (s *Scenario) Confirm(by string, at time.Time) error {
	if err := checkName(by); err != nil {
		return err
	}
	for _, v := range []View{s.Profile.Control, s.Profile.Content} {
		for c, b := range v {
			b.Proposed = false
			v[c] = b
		}
	}
	if s.Capture != nil {
		s.Capture.Proposed = false
	}
	if s.Coding == nil {
		s.Coding = &Coding{}
	}
	s.Coding.Confirmed = &Confirmation{By: by, At: at.UTC().Format(time.RFC3339)}
	return nil
}

// Unconfirmed returns a copy of s as a coder proposed it before a person
// confirmed it whole (Confirm's inverse for a record whose every bit was
// proposed): no Coding, every bit of both views marked proposed, a
// capture's cause proposed. A test that re-derives a shipped, confirmed
// record compares the derivation with this.
func (s Scenario) Unconfirmed() Scenario {
	s.Coding = nil
	s.Profile.Control = maps.Clone(s.Profile.Control)
	s.Profile.Content = maps.Clone(s.Profile.Content)
	for _, v := range []View{s.Profile.Control, s.Profile.Content} {
		for c, b := range v {
			b.Proposed = true
			v[c] = b
		}
	}
	if s.Capture != nil {
		c := *s.Capture
		c.Proposed = true
		s.Capture = &c
	}
	return s
}

// checkName checks a person's name: printable, one line, 1 to 200
// characters.
func checkName(name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("want a person's name")
	}
	bad := len(name) > 200 || !utf8.ValidString(name)
	for _, r := range name {
		bad = bad || unicode.IsControl(r)
	}
	if bad {
		return fmt.Errorf("want a one-line printable name of at most 200 bytes, got %s", input.Quote(name))
	}
	return nil
}

// checkCoding checks a record's coding provenance.
func checkCoding(s *Scenario) []fieldErr {
	c := s.Coding
	var errs []fieldErr
	bad := func(field, format string, a ...any) {
		errs = append(errs, fieldErr{"coding." + field, fmt.Errorf(format, a...)})
	}
	seen := map[string]bool{}
	for i, f := range c.Coded {
		if !slices.Contains(CodedFields, f) {
			bad(fmt.Sprintf("coded[%d]", i), "unknown field %s (want one of %s)", input.Quote(f), strings.Join(CodedFields, ", "))
		}
		if seen[f] {
			bad(fmt.Sprintf("coded[%d]", i), "duplicate field %s", input.Quote(f))
		}
		seen[f] = true
	}
	if cf := c.Confirmed; cf != nil {
		if err := checkName(cf.By); err != nil {
			bad("confirmed.by", "%v", err)
		}
		if _, err := time.Parse(time.RFC3339, cf.At); err != nil {
			bad("confirmed.at", "want an RFC 3339 time, got %s", input.Quote(cf.At))
		}
		if p := s.proposed(); len(p) > 0 {
			bad("confirmed", "a confirmed record has proposed coding left: %s", strings.Join(p, ", "))
		}
	}
	for i, d := range c.Decisions {
		f := fmt.Sprintf("decisions[%d]", i)
		if !ValidField(d.Field) {
			bad(f+".field", "unknown field %s", input.Quote(d.Field))
		}
		if err := checkName(d.By); err != nil {
			bad(f+".by", "%v", err)
		}
		if d.Ledger == "" || len(d.LedgerSHA256) != 64 || d.Row < 1 {
			bad(f, "a decision names its ledger, the ledger's sha256 and its row")
		}
	}
	return errs
}

// ValidField reports whether f names a compared field of a record: a
// profile bit ("control.D" … "content.R"), "cause", "target",
// "preferred_policy" or a non-harm label ("non_harm.stop_or_escalate").
func ValidField(f string) bool {
	switch f {
	case FieldCause, FieldTarget, FieldPreferred:
		return true
	}
	if p, ok := strings.CutPrefix(f, "non_harm."); ok {
		return Policy(p).Valid()
	}
	view, c, ok := strings.Cut(f, ".")
	return ok && (view == "control" || view == "content") && slices.Contains(Coordinates, c)
}
