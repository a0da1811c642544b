package coder

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/results"
)

// refuseV1 returns an error naming what to do when the bundle at dir is a
// coding bundle of an earlier version (its manifest.json says "kind":
// "coding": its own call lines, before codings ran through the runner),
// which this version neither continues nor reports again; nil for any
// other bundle (the results bundle's reader says what is wrong with it).
// Its coded corpora are of the current format and read as they are.
func refuseV1(dir string) error {
	b, err := input.ReadFile(filepath.Join(dir, results.ManifestFile), input.BundleJSON)
	if err != nil {
		return nil
	}
	var rec struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(b, &rec) != nil || rec.Kind != "coding" {
		return nil
	}
	return fmt.Errorf("resume %s: a coding bundle of an earlier version, which this version neither continues nor reports again: its coded corpora (%s) read as they are (stress agree); to code again, code into a new bundle",
		dir, filepath.Join(dir, codedDir))
}
