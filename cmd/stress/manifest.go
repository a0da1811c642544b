package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
)

// loadManifest reads the manifest at path, the built-in one path names as
// builtin:NAME (a copy of manifests/NAME), or the built-in default when
// path is "".
func loadManifest(path string, opts ...manifests.Option) (*manifests.Resolved, error) {
	if path == "" {
		return manifests.LoadBuiltin(manifests.DefaultName, opts...)
	}
	if name, ok := strings.CutPrefix(path, "builtin:"); ok {
		return manifests.LoadBuiltin(name, opts...)
	}
	return manifests.Load(path, opts...)
}

// loadRecorded loads the manifest a bundle records: by its absolute path
// when that file exists (so a resume works from any directory), else by
// the path as it was given, relative to the current directory.
func loadRecorded(rec *results.Record, opts ...manifests.Option) (*manifests.Resolved, error) {
	if rec.SourceAbs != "" {
		if _, err := os.Stat(rec.SourceAbs); err == nil {
			return loadManifest(rec.SourceAbs, opts...)
		}
	}
	m, err := loadManifest(rec.Source, opts...)
	if err != nil && rec.SourceAbs != "" {
		return nil, fmt.Errorf("%w (nor is it at %s)", err, rec.SourceAbs)
	}
	return m, err
}
