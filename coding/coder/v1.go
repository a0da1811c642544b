package coder

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/study"
)

// This file reads the coding bundles of earlier versions (v1), which had
// a manifest.json and call lines of their own ("kind": "coding"; one line
// per coding with its model, prompt and record) before codings ran
// through the runner. A finished one is reported and its coded corpora
// rewritten, as that version did; an unfinished one is not continued.

// v1Record is what a report reads of a v1 bundle's manifest.json.
type v1Record struct {
	Kind           string                 `json:"kind"` // "coding"
	ManifestSHA256 string                 `json:"manifest_sha256"`
	CorpusFiles    []study.File           `json:"corpus_files"`
	Prompts        []results.PromptRecord `json:"prompts"`
	AllowUnpinned  bool                   `json:"allow_unpinned"`
	Finished       *time.Time             `json:"finished"`
}

// v1Line is what a report reads of a v1 call line.
type v1Line struct {
	Model          string `json:"model"`
	Prompt         string `json:"prompt"`
	Record         string `json:"record"`
	Response       string `json:"response"`
	ResponseSHA256 string `json:"response_sha256"`
	Error          string `json:"error"` // the call failed for good
}

// readV1 reads the manifest.json of the bundle at dir when it is a v1
// coding bundle; nil for any other (the results bundle's reader says
// what is wrong with it).
func readV1(dir string) *v1Record {
	b, err := input.ReadFile(filepath.Join(dir, results.ManifestFile), input.BundleJSON)
	if err != nil {
		return nil
	}
	var rec v1Record
	if json.Unmarshal(b, &rec) != nil || rec.Kind != "coding" {
		return nil
	}
	return &rec
}

// reportV1 reports the finished v1 bundle rec at dir from its call lines
// and rewrites its coded corpora.
func (p *plan) reportV1(dir string, rec *v1Record) (*Summary, error) {
	lock, err := results.LockBundle(dir, "stress code -resume")
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	if rec.ManifestSHA256 != p.m.SHA256 {
		return nil, fmt.Errorf("resume %s: the manifest %s differs from the one the bundle records (sha256 %.12s…, now %.12s…)", dir, p.m.Source, rec.ManifestSHA256, p.m.SHA256)
	}
	if !slices.Equal(rec.CorpusFiles, p.m.Corpus.Files) {
		return nil, fmt.Errorf("resume %s: the corpus differs from the one the bundle records", dir)
	}
	for i, pf := range p.m.Prompts {
		if i >= len(rec.Prompts) || rec.Prompts[i].SHA256 != pf.SHA256 {
			return nil, fmt.Errorf("resume %s: prompt %s differs from the one the bundle records", dir, pf.Path)
		}
	}
	if rec.Finished == nil {
		return nil, fmt.Errorf("resume %s: an unfinished coding of an earlier version, which this version does not continue: code again into a new bundle", dir)
	}
	file := filepath.Join(dir, results.CallsFile)
	data, err := input.ReadFile(file, input.CodingCalls)
	if err != nil {
		return nil, err
	}
	answers := map[[3]string]answer{}
	for n, raw := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var l v1Line
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("%s: line %d: damaged (%v)", file, n+1, err)
		}
		if l.ResponseSHA256 != results.SHA256([]byte(l.Response)) {
			return nil, fmt.Errorf("%s: line %d: the response does not match its response_sha256", file, n+1)
		}
		answers[[3]string{l.Model, l.Prompt, l.Record}] = answer{text: l.Response, failed: l.Error != ""}
	}
	return p.corpora(dir, answers)
}
