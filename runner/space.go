package runner

import (
	"github.com/mcpstress/stress/results"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// space enumerates a study's decisions in canonical order: model, prompt,
// condition, scenario, replicate (the innermost varies fastest), and maps
// keys to their index.
type space struct {
	models     []string
	prompts    []string
	conds      []study.Condition
	scenarios  []string
	replicates int
	shard      results.Shard

	mIdx map[string]int
	pIdx map[string]int
	cIdx map[study.Condition]int
	sIdx map[string]int
}

func newSpace(m *manifests.Manifest, scenarios []string, shard results.Shard) *space {
	s := &space{conds: m.Conditions, scenarios: scenarios, replicates: m.Replicates, shard: shard,
		mIdx: map[string]int{}, pIdx: map[string]int{}, cIdx: map[study.Condition]int{}, sIdx: map[string]int{}}
	if shard.N == 0 {
		s.shard = results.Shard{I: 1, N: 1}
	}
	for i, md := range m.Models {
		s.models = append(s.models, md.Name)
		s.mIdx[md.Name] = i
	}
	for i, p := range m.Prompts {
		s.prompts = append(s.prompts, p.Name)
		s.pIdx[p.Name] = i
	}
	for i, c := range m.Conditions {
		s.cIdx[c] = i
	}
	for i, id := range scenarios {
		s.sIdx[id] = i
	}
	return s
}

// total is the number of decisions of the whole study.
func (s *space) total() int {
	return len(s.models) * s.perModel()
}

// perModel is the number of decisions of one model.
func (s *space) perModel() int {
	return len(s.prompts) * len(s.conds) * len(s.scenarios) * s.replicates
}

// count is the number of decisions in the shard.
func (s *space) count() int {
	t, n, i := s.total(), s.shard.N, s.shard.I-1
	if t <= i {
		return 0
	}
	return (t-1-i)/n + 1
}

// global returns the study index of the shard's local decision j.
func (s *space) global(j int) int { return j*s.shard.N + s.shard.I - 1 }

// local returns the shard-local index of study decision i, and whether
// the decision is in the shard.
func (s *space) local(i int) (int, bool) {
	if i%s.shard.N != s.shard.I-1 {
		return 0, false
	}
	return i / s.shard.N, true
}

// coords splits study index i into model, prompt, condition, scenario and
// replicate (1-based) indices.
func (s *space) coords(i int) (mi, pi, ci, si, rep int) {
	rep = i%s.replicates + 1
	i /= s.replicates
	si = i % len(s.scenarios)
	i /= len(s.scenarios)
	ci = i % len(s.conds)
	i /= len(s.conds)
	pi = i % len(s.prompts)
	mi = i / len(s.prompts)
	return
}

// key returns the key of study decision i.
func (s *space) key(i int) simulator.Key {
	mi, pi, ci, si, rep := s.coords(i)
	return simulator.Key{Model: s.models[mi], Prompt: s.prompts[pi], Condition: s.conds[ci], Scenario: s.scenarios[si], Replicate: rep}
}

// index returns the study index of key k, and whether k is a decision of
// the study.
func (s *space) index(k simulator.Key) (int, bool) {
	mi, ok1 := s.mIdx[k.Model]
	pi, ok2 := s.pIdx[k.Prompt]
	ci, ok3 := s.cIdx[k.Condition]
	si, ok4 := s.sIdx[k.Scenario]
	if !ok1 || !ok2 || !ok3 || !ok4 || k.Replicate < 1 || k.Replicate > s.replicates {
		return 0, false
	}
	return (((mi*len(s.prompts)+pi)*len(s.conds)+ci)*len(s.scenarios)+si)*s.replicates + k.Replicate - 1, true
}
