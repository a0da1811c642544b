package results

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/study"
)

// This file holds the bundle's schema: manifest.json (Record) and
// summary.json (Summary), as run, resume and merge write them and every
// reader reads them.

// Record is what manifest.json holds: the resolved manifest and the facts
// needed to reproduce or audit the run.
type Record struct {
	RunID     string             `json:"run_id"`
	Manifest  manifests.Manifest `json:"manifest"`
	ReplayCap int                `json:"replay_cap"`
	Source    string             `json:"source"`
	// SourceAbs is Source as an absolute path, when it is a file: a resume
	// from another directory finds the manifest by it.
	SourceAbs      string         `json:"source_abs,omitempty"`
	ManifestSHA256 string         `json:"manifest_sha256"`
	CorpusFiles    []study.File   `json:"corpus_files"`
	Prompts        []PromptRecord `json:"prompts"`
	Binary         Binary         `json:"binary"`
	AllowUnpinned  bool           `json:"allow_unpinned"`
	Unpinned       []string       `json:"unpinned_models,omitempty"`
	// AllowProposed records that the run was allowed on a corpus with
	// proposed (unconfirmed) coding (stress run -allow-proposed); every
	// counts table and report made from the bundle says so first.
	AllowProposed bool `json:"allow_proposed,omitempty"`
	// Unconfirmed lists the ids of the corpus' records whose coding was
	// unconfirmed when the run started (study.Corpus.Unconfirmed).
	Unconfirmed []string `json:"unconfirmed_records,omitempty"`
	// Models holds what each model\'s server reported before the run.
	Models map[string]*ModelCheck `json:"model_checks,omitempty"`
	// Decisions is the number of decisions the bundle holds when complete
	// (its shard's share of the study).
	Decisions int        `json:"decisions"`
	Started   time.Time  `json:"started"`
	Finished  *time.Time `json:"finished,omitempty"` // set when no decision remains
	// Shard is the slice of the study the bundle runs (nil: all of it).
	Shard *Shard `json:"shard,omitempty"`
	// Scheduler names the cluster job and task that created the bundle
	// (stress run -shard auto), nil otherwise.
	Scheduler *Scheduler `json:"scheduler,omitempty"`
	// Scenarios are the corpus' scenario ids in order, to enumerate the
	// study's decisions without the corpus (merge).
	Scenarios []string `json:"scenarios"`
	// Completed and Remaining count the bundle's decisions done and to do,
	// as of the end of the last session.
	Completed int `json:"completed"`
	Remaining int `json:"remaining"`
	// CallsDurable is how many bytes of calls.jsonl are known to be on
	// stable storage, updated after each fsync while a session runs
	// (recorded before the first line). A resume treats damage past it as
	// a torn tail and damage within it as tampering.
	CallsDurable *int64 `json:"calls_durable_bytes,omitempty"`
	// MessagesDurable is how many bytes of messages.jsonl are known to be
	// on stable storage, recorded with CallsDurable.
	MessagesDurable *int64 `json:"messages_durable_bytes,omitempty"`
	// Format is the bundle format: Format, the one this version reads
	// and writes (absent in a bundle of format 1; Upgrade converts
	// bundles of formats 1 and 2).
	Format int `json:"format,omitempty"`
	// Upgraded says the bundle was converted from an older format by
	// Upgrade (nil: written in this format).
	Upgraded *Upgraded `json:"upgraded,omitempty"`
	// Sessions are the runs that wrote the bundle: the first, then each
	// resume.
	Sessions []Session `json:"sessions,omitempty"`
	// MergedFrom lists the shard bundles a merged bundle was built from.
	MergedFrom []MergedShard `json:"merged_from,omitempty"`
}

// Session is one run or resume of a bundle.
type Session struct {
	Started     time.Time  `json:"started"`
	Ended       *time.Time `json:"ended,omitempty"` // nil: the session was killed
	Binary      Binary     `json:"binary"`
	Ran         int        `json:"ran"`                       // decisions completed in the session (while it runs, if killed or stopped by an error: those known durable)
	Redone      int        `json:"redone,omitempty"`          // interrupted decisions found at its start, run again
	Discarded   int64      `json:"discarded_bytes,omitempty"` // torn tail of calls.jsonl cut off at its start
	Interrupted bool       `json:"interrupted,omitempty"`     // it stopped before the end
	// Error is why the session stopped early on an error (a write that
	// failed, a prompt that did not render, an environment that failed
	// outside a decision); a resume credits the session the decisions
	// kept after its durable point, as for a killed one.
	Error string `json:"error,omitempty"`
}

// MergedShard identifies one shard bundle of a merge.
type MergedShard struct {
	Dir      string                 `json:"dir"`
	RunID    string                 `json:"run_id"`
	Shard    Shard                  `json:"shard"`
	Binary   Binary                 `json:"binary"`
	Models   map[string]*ModelCheck `json:"model_checks,omitempty"`
	Sessions []Session              `json:"sessions,omitempty"`
}

// PromptRecord identifies a prompt template by name, path and hash.
type PromptRecord struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Binary describes the program that ran the study.
type Binary struct {
	Module    string `json:"module"`
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	Revision  string `json:"vcs_revision,omitempty"`
	Modified  bool   `json:"vcs_modified,omitempty"`
	// SHA256 is the hash of the executable file, which identifies the
	// build even when it carries no VCS stamp (go run, -buildvcs=false).
	SHA256 string `json:"sha256,omitempty"`
}

// Summary is what summary.json holds.
type Summary struct {
	RunID     string `json:"run_id"`
	Decisions int    `json:"decisions"`
	Errors    int    `json:"errors"`
	Calls     int    `json:"calls"`
	// TransportEvents counts the transport faults recorded in calls.jsonl
	// (retried or fatal); they are never answers.
	TransportEvents int `json:"transport_events"`
	// Remaining is the number of decisions not yet done (interrupted run).
	Remaining int    `json:"remaining,omitempty"`
	Cells     []Cell `json:"cells"`
	// Parquet is what was recorded of decisions.parquet when it was
	// written (absent in bundles of earlier versions).
	Parquet ParquetCheck `json:"decisions_parquet,omitzero"`
}

// BinaryInfo reads the running binary's build information and the sha256
// of its executable (computed once per process).
func BinaryInfo() Binary {
	b := Binary{Module: "github.com/mcpstress/stress", Version: "(unknown)", SHA256: executableSHA256()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Module, b.Version, b.GoVersion = bi.Main.Path, bi.Main.Version, bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// executableSHA256 hashes the running executable; "" when it cannot be
// read. The hash is cached (see hashFile), so only the first run of a build
// reads the whole executable.
var executableSHA256 = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = ""
	} else {
		cache = filepath.Join(cache, "stress", "exe-sha256")
	}
	sum, _ := hashFile(exe, cache)
	return sum
})

// FileSHA256 returns the hex sha256 of file.
func FileSHA256(file string) (string, error) { return hashFile(file, "") }

// hashFile returns the hex sha256 of file. With cacheDir set, the hash is
// remembered there under the file's path, size and modification time, and
// read back while they are unchanged.
//
// Note: hashing the 40 MB executable took about 40 ms of a 60 ms
// one-decision run; a cache hit costs a stat and a small read.
func hashFile(file, cacheDir string) (string, error) {
	st, err := os.Stat(file)
	if err != nil {
		return "", err
	}
	var entry string
	if cacheDir != "" {
		abs, _ := filepath.Abs(file)
		key := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", abs, st.Size(), st.ModTime().UnixNano()))
		entry = filepath.Join(cacheDir, hex.EncodeToString(key[:16]))
		if b, err := os.ReadFile(entry); err == nil && len(b) == 64 {
			if _, err := hex.DecodeString(string(b)); err == nil {
				return string(b), nil
			}
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if entry != "" && os.MkdirAll(cacheDir, 0o755) == nil {
		// Written whole or not at all: a temporary file renamed.
		tmp := fmt.Sprintf("%s.%d.tmp", entry, os.Getpid())
		if os.WriteFile(tmp, []byte(sum), 0o644) == nil {
			os.Rename(tmp, entry)
		}
	}
	return sum, nil
}

// ModelCheck is what the preflight learned about one model: the facts its
// server reported (digest, version, family, ...) and whether it honoured
// seeds.
type ModelCheck struct {
	Facts        models.Facts `json:"facts,omitempty"`
	SeedHonoured *bool        `json:"seed_honoured,omitempty"` // nil when not probed
	SeedDetail   string       `json:"seed_detail,omitempty"`
}

// Coding reports whether the bundle is a coding (stress code): its calls
// are codings of records, not decisions to count.
func (r *Record) Coding() bool { return r.Manifest.Task == manifests.TaskCode }

// CodingError is the error of a command that counts, resumes or merges
// decisions given dir, a coding bundle.
func CodingError(dir string) error {
	return fmt.Errorf("%s is a coding bundle (written by stress code): it has no decisions to count, resume or merge; stress code -resume %s MANIFEST reports and continues it", dir, dir)
}

// ReadRecord reads a bundle's manifest.json. An unreadable file, invalid
// JSON and a missing or invalid required field (run_id, manifest,
// decisions, corpus_files) are errors that name the file (and the field);
// a bundle of another format than Format is an error that names the
// directory, its format and the command that upgrades it.
func ReadRecord(dir string) (*Record, error) {
	rec, err := readRecord(dir)
	if err == nil && rec.format() < Format {
		return nil, fmt.Errorf("%s is a bundle of format %d; this version reads format %d: run `stress upgrade %s -out NEW_DIR` to convert it (the bundle itself is left as it is)", dir, rec.format(), Format, dir)
	}
	return rec, err
}

// format is the bundle's format, 1 when manifest.json records none.
func (r *Record) format() int { return max(r.Format, 1) }

// readRecord is ReadRecord for a bundle of this format or an earlier one
// (Upgrade's); a newer one is an error.
func readRecord(dir string) (*Record, error) {
	file := filepath.Join(dir, ManifestFile)
	b, err := input.ReadFile(file, input.BundleJSON)
	if err != nil {
		return nil, fmt.Errorf("%s is not a results bundle: %w", dir, err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
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
	case rec.RunID == "":
		return nil, fmt.Errorf("%s: field run_id is missing or empty: not a results bundle's manifest", file)
	case isNull(present.Manifest):
		return nil, fmt.Errorf("%s: field manifest is missing: not a results bundle's manifest", file)
	case isNull(present.Decisions):
		return nil, fmt.Errorf("%s: field decisions is missing: cannot tell whether the bundle is complete", file)
	case rec.Decisions < 0 || rec.Completed < 0 || rec.Remaining < 0:
		return nil, fmt.Errorf("%s: negative counts (decisions %d, completed %d, remaining %d)", file, rec.Decisions, rec.Completed, rec.Remaining)
	case len(rec.CorpusFiles) == 0:
		return nil, fmt.Errorf("%s: field corpus_files is empty: cannot identify the corpus", file)
	case rec.format() > Format:
		return nil, fmt.Errorf("%s is a bundle of format %d, newer than this version of stress reads (format %d): use a newer stress", dir, rec.format(), Format)
	}
	return &rec, nil
}

// ProposedWarning is the line printed above every counts table and
// report made from a bundle run with -allow-proposed on a corpus with
// unconfirmed records, "" for any other.
func (r *Record) ProposedWarning() string {
	if !r.AllowProposed || len(r.Unconfirmed) == 0 {
		return ""
	}
	return fmt.Sprintf("warning: run with -allow-proposed: %d records of its corpus had proposed (unconfirmed) coding (%s); the numbers rest on coding no person confirmed",
		len(r.Unconfirmed), strings.Join(r.Unconfirmed, ", "))
}

func isNull(m json.RawMessage) bool { return len(m) == 0 || string(m) == "null" }

// Shard is a deterministic 1/N slice of a study's decisions: decision i
// (in canonical order) belongs to shard I when i mod N = I-1.
type Shard struct {
	I int `json:"i"` // 1-based shard number
	N int `json:"n"` // number of shards, ≥ 1
}

// ParseShard reads "i/n" with 1 ≤ i ≤ n ≤ 100000.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 100000 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("want i/n with 1 ≤ i ≤ n ≤ 100000, got %q", s)
	}
	return Shard{I: i, N: n}, nil
}

// String writes i/n.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }
