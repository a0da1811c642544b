package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpstress/stress/internal/outdir"
)

// EncodeScenarios encodes records as a corpus file: a JSON array indented
// by two spaces, as the paper corpus is written, with a final newline.
func EncodeScenarios(scenarios []Scenario) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if scenarios == nil {
		scenarios = []Scenario{}
	}
	if err := enc.Encode(scenarios); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteCorpus writes records as a corpus at path: one file when path ends
// in .json, else a directory holding one <server>.json per server (as the
// paper corpus). The records are checked as LoadCorpus checks them first,
// and the corpus is written into a temporary sibling and renamed into
// place (internal/outdir), so an error leaves nothing half-written. path
// must not exist (an empty directory is replaced).
func WriteCorpus(path string, scenarios []Scenario) error {
	data, err := EncodeScenarios(scenarios)
	if err != nil {
		return err
	}
	if _, errs := ParseScenarios(path, data); len(errs) > 0 {
		return fmt.Errorf("refusing to write an invalid corpus: %w", errors.Join(errs...))
	}
	if strings.HasSuffix(path, ".json") {
		return outdir.WriteFile(path, data)
	}
	byServer := map[string][]Scenario{}
	for _, s := range scenarios {
		byServer[s.Server] = append(byServer[s.Server], s)
	}
	servers := slices.Sorted(maps.Keys(byServer))
	out, err := outdir.Create(path, nil)
	if err != nil {
		return err
	}
	defer out.Abort()
	for _, srv := range servers {
		data, err := EncodeScenarios(byServer[srv])
		if err == nil {
			err = os.WriteFile(filepath.Join(out.Path(), srv+".json"), data, 0o644)
		}
		if err != nil {
			return err
		}
	}
	return out.Commit()
}
