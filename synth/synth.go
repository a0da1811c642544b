// Package synth writes synthetic studies for scale tests and benchmarks:
// a corpus of any size whose records are clones of the paper corpus'
// records (every shape the loader accepts: observation, envelope, profile
// coding with evidence pointers) under new ids and server pseudonyms, the
// default prompt template, and a manifest running the offline baselines.
package synth

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/manifests"
)

// Options says what to generate.
type Options struct {
	Scenarios  int    // scenario records, 1 to 10,000,000
	Servers    int    // server pseudonyms, 1 to Scenarios
	Replicates int    // replicates in the manifest (default 1)
	Seed       uint64 // picks the template of each record and the study seed
}

// maxScenarios is the largest corpus Write generates.
const maxScenarios = 10_000_000

// Check reports the first invalid option, naming it as a flag.
func (o Options) Check() error {
	switch {
	case o.Scenarios < 1 || o.Scenarios > maxScenarios:
		return fmt.Errorf("-scenarios: want 1 to %d, got %d", maxScenarios, o.Scenarios)
	case o.Servers < 1 || o.Servers > o.Scenarios:
		return fmt.Errorf("-servers: want 1 to the number of scenarios (%d), got %d", o.Scenarios, o.Servers)
	case o.Replicates < 0 || o.Replicates > 100000:
		return fmt.Errorf("-replicates: want 1 to 100000, got %d", o.Replicates)
	}
	return nil
}

// ManifestFile is the manifest Write creates in its directory.
const ManifestFile = "manifest.yaml"

var versions = []string{"2025-03-26", "2025-06-18", "2025-11-25"}

// Write generates a study into the directory final (which must not exist
// or be empty): corpus/<server>.json, prompts/default.tmpl and
// manifest.yaml, whose 3 baselines x 4 conditions x Scenarios x Replicates
// decisions run offline. Scenario i (ids X0000001…) goes to server i mod
// Servers (ids Q00001…) and clones a paper record chosen by the seeded
// generator. The study is written under a temporary name and renamed into
// place (internal/outdir); a cancelled ctx stops it between servers and
// leaves nothing.
func Write(ctx context.Context, final string, opt Options) error {
	if opt.Replicates == 0 {
		opt.Replicates = 1
	}
	if err := opt.Check(); err != nil {
		return err
	}
	templates, err := paperRecords()
	if err != nil {
		return err
	}
	out, err := outdir.Create(final, nil)
	if err != nil {
		return err
	}
	defer out.Abort()
	dir := out.Path()
	if err := os.MkdirAll(filepath.Join(dir, "corpus"), 0o755); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x5e7a))
	// Scenario i belongs to server i mod Servers; write one server at a
	// time, streaming its records.
	pick := make([]uint8, opt.Scenarios)
	for i := range pick {
		pick[i] = uint8(rng.IntN(len(templates)))
	}
	for s := 0; s < opt.Servers; s++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		server := fmt.Sprintf("Q%05d", s+1)
		if err := writeServer(filepath.Join(dir, "corpus", server+".json"), server, s, opt, templates, pick); err != nil {
			return err
		}
	}
	header := fmt.Sprintf("Synthetic study written by stress synth: %d scenarios from %d servers,\n3 baselines x 4 conditions x %d replicates = %d decisions, offline.",
		opt.Scenarios, opt.Servers, opt.Replicates, 12*opt.Scenarios*opt.Replicates)
	if err := manifests.WriteBaselines(filepath.Join(dir, ManifestFile), "synth", header, "corpus", opt.Replicates, opt.Seed); err != nil {
		return err
	}
	return out.Commit()
}

func writeServer(file, server string, s int, opt Options, templates []map[string]json.RawMessage, pick []uint8) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("[")
	first := true
	for i := s; i < opt.Scenarios; i += opt.Servers {
		rec := templates[pick[i]]
		out := make(map[string]json.RawMessage, len(rec))
		for k, v := range rec {
			out[k] = v
		}
		out["id"], _ = json.Marshal(fmt.Sprintf("X%07d", i+1))
		out["server"], _ = json.Marshal(server)
		out["protocol_version"], _ = json.Marshal(versions[s%len(versions)])
		b, err := json.Marshal(out)
		if err != nil {
			f.Close()
			return err
		}
		if !first {
			w.WriteString(",")
		}
		first = false
		w.WriteString("\n")
		w.Write(b)
	}
	w.WriteString("\n]\n")
	return errors.Join(w.Flush(), f.Close())
}

// paperRecords reads the shipped paper corpus' records, sorted by id.
func paperRecords() ([]map[string]json.RawMessage, error) {
	files, err := fs.Glob(manifests.Builtin, path.Join("corpus", "paper", "*.json"))
	if err != nil {
		return nil, err
	}
	var recs []map[string]json.RawMessage
	for _, f := range files {
		b, err := fs.ReadFile(manifests.Builtin, f)
		if err != nil {
			return nil, err
		}
		var rs []map[string]json.RawMessage
		if err := json.Unmarshal(b, &rs); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		recs = append(recs, rs...)
	}
	if len(recs) == 0 {
		return nil, errors.New("the built-in paper corpus is empty")
	}
	sort.Slice(recs, func(i, j int) bool { return strings.Compare(string(recs[i]["id"]), string(recs[j]["id"])) < 0 })
	return recs, nil
}
