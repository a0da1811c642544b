package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/results"
)

// parserSensitivity re-scores the bundle in dir with the lenient parser
// (a second pass over calls.jsonl; the primary counts are untouched).
func parserSensitivity(dir string, replayCap int) (*analysis.ParserSensitivity, error) {
	name := filepath.Join(dir, results.CallsFile)
	f, err := input.OpenStream(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return analysis.Sensitivity(f, name, replayCap)
}

// writeJSONWith writes the JSON object write produces with, when ps is
// not nil, a last member "parser_sensitivity" (indented alike).
func writeJSONWith(w io.Writer, ps *analysis.ParserSensitivity, write func(io.Writer) error) error {
	if ps == nil {
		return write(w)
	}
	var doc bytes.Buffer
	if err := write(&doc); err != nil {
		return err
	}
	member, err := json.MarshalIndent(ps, "  ", "  ")
	if err != nil {
		return err
	}
	b := bytes.TrimRight(doc.Bytes(), "\n")
	if !bytes.HasSuffix(b, []byte("}")) {
		return fmt.Errorf("analyze: JSON output is not an object")
	}
	b = bytes.TrimRight(b[:len(b)-1], " \n")
	sep := ","
	if bytes.HasSuffix(b, []byte("{")) {
		sep = ""
	}
	_, err = fmt.Fprintf(w, "%s%s\n  \"parser_sensitivity\": %s\n}\n", b, sep, member)
	return err
}
