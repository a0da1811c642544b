package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
// place, so an error leaves nothing half-written. path must not exist (an
// empty directory is replaced).
func WriteCorpus(path string, scenarios []Scenario) error {
	data, err := EncodeScenarios(scenarios)
	if err != nil {
		return err
	}
	if _, errs := ParseScenarios(path, data); len(errs) > 0 {
		return fmt.Errorf("refusing to write an invalid corpus: %w", errors.Join(errs...))
	}
	if err := vacant(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if strings.HasSuffix(path, ".json") {
		return WriteFileAtomic(path, data)
	}
	byServer := map[string][]Scenario{}
	for _, s := range scenarios {
		byServer[s.Server] = append(byServer[s.Server], s)
	}
	servers := make([]string, 0, len(byServer))
	for k := range byServer {
		servers = append(servers, k)
	}
	sort.Strings(servers)
	tmp, err := os.MkdirTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	for _, srv := range servers {
		data, err := EncodeScenarios(byServer[srv])
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, srv+".json"), data, 0o644)
		}
		if err != nil {
			os.RemoveAll(tmp)
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	os.Remove(path) // an empty directory (vacant checked it)
	if err := os.Rename(tmp, path); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return nil
}

// vacant reports an error unless path does not exist or is an empty
// directory.
func vacant(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists; choose another output", path)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("output directory %s is not empty; choose another output", path)
	}
	return nil
}

// WriteFileAtomic writes data to path through a temporary sibling renamed
// into place, so that path holds all of data or is left as it was.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
