package analysis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpstress/stress/results"
)

// BundleInfo is a bundle's manifest.json (results.Record, the one schema)
// and the directory it was read from.
type BundleInfo struct {
	Dir string
	*results.Record
}

// ReadBundleInfo reads dir/manifest.json (see results.ReadRecord for what
// is refused).
func ReadBundleInfo(dir string) (*BundleInfo, error) {
	rec, err := results.ReadRecord(dir)
	if err != nil {
		return nil, err
	}
	if rec.Coding() {
		return nil, results.CodingError(dir)
	}
	return &BundleInfo{Dir: dir, Record: rec}, nil
}

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

// RunModels maps each model label to what manifest.json records of it.
func (bi *BundleInfo) RunModels() map[string]RunModel {
	m := map[string]RunModel{}
	for _, md := range bi.Manifest.Models {
		m[md.Name] = RunModel{Label: md.Name, Backend: md.Backend, ModelID: md.Model, Digest: md.Digest}
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
