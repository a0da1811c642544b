package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/study"
)

// Files and directories Write creates inside the output directory.
const (
	CorpusDir     = "corpus"                  // the pseudonymous corpus, one <pseudonym>.json per server
	ManifestFile  = "manifest.yaml"           // the baselines on the corpus: `stress run DIR/manifest.yaml`
	PromptFile    = manifests.BaselinesPrompt // a copy of the built-in prompt the manifest names
	PrivateDir    = "private"                 // raw frames, server stderr and the pseudonym key: never publish
	LogFile       = "private/capture.json"    // what was probed, with real names
	stderrDir     = "private/stderr"          // what stdio servers wrote to stderr
	QuarantineDir = "private/quarantine"      // records not published, one <id>.json each, with the reason
	framesDir     = "private/frames"          // raw JSON-RPC frames, one file per server
	readmeFile    = "private/README.txt"      // says what private/ is
)

// manifestHeader is the leading comment of the manifest Write puts next
// to the corpus.
const manifestHeader = `Written by stress capture: the three deterministic baselines on the
captured corpus (1 replicate: they are deterministic). Its coding is a
rule-based proposal: stress run refuses it until a person confirms it
(stress confirm, or stress adjudicate against a hand coding), unless
  stress run -allow-proposed DIR/manifest.yaml
where DIR is the directory this file is in.`

const privateReadme = `This directory holds what the corpus was made from: the raw JSON-RPC
frames exactly as they crossed the wire (frames/), what stdio servers wrote
to stderr (stderr/), capture.json, which maps pseudonyms to the real server
and tool names, and the records kept out of the corpus (quarantine/, each
with the reason). It is not minimized or pseudonymized. Do not publish it;
the corpus in ../corpus is usable without it.
`

// logServer is one server's entry in private/capture.json.
type logServer struct {
	Label           string         `json:"label"`
	Pseudonym       string         `json:"pseudonym"`
	Transport       string         `json:"transport"`
	Command         []string       `json:"command,omitempty"`
	URL             string         `json:"url,omitempty"`
	Name            string         `json:"name,omitempty"`
	Version         string         `json:"version,omitempty"`
	ProtocolVersion string         `json:"protocol_version,omitempty"`
	SDK             string         `json:"sdk"`
	View            string         `json:"view"`
	Calls           int            `json:"calls"`
	Exit            string         `json:"exit,omitempty"`
	Coercing        bool           `json:"coercing,omitempty"` // it ran a handler on a wrong JSON type
	Frames          string         `json:"frames,omitempty"`
	Stderr          string         `json:"stderr,omitempty"`
	Error           string         `json:"error,omitempty"`
	Notes           []string       `json:"notes,omitempty"`
	Quarantined     []Quarantined  `json:"quarantined,omitempty"` // without their records (see the files)
	Tools           []logTool      `json:"tools,omitempty"`
	Probes          []logProbe     `json:"probes,omitempty"`
	Redacted        map[string]int `json:"redacted,omitempty"`
	Flagged         map[string]int `json:"flagged,omitempty"`
}

// logTool is one advertised tool and whether capture could call it.
type logTool struct {
	Name      string `json:"name"`
	Pseudonym string `json:"pseudonym"`
	ReadOnly  bool   `json:"read_only"`
	Basis     string `json:"basis"`
}

// logProbe is one probe and its outcome.
type logProbe struct {
	Kind      study.Probe     `json:"kind"`
	Tool      string          `json:"tool"`
	Field     string          `json:"field,omitempty"`
	Status    string          `json:"status"`
	RequestID json.RawMessage `json:"request_id,omitempty"`
	Wire      study.Surface   `json:"wire_surface,omitempty"`
	Surface   study.Surface   `json:"surface,omitempty"`
	Note      string          `json:"note,omitempty"`
}

// Quarantined is a captured failure whose record was kept out of the
// corpus, and why. Its file in QuarantineDir holds the (scrubbed) record
// and the real tool name: it is private.
type Quarantined struct {
	ID     string          `json:"id"`               // the record's id
	Server string          `json:"server"`           // the server's pseudonym
	Probe  study.Probe     `json:"probe"`            // the probe that made it
	Tool   string          `json:"tool,omitempty"`   // the real tool name
	Reason string          `json:"reason"`           // what the record failed (see vet)
	File   string          `json:"file,omitempty"`   // its file, relative to the output directory
	Record json.RawMessage `json:"record,omitempty"` // the record, when it could be built
}

// Written says what Write wrote.
type Written struct {
	Dir         string        // the output directory
	Scenarios   int           // records in the corpus
	Servers     int           // servers with at least one record
	Files       []string      // corpus files, relative to Dir
	Quarantined []Quarantined // records kept out of the corpus, in QuarantineDir
}

// vet checks a record before it may be published and says why not, or
// returns "": the corpus loader (study.ParseScenarios, as `stress run` and
// `stress summary` read it) must accept it, and the scrubber must find
// nothing more in it (scrubber.recordResidue). A record that fails is
// quarantined, so one bad answer cannot break the corpus of the others,
// and nothing the scrubber missed in building it is published.
func vet(rec study.Scenario, sc *scrubber) string {
	data, err := json.Marshal([]study.Scenario{rec})
	if err != nil {
		return err.Error()
	}
	if _, errs := study.ParseScenarios("record", data); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, err := range errs {
			var re *study.RecordError
			if errors.As(err, &re) && re.Field != "" {
				msgs[i] = fmt.Sprintf("field %s: %v", re.Field, re.Err)
			} else if re != nil {
				msgs[i] = re.Err.Error()
			} else {
				msgs[i] = err.Error()
			}
		}
		return "the corpus loader rejects it: " + strings.Join(msgs, "; ")
	}
	if where, what := sc.recordResidue(data[1 : len(data)-1]); what != "" {
		return fmt.Sprintf("the scrubber still finds %s at %s", what, where)
	}
	return ""
}

// Write builds every server's scenarios and writes the output directory,
// which must not exist or be empty. Records that fail vet are written to
// QuarantineDir instead, with the reason, and listed in
// Written.Quarantined; the others are written (Write does not fail for a
// quarantined record: the caller decides). The corpus is written only if
// it has at least one record; the private log is written in any case. The
// corpus is checked with study.LoadCorpus before Write returns.
//
// The directory is written under a temporary name and renamed into place
// (internal/outdir) once complete, the cases above included: a capture
// stopped midway leaves nothing at dir.
func Write(dir string, servers []*Server, o Options) (*Written, error) {
	out, err := outdir.Create(dir, nil)
	if err != nil {
		return nil, err
	}
	defer out.Abort()
	w, err := write(out.Path(), servers, o)
	if w == nil {
		// The temporary directory is gone: the message names the output.
		return nil, out.Named(err)
	}
	w.Dir = dir
	if cerr := out.Commit(); cerr != nil {
		return w, cerr
	}
	// The messages name the directory as it is now.
	return w, out.Named(err)
}

// write is Write into dir, a new empty directory.
func write(dir string, servers []*Server, o Options) (*Written, error) {
	for _, d := range []string{CorpusDir, framesDir, stderrDir, QuarantineDir, "prompts"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(filepath.Join(dir, PrivateDir), 0o700); err != nil {
		return nil, err
	}
	w := &Written{Dir: dir}
	var log []logServer
	for _, s := range servers {
		framesRel := "../" + framesName(s.Pseudonym)
		s.Build(&o, framesRel)
		quarantined, err := writeQuarantine(dir, s.Quarantined)
		if err != nil {
			return nil, err
		}
		w.Quarantined = append(w.Quarantined, quarantined...)
		entry := logServer{
			Label: s.Target.Label, Pseudonym: s.Pseudonym, Transport: s.Target.Transport(),
			Command: s.Target.Command, URL: s.Target.URL, Name: s.Name, Version: s.Version,
			ProtocolVersion: s.ProtocolVersion, SDK: s.SDK, View: s.View, Calls: s.Calls, Exit: s.Exit, Coercing: s.Coercing, Notes: s.Notes,
			Redacted: nonEmpty(s.Redacted), Flagged: nonEmpty(s.Flagged),
		}
		if s.Err != nil {
			entry.Error = s.Err.Error()
		}
		for _, q := range quarantined {
			q.Record = nil
			entry.Quarantined = append(entry.Quarantined, q)
		}
		for _, t := range s.Tools {
			entry.Tools = append(entry.Tools, logTool{t.Name, s.ToolPseudonyms[t.Name], t.ReadOnly, t.Basis})
		}
		for _, out := range s.Outcomes {
			entry.Probes = append(entry.Probes, logProbe{out.Kind, out.Tool, out.Field, out.Status, out.RequestID, out.Wire, out.Surface, out.Note})
		}
		if len(s.Frames) > 0 {
			var b bytes.Buffer
			if err := WriteFrames(&b, s.Frames); err != nil {
				return nil, err
			}
			entry.Frames = framesName(s.Pseudonym)
			if err := os.WriteFile(filepath.Join(dir, entry.Frames), b.Bytes(), 0o600); err != nil {
				return nil, err
			}
		}
		if len(s.Stderr) > 0 {
			entry.Stderr = stderrDir + "/" + s.Pseudonym + ".log"
			if err := os.WriteFile(filepath.Join(dir, entry.Stderr), s.Stderr, 0o600); err != nil {
				return nil, err
			}
		}
		log = append(log, entry)
		if len(s.Scenarios) == 0 {
			continue
		}
		name := CorpusDir + "/" + s.Pseudonym + ".json"
		if err := writeJSON(dir, name, s.Scenarios, 0o644); err != nil {
			return nil, err
		}
		w.Files = append(w.Files, name)
		w.Servers++
		w.Scenarios += len(s.Scenarios)
	}
	if err := writeJSON(dir, LogFile, map[string]any{"servers": log}, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, readmeFile), []byte(privateReadme), 0o600); err != nil {
		return nil, err
	}
	if err := manifests.WriteBaselines(filepath.Join(dir, ManifestFile), "capture", manifestHeader, CorpusDir, 1, 20260819); err != nil {
		return nil, err
	}
	if w.Scenarios == 0 && len(w.Quarantined) > 0 {
		return w, fmt.Errorf("no record written to %s: all %d were quarantined (see %s)", filepath.Join(dir, CorpusDir), len(w.Quarantined), filepath.Join(dir, QuarantineDir))
	}
	if w.Scenarios == 0 {
		return w, fmt.Errorf("no failures captured: nothing written to %s (see %s)", filepath.Join(dir, CorpusDir), filepath.Join(dir, LogFile))
	}
	if _, err := study.LoadCorpus(os.DirFS(dir), CorpusDir); err != nil {
		return w, fmt.Errorf("the written corpus does not load: %w", err)
	}
	sort.Strings(w.Files)
	return w, nil
}

// writeQuarantine writes each quarantined record to QuarantineDir as
// <id>.json (a numbered name when taken) and returns them with their
// files.
func writeQuarantine(dir string, qs []Quarantined) ([]Quarantined, error) {
	out := make([]Quarantined, 0, len(qs))
	for _, q := range qs {
		name := QuarantineDir + "/" + q.ID + ".json"
		for n := 2; ; n++ {
			if _, err := os.Stat(filepath.Join(dir, name)); errors.Is(err, fs.ErrNotExist) {
				break
			}
			name = fmt.Sprintf("%s/%s-%d.json", QuarantineDir, q.ID, n)
		}
		q.File = name
		if err := writeJSON(dir, name, q, 0o600); err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// writeJSON writes v, indented and ending in a newline, to the file name
// inside dir.
func writeJSON(dir, name string, v any, perm os.FileMode) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), append(data, '\n'), perm)
}

// SortedKinds lists a count map as "kind n, kind n" in key order.
func SortedKinds(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
