package rules_test

import (
	"context"
	"os"
	"strings"
	"testing"

	codingrules "github.com/mcpstress/stress/coding/rules"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/rules"
	"github.com/mcpstress/stress/study"
)

// TestCoder: the backend answers a record's request with the rules'
// coding of it, and refuses another model id and a request that is no
// record.
func TestCoder(t *testing.T) {
	c, err := study.LoadCorpus(os.DirFS("../../manifests"), "corpus/paper")
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.New(models.Spec{Name: "r", Backend: rules.Backend, Model: rules.Model})
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Scenarios {
		s := &c.Scenarios[i]
		reply, err := m.Generate(context.Background(), models.Request{Messages: rules.Request(s)})
		if err != nil || reply.Text != rules.Answer(codingrules.Code(s)) {
			t.Errorf("%s: %q, %v", s.ID, reply.Text, err)
		}
	}
	if _, err := models.New(models.Spec{Name: "r", Backend: rules.Backend, Model: "llama3"}); err == nil || !strings.Contains(err.Error(), `backend rules has one model, capture-rules, not "llama3"`) {
		t.Errorf("another model: %v", err)
	}
	if _, err := m.Generate(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "Code this."}}}); err == nil || !strings.Contains(err.Error(), "the rules code a record") {
		t.Errorf("no record: %v", err)
	}
}
