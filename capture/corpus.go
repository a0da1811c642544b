package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/study"
)

// Files and directories Write creates inside the output directory.
const (
	CorpusDir    = "corpus"                  // the pseudonymous corpus, one <pseudonym>.json per server
	ManifestFile = "manifest.yaml"           // the baselines on the corpus: `stress run DIR/manifest.yaml`
	PromptFile   = manifests.BaselinesPrompt // a copy of the built-in prompt the manifest names
	PrivateDir   = "private"                 // raw frames, server stderr and the pseudonym key: never publish
	LogFile      = "private/capture.json"    // what was probed, with real names
	stderrDir    = "private/stderr"          // what stdio servers wrote to stderr
	framesDir    = "private/frames"          // raw JSON-RPC frames, one file per server
	readmeFile   = "private/README.txt"      // says what private/ is
)

// manifestHeader is the leading comment of the manifest Write puts next
// to the corpus.
const manifestHeader = `Written by stress capture: the three deterministic baselines on the
captured corpus (1 replicate: they are deterministic). Run it with
  stress run DIR/manifest.yaml
where DIR is the directory this file is in.`

const privateReadme = `This directory holds what the corpus was made from: the raw JSON-RPC
frames exactly as they crossed the wire (frames/), what stdio servers wrote
to stderr (stderr/), and capture.json, which maps pseudonyms to the real
server and tool names. It is not minimized or pseudonymized. Do not publish
it; the corpus in ../corpus is usable without it.
`

// LogServer is one server's entry in private/capture.json.
type LogServer struct {
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
	Tools           []LogTool      `json:"tools,omitempty"`
	Probes          []LogProbe     `json:"probes,omitempty"`
	Redacted        map[string]int `json:"redacted,omitempty"`
	Flagged         map[string]int `json:"flagged,omitempty"`
}

// LogTool is one advertised tool and whether capture could call it.
type LogTool struct {
	Name      string `json:"name"`
	Pseudonym string `json:"pseudonym"`
	ReadOnly  bool   `json:"read_only"`
	Basis     string `json:"basis"`
}

// LogProbe is one probe and its outcome.
type LogProbe struct {
	Kind      study.Probe     `json:"kind"`
	Tool      string          `json:"tool"`
	Field     string          `json:"field,omitempty"`
	Status    string          `json:"status"`
	RequestID json.RawMessage `json:"request_id,omitempty"`
	Wire      study.Surface   `json:"wire_surface,omitempty"`
	Surface   study.Surface   `json:"surface,omitempty"`
	Note      string          `json:"note,omitempty"`
}

// Written says what Write wrote.
type Written struct {
	Dir       string   // the output directory
	Scenarios int      // records in the corpus
	Servers   int      // servers with at least one record
	Files     []string // corpus files, relative to Dir
}

// Write builds every server's scenarios and writes the output directory,
// which must not exist or be empty. The corpus is written only if it has
// at least one record; the private log is written in any case. The corpus
// is checked with study.LoadCorpus before Write returns.
func Write(dir string, servers []*Server, o Options) (*Written, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("output directory %s is not empty", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, d := range []string{CorpusDir, framesDir, stderrDir, "prompts"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(filepath.Join(dir, PrivateDir), 0o700); err != nil {
		return nil, err
	}
	w := &Written{Dir: dir}
	var errs []error
	var log []LogServer
	for _, s := range servers {
		framesRel := "../" + framesName(s.Pseudonym)
		if err := s.Build(&o, framesRel); err != nil {
			errs = append(errs, err)
		}
		entry := LogServer{
			Label: s.Target.Label, Pseudonym: s.Pseudonym, Transport: s.Target.Transport(),
			Command: s.Target.Command, URL: s.Target.URL, Name: s.Name, Version: s.Version,
			ProtocolVersion: s.ProtocolVersion, SDK: s.SDK, View: s.View, Calls: s.Calls, Exit: s.Exit, Coercing: s.Coercing, Notes: s.Notes,
			Redacted: nonEmpty(s.Redacted), Flagged: nonEmpty(s.Flagged),
		}
		if s.Err != nil {
			entry.Error = s.Err.Error()
		}
		for _, t := range s.Tools {
			entry.Tools = append(entry.Tools, LogTool{t.Name, s.ToolPseudonyms[t.Name], t.ReadOnly, t.Basis})
		}
		for _, out := range s.Outcomes {
			entry.Probes = append(entry.Probes, LogProbe{out.Kind, out.Tool, out.Field, out.Status, out.RequestID, out.Wire, out.Surface, out.Note})
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
		data, err := json.MarshalIndent(s.Scenarios, "", "  ")
		if err != nil {
			return nil, err
		}
		name := CorpusDir + "/" + s.Pseudonym + ".json"
		if err := os.WriteFile(filepath.Join(dir, name), append(data, '\n'), 0o644); err != nil {
			return nil, err
		}
		w.Files = append(w.Files, name)
		w.Servers++
		w.Scenarios += len(s.Scenarios)
	}
	data, err := json.MarshalIndent(map[string]any{"servers": log}, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, LogFile), append(data, '\n'), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, readmeFile), []byte(privateReadme), 0o600); err != nil {
		return nil, err
	}
	if err := manifests.WriteBaselines(filepath.Join(dir, ManifestFile), "capture", manifestHeader, CorpusDir, 1, 20260819); err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return w, errors.Join(errs...)
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

// SortedKinds lists a count map as "kind n, kind n" in key order.
func SortedKinds(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
