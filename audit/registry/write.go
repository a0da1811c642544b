package registry

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/internal/outdir"
)

// The files of a sample's output directory.
const (
	FrameFile        = "frame.jsonl"
	DrawsFile        = "draws.jsonl"
	ExclusionsFile   = "exclusions.jsonl"
	ReplacementsFile = "replacements.jsonl"
	SampleFile       = "sample.jsonl"
	RejectedFile     = "rejected.jsonl"
	ManifestFile     = "manifest.json"
	SumsFile         = "SHA256SUMS"
	// SnapshotDir holds the pages -fetch read, as served.
	SnapshotDir = "snapshot"
)

// Input is one file a frame was derived from.
type Input struct {
	// File is the file's base name (directories are left out so that the
	// same inputs give the same manifest from anywhere).
	File    string `json:"file"`
	SHA256  string `json:"sha256"`
	Bytes   int    `json:"bytes"`
	Records int    `json:"records"`
}

// Result is everything `stress sample` writes.
type Result struct {
	// Frame is the frame; for a frame read back (ReadFrame) only its
	// Entries are set.
	Frame *Frame
	// FromFrame says the frame was read back from a frame file rather
	// than derived from a snapshot.
	FromFrame bool
	// Fetched is the URL the snapshot was fetched from, "" for files.
	Fetched string
	// Inputs are the snapshot files (or the frame file).
	Inputs []Input
	// Problems are the snapshot's unreadable records and files
	// (*RecordError; the manifest names their files without directories).
	Problems []error
	Sample   *Sample
}

// StratumCounts are one stratum's numbers in the manifest.
type StratumCounts struct {
	Stratum  string `json:"stratum"`
	Frame    int    `json:"frame"`
	Asked    int    `json:"asked"`
	Drawn    int    `json:"drawn"`
	Excluded int    `json:"excluded"` // exclusions the draw reached
	Replaced int    `json:"replaced"`
}

// Manifest is manifest.json: how the sample was drawn, its counts and the
// sha256 of every other file.
type Manifest struct {
	Tool        string         `json:"tool"`
	Seed        uint64         `json:"seed"`
	Strata      string         `json:"strata"`
	Ordering    string         `json:"ordering"`
	StratumRule string         `json:"stratum_rule"`
	LatestRule  string         `json:"latest_rule,omitempty"`
	Fetched     string         `json:"fetched,omitempty"`
	FromFrame   bool           `json:"from_frame,omitempty"`
	Inputs      []Input        `json:"inputs"`
	Records     int            `json:"records,omitempty"`
	Servers     int            `json:"servers,omitempty"`
	Statuses    map[string]int `json:"statuses,omitempty"`
	// IncludeDeleted records -include-deleted: deleted servers were kept
	// in the frame (KeptDeleted of them); without it they are counted
	// in Rejected as ReasonDeleted.
	IncludeDeleted bool              `json:"include_deleted,omitempty"`
	KeptDeleted    int               `json:"kept_deleted,omitempty"`
	Rejected       map[string]int    `json:"rejected,omitempty"`
	Repositories   int               `json:"repositories"`
	FrameSHA256    string            `json:"frame_sha256"`
	Counts         []StratumCounts   `json:"counts"`
	Shortfalls     []Shortfall       `json:"shortfalls,omitempty"`
	Problems       []string          `json:"problems,omitempty"`
	Files          map[string]string `json:"files"`
}

// Counts returns the per-stratum numbers of r, in the order npm,
// pypi, remote, mcpb, oci, other.
func (r *Result) Counts() []StratumCounts {
	var out []StratumCounts
	for _, s := range strata {
		c := StratumCounts{Stratum: s, Asked: r.Sample.Strata[s]}
		for _, e := range r.Frame.Entries {
			if e.Stratum == s {
				c.Frame++
			}
		}
		for _, p := range r.Sample.Picks {
			if p.Stratum == s {
				c.Drawn++
			}
		}
		for _, x := range r.Sample.Exclusions {
			if x.Stratum == s && x.Reached {
				c.Excluded++
			}
		}
		for _, x := range r.Sample.Replacements {
			if x.Stratum == s {
				c.Replaced++
			}
		}
		out = append(out, c)
	}
	return out
}

// RejectedCounts counts the frame's rejections by reason.
func (r *Result) RejectedCounts() map[string]int {
	m := map[string]int{}
	for _, x := range r.Frame.Rejected {
		m[x.Reason]++
	}
	return m
}

// Write writes r into dir, which must not exist or be empty: the frame,
// the draw order, the exclusions, the replacements, the sample, the
// rejected records (derived frames only), manifest.json and SHA256SUMS,
// into a temporary directory renamed into place (internal/outdir).
// pages are snapshot pages to keep under SnapshotDir (for -fetch), named
// page-00001.json and on. The same Result writes the same bytes. It
// returns the manifest written.
func (r *Result) Write(final string, pages [][]byte) (*Manifest, error) {
	out, err := outdir.Create(final, nil)
	if err != nil {
		return nil, err
	}
	defer out.Abort()
	dir := out.Path()
	sums := map[string]string{}
	write := func(name string, data []byte) error {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), data, 0o644); err != nil {
			return err
		}
		h := sha256.Sum256(data)
		sums[name] = hex.EncodeToString(h[:])
		return nil
	}
	if len(pages) > 0 {
		if err := os.MkdirAll(filepath.Join(dir, SnapshotDir), 0o755); err != nil {
			return nil, err
		}
		for i, p := range pages {
			if err := write(fmt.Sprintf("%s/page-%05d.json", SnapshotDir, i+1), p); err != nil {
				return nil, err
			}
		}
	}
	type file struct {
		name string
		data []byte
	}
	files := []file{
		{FrameFile, jsonLines(r.Frame.Entries)},
		{DrawsFile, jsonLines(r.Sample.Order)},
		{ExclusionsFile, jsonLines(r.Sample.Exclusions)},
		{ReplacementsFile, jsonLines(r.Sample.Replacements)},
		{SampleFile, jsonLines(r.Sample.Picks)},
	}
	if !r.FromFrame {
		rejected := slices.Clone(r.Frame.Rejected)
		for i := range rejected {
			rejected[i].At.File = baseName(rejected[i].At.File)
		}
		files = append(files, file{RejectedFile, jsonLines(rejected)})
	}
	for _, f := range files {
		if err := write(f.name, f.data); err != nil {
			return nil, err
		}
	}
	m := Manifest{
		Tool:         "stress sample",
		Seed:         r.Sample.Seed,
		Strata:       r.Sample.Strata.String(),
		Ordering:     orderingRule,
		StratumRule:  stratumRule,
		Fetched:      r.Fetched,
		FromFrame:    r.FromFrame,
		Inputs:       r.Inputs,
		Repositories: len(r.Frame.Entries),
		FrameSHA256:  sums[FrameFile],
		Counts:       r.Counts(),
		Shortfalls:   r.Sample.Shortfalls,
		Files:        sums,
	}
	if !r.FromFrame {
		m.LatestRule = latestRule
		m.Records, m.Servers, m.Statuses = r.Frame.Records, r.Frame.Servers, r.Frame.Statuses
		m.Rejected = r.RejectedCounts()
		m.IncludeDeleted, m.KeptDeleted = r.Frame.IncludeDeleted, r.Frame.KeptDeleted
	}
	for _, p := range r.Problems {
		var re *RecordError
		if errors.As(p, &re) {
			c := *re
			c.At.File = baseName(c.At.File)
			p = &c
		}
		m.Problems = append(m.Problems, p.Error())
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := write(ManifestFile, append(data, '\n')); err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(sums)) {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	if err := os.WriteFile(filepath.Join(dir, SumsFile), []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return &m, out.Commit()
}

// baseName is the last element of a slash- or OS-separated path: outputs
// name input files without their directories, so that the same inputs
// write the same bytes from anywhere.
func baseName(p string) string {
	return path.Base(filepath.ToSlash(p))
}

// jsonLines encodes rows one a line.
func jsonLines[T any](rows []T) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for i := range rows {
		// Note: the row types are plain structs; encoding cannot fail.
		enc.Encode(&rows[i])
	}
	return b.Bytes()
}

// ReadFrame reads a frame file (frame.jsonl as Write writes it): one
// repository a line with its stratum. Any bad line is an error naming file
// and line, for a partial frame would change the draw.
func ReadFrame(file string, data []byte) ([]FrameEntry, error) {
	text, err := input.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []FrameEntry
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e FrameEntry
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, n, err)
		}
		repo, err := NormalizeGitHub(e.Repository)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: repository %s: %v", file, n, input.Quote(e.Repository), err)
		}
		if repo != e.Repository {
			return nil, fmt.Errorf("%s:%d: repository %s is not in canonical form (%s)", file, n, input.Quote(e.Repository), repo)
		}
		if !slices.Contains(strata, e.Stratum) {
			return nil, fmt.Errorf("%s:%d: repository %s: unknown stratum %s", file, n, repo, input.Quote(e.Stratum))
		}
		if first, dup := seen[repo]; dup {
			return nil, fmt.Errorf("%s:%d: repository %s is already on line %d", file, n, repo, first)
		}
		seen[repo] = n
		if e.Servers == nil {
			e.Servers = []string{}
		}
		if e.RegistryTypes == nil {
			e.RegistryTypes = []string{}
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no repositories", file)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Repository < out[j].Repository })
	return out, nil
}
