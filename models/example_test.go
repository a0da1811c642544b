package models_test

// This file is a worked example of a backend that a reader can copy: a
// keyword model that answers from the text it is shown. A real backend
// would call its server in Generate (see models/ollama and models/openai,
// which send requests through models/transport to get retries and
// transport events for free).

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/runner"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// keyword is the example backend's model.
type keyword struct {
	word string // the word that means "the tool does not exist"
}

// Assert at compile time that keyword is a models.Model.
var _ models.Model = (*keyword)(nil)

// Generate answers select_tool when the last message mentions the word,
// stop_or_escalate otherwise. The answer is JSON text, parsed later by the
// same parser as any model's.
func (k *keyword) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	if err := ctx.Err(); err != nil {
		return models.Reply{}, err // an error is a transport failure, never an answer
	}
	last := req.Messages[len(req.Messages)-1].Content
	policy := study.StopOrEscalate
	if strings.Contains(strings.ToLower(last), k.word) {
		policy = study.SelectTool
	}
	text, err := json.Marshal(map[string]string{"operation_status": "failed", "recovery_policy": string(policy)})
	return models.Reply{Text: string(text)}, err
}

// In a real backend this runs in an init function of its package, and
// cmd/stress imports the package. (Here a sync.Once, so that the test may
// run more than once in a process.)
var registerOnce sync.Once

func registerKeyword() { registerOnce.Do(register) }

func register() {
	models.Register("keyword", models.Backend{New: func(s models.Spec) (models.Model, error) {
		word, _ := s.Options["word"].(string)
		if word == "" {
			return nil, fmt.Errorf("model %q: options.word: missing", s.Name)
		}
		return &keyword{word: word}, nil
	}})
}

// TestExampleBackend registers the example and runs it through the same
// pipeline as every backend.
func TestExampleBackend(t *testing.T) {
	registerKeyword()
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	m.Models = []manifests.Model{{Name: "kw", Backend: "keyword", Model: "kw", Options: map[string]any{"word": "not found"}}}
	m.Conditions = []study.Condition{study.Normalized}
	m.Replicates = 1
	plan, err := runner.Prepare(m, false)
	if err != nil {
		t.Fatal(err)
	}
	_, sum, err := plan.Run(context.Background(), runner.Options{Out: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	// Strict for every unknown-tool observation whose text says "not found".
	want := 0
	for _, s := range m.Corpus.Scenarios {
		if strings.Contains(strings.ToLower(s.ObservationText()), "not found") && s.Preferred == study.SelectTool {
			want++
		}
	}
	c := sum.Cells[0]
	if c.N != 21 || c.Count(simulator.Strict) != want || c.Count(simulator.Cover) != want || want == 0 {
		t.Errorf("cell %+v, want %d strict and cover", c, want)
	}
	if b, _ := models.Lookup("keyword"); b.New == nil {
		t.Error("the example backend is not registered")
	}
}
