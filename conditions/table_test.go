package conditions_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/study"
)

// TestTable checks that conditions.Table is study's vocabulary, one entry
// per condition in the order of study.AllConditions, with the paired
// family the paper's four, the shape family study.ShapeConditions, and
// every unknown name refused.
func TestTable(t *testing.T) {
	var names, paired, shapes []study.Condition
	for _, sp := range conditions.Table {
		names = append(names, sp.Name)
		switch sp.Family {
		case conditions.FamilyPaired:
			paired = append(paired, sp.Name)
		case conditions.FamilyShape:
			shapes = append(shapes, sp.Name)
		}
	}
	if !slices.Equal(names, study.AllConditions) {
		t.Errorf("Table lists %v, want study.AllConditions %v", names, study.AllConditions)
	}
	if !slices.Equal(paired, study.Conditions) || !slices.Equal(shapes, study.ShapeConditions) {
		t.Errorf("paired %v, shapes %v", paired, shapes)
	}
	if _, ok := conditions.Lookup("nope"); ok {
		t.Error("Lookup found an unknown condition")
	}
	if _, err := conditions.DataFor(&study.Scenario{ID: "S", Observation: []byte(`{}`)}, "nope", 0); err == nil || !strings.Contains(err.Error(), `unknown condition "nope"`) {
		t.Errorf("DataFor of an unknown condition: %v", err)
	}
}

// TestTableProperties pins what an entry says of its condition beyond
// its rendering: its family, whether it reveals the preferred policy, and
// whether it has a factorial cell.
func TestTableProperties(t *testing.T) {
	for _, tc := range []struct {
		c       study.Condition
		family  conditions.Family
		reveals bool
		cell    bool
	}{
		{study.Normalized, conditions.FamilyPaired, false, false},
		{study.CodeOnly, conditions.FamilyPaired, false, false},
		{study.Structured, conditions.FamilyPaired, true, true},
		{study.Prose, conditions.FamilyPaired, true, false},
		{study.Envelope, conditions.FamilyCounterfactual, true, false},
		{study.Category, conditions.FamilyCounterfactual, false, false},
		{study.SentenceParaphraseFailed, conditions.FamilyFactorial, true, true},
		{study.CategoryText, conditions.FamilyChannel, false, false},
		{study.EnvelopeFalseReplay, conditions.FamilyTrust, false, false},
		{study.EnvelopeFalseTarget, conditions.FamilyTrust, false, false},
		{study.ToolFailureSEP2145, conditions.FamilyShape, false, false},
		{study.RateLimited, conditions.FamilyShape, false, false},
		{study.ToolFailureGuidance, conditions.FamilyShape, true, false},
	} {
		t.Run(string(tc.c), func(t *testing.T) {
			sp := spec(t, tc.c)
			_, cell := conditions.CellOf(tc.c)
			if sp.Family != tc.family || sp.RevealsPolicy != tc.reveals || cell != tc.cell {
				t.Errorf("family %s, reveals %t, cell %t; want %s, %t, %t", sp.Family, sp.RevealsPolicy, cell, tc.family, tc.reveals, tc.cell)
			}
		})
	}
}

// TestTableContracts renders every scenario of the paper and lab corpora
// under every condition and checks that the contract a client finds in
// the message (the last label line, conditions.ContractAt) is one the
// condition's entry says it carries, and that each condition with
// contracts carries one somewhere.
func TestTableContracts(t *testing.T) {
	for _, corpus := range shapeCorpora {
		scs, p := loadCorpus(t, corpus)
		for _, sp := range conditions.Table {
			t.Run(corpus+"/"+string(sp.Name), func(t *testing.T) {
				seen := false
				for i := range scs {
					msgs, err := p.Initial(&scs[i], sp.Name)
					if err != nil {
						t.Fatal(err)
					}
					lines := strings.Split(msgs[len(msgs)-1].Content, "\n")
					var found conditions.Contract
					for j := len(lines) - 1; j >= 0 && found == ""; j-- {
						found, _ = conditions.ContractAt(lines[j])
					}
					if found != "" && !slices.Contains(sp.Contracts, found) {
						t.Errorf("%s: carries %s, want one of %v", scs[i].ID, found, sp.Contracts)
					}
					seen = seen || found != ""
				}
				if seen != (sp.Contracts != nil) {
					t.Errorf("a contract in some rendering: %t, want %t (%v)", seen, sp.Contracts != nil, sp.Contracts)
				}
			})
		}
	}
}

// TestContrasts checks the predeclared contrasts: each compares two
// distinct conditions of the table, none twice; the paper's two come
// first, without a note, and every other says what it isolates.
func TestContrasts(t *testing.T) {
	seen := map[conditions.Contrast]bool{}
	for i, c := range conditions.Contrasts {
		_, okA := conditions.Lookup(c.A)
		_, okB := conditions.Lookup(c.B)
		if !okA || !okB || c.A == c.B || seen[c] || (c.Isolates == "") != (i < 2) {
			t.Errorf("contrast %d %+v", i, c)
		}
		seen[c] = true
	}
	if len(conditions.Contrasts) != 25 {
		t.Errorf("%d contrasts, want 25", len(conditions.Contrasts))
	}
}
