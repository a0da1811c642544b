package study

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"slices"
	"unique"
)

// sharer makes the records of a corpus loaded for a run
// (LoadCorpusWithout) share one copy of each value they repeat: the
// observation and control envelope of records cloned from one template,
// the server pseudonym of a server's records, the vocabulary's words
// and the policy sets. A synthetic corpus of 16,667 records cloned from
// 21 held 11 MB of copies of 42 JSON values, which a run kept live from
// start to end. A record's values are then shared with other records:
// nothing may change them in place (a run reads them only).
type sharer struct {
	seed maphash.Seed
	// raw holds the JSON values seen, by the hash of their bytes; a value
	// whose hash another holds keeps its own copy.
	raw map[uint64][]byte
	// policies holds the policy sets seen, by their words joined.
	policies map[string][]Policy
	key      []byte
}

func newSharer() *sharer {
	return &sharer{seed: maphash.MakeSeed(), raw: map[uint64][]byte{}, policies: map[string][]Policy{}}
}

// share makes s's values the shared copies of equal ones (its id, which
// no other record has, stays its own).
func (sh *sharer) share(s *Scenario) {
	s.Server = str(s.Server)
	s.ProtocolVersion = str(s.ProtocolVersion)
	s.Probe = Probe(str(string(s.Probe)))
	s.Cause = Cause(str(string(s.Cause)))
	s.Surface = Surface(str(string(s.Surface)))
	s.Code = str(s.Code)
	s.Target.Kind, s.Target.Name, s.Target.Pointer = str(s.Target.Kind), str(s.Target.Name), str(s.Target.Pointer)
	s.Preferred = Policy(str(string(s.Preferred)))
	s.Observation = sh.json(s.Observation)
	s.ControlEnvelope = sh.json(s.ControlEnvelope)
	s.NonHarm = sh.set(s.NonHarm)
	s.PreferredSet = sh.set(s.PreferredSet)
}

// str returns the one copy of v (unique.Make).
func str(v string) string {
	if v == "" {
		return ""
	}
	return unique.Make(v).Value()
}

// json returns the copy of v shared by the records that hold the same
// bytes, without spare capacity (an append copies).
func (sh *sharer) json(v json.RawMessage) json.RawMessage {
	if v == nil {
		return nil
	}
	h := maphash.Bytes(sh.seed, v)
	have, ok := sh.raw[h]
	switch {
	case ok && bytes.Equal(have, v):
		return have
	case ok:
		return v // another value has its hash: v keeps its own copy
	}
	v = v[:len(v):len(v)]
	sh.raw[h] = v
	return v
}

// set returns the copy of ps shared by the records that hold the same
// policies in the same order, without spare capacity (an append
// copies); nil stays nil.
func (sh *sharer) set(ps []Policy) []Policy {
	if ps == nil {
		return nil
	}
	sh.key = sh.key[:0]
	for _, p := range ps {
		sh.key = append(append(sh.key, p...), 0)
	}
	if have, ok := sh.policies[string(sh.key)]; ok {
		return have
	}
	ps = slices.Clip(ps)
	for i, p := range ps {
		ps[i] = Policy(str(string(p)))
	}
	sh.policies[string(sh.key)] = ps
	return ps
}
