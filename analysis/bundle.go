package analysis

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/study"
)

// BundleInfo is what the analysis reads from a bundle's manifest.json: the
// run, how far it got, the study's name and seed, its models and the
// corpus files' hashes.
type BundleInfo struct {
	Dir    string `json:"dir"`
	RunID  string `json:"run_id"`
	Source string `json:"source"` // where the manifest came from: a path or builtin:NAME
	// Decisions is the number of decisions the bundle holds when complete
	// (its shard's share of the study), ≥ 0.
	Decisions int `json:"decisions"`
	// Completed and Remaining count the decisions done and to do as of the
	// end of the last session (absent in bundles older than resume: 0).
	Completed int `json:"completed"`
	Remaining int `json:"remaining"`
	// Finished is when the last decision was done; nil while the bundle is
	// unfinished (interrupted, killed or running).
	Finished *time.Time `json:"finished"`
	Study    struct {
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

// ReadBundleInfo reads dir/manifest.json. An unreadable file, invalid JSON
// and a missing or invalid required field (run_id, manifest, decisions,
// corpus_files) are errors that name the file (and the field).
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
	// Which required fields are there at all (a zero is a valid count).
	var present struct {
		Manifest  json.RawMessage `json:"manifest"`
		Decisions json.RawMessage `json:"decisions"`
	}
	if err := json.Unmarshal(b, &present); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	switch {
	case bi.RunID == "":
		return nil, fmt.Errorf("%s: field run_id is missing or empty: not a results bundle's manifest", file)
	case isNull(present.Manifest):
		return nil, fmt.Errorf("%s: field manifest is missing: not a results bundle's manifest", file)
	case isNull(present.Decisions):
		return nil, fmt.Errorf("%s: field decisions is missing: cannot tell whether the bundle is complete", file)
	case bi.Decisions < 0 || bi.Completed < 0 || bi.Remaining < 0:
		return nil, fmt.Errorf("%s: negative counts (decisions %d, completed %d, remaining %d)", file, bi.Decisions, bi.Completed, bi.Remaining)
	case len(bi.CorpusFiles) == 0:
		return nil, fmt.Errorf("%s: field corpus_files is empty: cannot identify the corpus", file)
	}
	bi.Dir = dir
	return &bi, nil
}

func isNull(m json.RawMessage) bool { return len(m) == 0 || string(m) == "null" }

// Unfinished reports whether manifest.json records the bundle as not done:
// decisions remaining, or no finish time.
func (bi *BundleInfo) Unfinished() bool { return bi.Remaining > 0 || bi.Finished == nil }

// Partial returns "" when the bundle is complete: manifest.json records it
// finished and read, the number of decisions read from it (counted and
// error), is the number it records. Otherwise it returns a one-line
// warning that names the bundle and says what falls short. A negative read
// checks manifest.json alone.
func (bi *BundleInfo) Partial(read int) string {
	var why []string
	switch {
	case bi.Remaining > 0:
		why = append(why, fmt.Sprintf("%s records %d of %d decisions done, %d remaining", results.ManifestFile, bi.Completed, bi.Decisions, bi.Remaining))
	case bi.Finished == nil:
		why = append(why, fmt.Sprintf("%s records no finish time (the run was interrupted or killed)", results.ManifestFile))
	}
	switch {
	case read < 0 || read == bi.Decisions:
	case read > bi.Decisions:
		why = append(why, fmt.Sprintf("it holds %d decisions, more than the %d its %s records", read, bi.Decisions, results.ManifestFile))
	case bi.Remaining == 0 || read != bi.Completed:
		why = append(why, fmt.Sprintf("it holds %d of its %d decisions", read, bi.Decisions))
	}
	if len(why) == 0 {
		return ""
	}
	return fmt.Sprintf("partial bundle %s: %s", bi.Dir, strings.Join(why, "; "))
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
