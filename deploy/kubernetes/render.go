// Package kubernetes holds the Kubernetes manifests that run a study's
// shards as an Indexed Job (shards.yaml) and merge their bundles
// (merge.yaml), and renders them for a study. The manifests are
// templates with placeholders such as __STUDY__, which sed fills as
// well as Render (docs/long-runs.md, "On Kubernetes (an Indexed Job)").
package kubernetes

import (
	_ "embed"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Shards is shards.yaml: the shared volume of the bundles and the
// Indexed Job of the shards.
//
//go:embed shards.yaml
var Shards string

// Merge is merge.yaml: the Job that merges the shards' bundles.
//
//go:embed merge.yaml
var Merge string

// Study is what fills a template's placeholders.
type Study struct {
	Name         string // __STUDY__: lowercase letters, digits and '-'
	Manifest     string // __MANIFEST__: the manifest's file name in the ConfigMap
	Shards       int    // __SHARDS__: the number of shards
	Image        string // __IMAGE__: an image with stress on its PATH
	StorageClass string // __STORAGE_CLASS__: a class of ReadWriteMany volumes
}

var (
	placeholder = regexp.MustCompile(`__[A-Z_]+__`)
	label       = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// Render fills the placeholders of tmpl (Shards or Merge) for s. It
// refuses a study whose name is not a DNS label short enough for the
// Jobs' names and pod host names, and a template with a placeholder it
// does not know.
func Render(tmpl string, s Study) (string, error) {
	// The longest name: the pod host name stress-NAME-shards-INDEX.
	if !label.MatchString(s.Name) || len("stress-"+s.Name+"-shards-"+strconv.Itoa(s.Shards-1)) > 63 {
		return "", fmt.Errorf("study name %q: want lowercase letters, digits and '-', short enough for the Jobs' names (63 characters)", s.Name)
	}
	if s.Shards < 1 || s.Manifest == "" || strings.Contains(s.Manifest, "/") || s.Image == "" || s.StorageClass == "" {
		return "", fmt.Errorf("study %+v: want a manifest file name, at least one shard, an image and a storage class", s)
	}
	out := strings.NewReplacer(
		"__STUDY__", s.Name,
		"__MANIFEST__", s.Manifest,
		"__SHARDS__", strconv.Itoa(s.Shards),
		"__IMAGE__", s.Image,
		"__STORAGE_CLASS__", s.StorageClass,
	).Replace(tmpl)
	if p := placeholder.FindString(out); p != "" {
		return "", fmt.Errorf("placeholder %s is left", p)
	}
	return out, nil
}
