package analysis

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/study"
)

// BundleInfo is what the analysis reads from a bundle's manifest.json: the
// run, the study's name and seed, its models and the corpus files' hashes.
type BundleInfo struct {
	Dir    string `json:"dir"`
	RunID  string `json:"run_id"`
	Source string `json:"source"` // where the manifest came from: a path or builtin:NAME
	Study  struct {
		Name       string            `json:"name"`
		Seed       uint64            `json:"seed"`
		Replicates int               `json:"replicates"`
		Conditions []study.Condition `json:"conditions"`
		Models     []struct {
			Name    string `json:"name"`
			Backend string `json:"backend"`
			Model   string `json:"model"`
		} `json:"models"`
	} `json:"manifest"`
	CorpusFiles []study.File `json:"corpus_files"`
	Prompts     []struct {
		Name   string `json:"name"`
		SHA256 string `json:"sha256"`
	} `json:"prompts"`
}

// ReadBundleInfo reads dir/manifest.json.
func ReadBundleInfo(dir string) (*BundleInfo, error) {
	file := filepath.Join(dir, results.ManifestFile)
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var bi BundleInfo
	if err := json.Unmarshal(b, &bi); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(bi.CorpusFiles) == 0 {
		return nil, fmt.Errorf("%s: field corpus_files is empty: cannot identify the corpus", file)
	}
	bi.Dir = dir
	return &bi, nil
}

// ModelIDs maps each model label to its backend model id.
func (bi *BundleInfo) ModelIDs() map[string]string {
	m := map[string]string{}
	for _, md := range bi.Study.Models {
		m[md.Name] = md.Model
	}
	return m
}

// CorpusHashes returns the sorted sha256 of the corpus files.
func (bi *BundleInfo) CorpusHashes() []string {
	var h []string
	for _, f := range bi.CorpusFiles {
		h = append(h, f.SHA256)
	}
	slices.Sort(h)
	return h
}

// SameCorpus returns nil when a and b were run on the same corpus (the
// same multiset of file hashes; paths may differ), else an error that
// names the files that differ.
func SameCorpus(a, b *BundleInfo) error {
	ha, hb := a.CorpusHashes(), b.CorpusHashes()
	if slices.Equal(ha, hb) {
		return nil
	}
	only := func(x *BundleInfo, other []string) []string {
		var out []string
		for _, f := range x.CorpusFiles {
			if !slices.Contains(other, f.SHA256) {
				out = append(out, fmt.Sprintf("%s (sha256 %.12s…)", f.Path, f.SHA256))
			}
		}
		return out
	}
	return fmt.Errorf("corpus hashes differ: %s has %d corpus files, %s has %d; only in %s: %s; only in %s: %s",
		a.Dir, len(ha), b.Dir, len(hb), a.Dir, orNone(only(a, hb)), b.Dir, orNone(only(b, ha)))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
