package study_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/study"
)

func paperCorpus(t *testing.T) *study.Corpus {
	t.Helper()
	c, err := study.LoadCorpus(os.DirFS("../manifests"), "corpus/paper")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestUnconfirmedAndConfirm(t *testing.T) {
	c := paperCorpus(t)
	if un := c.Unconfirmed(); len(un) != 0 {
		t.Fatalf("the paper corpus has unconfirmed records: %v", un)
	}
	s := &c.Scenarios[2]
	b := s.Profile.Content["T"]
	b.Proposed = true
	s.Profile.Content["T"] = b
	un := c.Unconfirmed()
	if len(un) != 1 || un[0].ID != s.ID || strings.Join(un[0].Proposed, ",") != "content.T" {
		t.Fatalf("Unconfirmed = %+v, want %s content.T", un, s.ID)
	}
	if msg := study.UnconfirmedError(un); !strings.Contains(msg, "1 records have proposed (unconfirmed) coding: "+s.ID) {
		t.Errorf("UnconfirmedError = %q", msg)
	}
	if err := s.Confirm("", time.Now()); err == nil {
		t.Error("Confirm accepted an empty name")
	}
	at := time.Date(2026, 12, 1, 2, 3, 4, 0, time.UTC)
	if err := s.Confirm("Ada Lovelace", at); err != nil {
		t.Fatal(err)
	}
	if un := c.Unconfirmed(); len(un) != 0 {
		t.Fatalf("after Confirm: %v", un)
	}
	if s.Coding == nil || s.Coding.Confirmed == nil || s.Coding.Confirmed.By != "Ada Lovelace" || s.Coding.Confirmed.At != "2026-12-01T02:03:04Z" {
		t.Fatalf("Coding = %+v", s.Coding)
	}
	// The confirmation is part of the record and loads back.
	data, _ := study.EncodeScenarios([]study.Scenario{*s})
	if _, errs := study.ParseScenarios("x.json", data); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func TestCodingValidation(t *testing.T) {
	c := paperCorpus(t)
	for _, tc := range []struct {
		name   string
		coding *study.Coding
		mark   bool // mark a bit proposed
		want   string
	}{
		{"unknown coded field", &study.Coding{Coded: []string{"profile", "colour"}}, false, `field coding.coded[1]: unknown field "colour"`},
		{"confirmed without name", &study.Coding{Confirmed: &study.Confirmation{At: "2026-12-01T00:00:00Z"}}, false, "field coding.confirmed.by: want a person's name"},
		{"confirmed bad time", &study.Coding{Confirmed: &study.Confirmation{By: "x", At: "yesterday"}}, false, "field coding.confirmed.at: want an RFC 3339 time"},
		{"confirmed yet proposed", &study.Coding{Confirmed: &study.Confirmation{By: "x", At: "2026-12-01T00:00:00Z"}}, true, "field coding.confirmed: a confirmed record has proposed coding left: control.D"},
		{"decision field", &study.Coding{Decisions: []study.Decision{{Field: "content.Q", By: "x", Ledger: "l.csv", LedgerSHA256: strings.Repeat("a", 64), Row: 2}}}, false, `field coding.decisions[0].field: unknown field "content.Q"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := c.Scenarios[0]
			s.Profile = study.ProfileCoding{Control: study.View{}, Content: study.View{}}
			for k, v := range c.Scenarios[0].Profile.Control {
				s.Profile.Control[k] = v
			}
			for k, v := range c.Scenarios[0].Profile.Content {
				s.Profile.Content[k] = v
			}
			if tc.mark {
				b := s.Profile.Control["D"]
				b.Proposed = true
				s.Profile.Control["D"] = b
			}
			s.Coding = tc.coding
			data, _ := json.Marshal([]study.Scenario{s})
			_, errs := study.ParseScenarios("x.json", data)
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}

func TestValidField(t *testing.T) {
	for f, want := range map[string]bool{
		"control.D": true, "content.R": true, "cause": true, "target": true, "preferred_policy": true,
		"non_harm.retry_later": true, "non_harm.nope": false, "control.X": false, "view.D": false, "profile": false, "": false,
	} {
		t.Run(fmt.Sprintf("%q", f), func(t *testing.T) {
			if study.ValidField(f) != want {
				t.Errorf("ValidField(%q) = %v, want %v", f, !want, want)
			}
		})
	}
}

// TestUnconfirmed: Unconfirmed undoes a whole-record Confirm of a record
// whose every bit was proposed, without touching the record it copies.
func TestUnconfirmed(t *testing.T) {
	c, err := study.LoadCorpus(os.DirFS("../manifests/corpus"), "lab")
	if err != nil {
		t.Fatal(err)
	}
	s := c.Scenarios[0]
	before, _ := json.Marshal(s)
	u := s.Unconfirmed()
	if after, _ := json.Marshal(s); string(after) != string(before) {
		t.Error("Unconfirmed changed the record it copies")
	}
	if u.Coding != nil || !u.Capture.Proposed {
		t.Errorf("coding %v, capture proposed %v", u.Coding, u.Capture.Proposed)
	}
	for _, v := range []study.View{u.Profile.Control, u.Profile.Content} {
		for c, b := range v {
			if !b.Proposed {
				t.Errorf("bit %s is not proposed", c)
			}
		}
	}
	r := u
	if err := r.Confirm(s.Coding.Confirmed.By, time.Now()); err != nil {
		t.Fatal(err)
	}
	if r.Coding.Confirmed.By != s.Coding.Confirmed.By || r.Capture.Proposed {
		t.Error("confirming the unconfirmed copy does not give the record back")
	}
}
