// Package findup finds a directory of the repository (scripts/ts-clients,
// the reference MCP servers' packages) from a directory inside it, the way
// git finds .git: in that directory, then in each of its parents.
package findup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Place is one candidate directory Find looked at, and why it would not
// do ("" for the one found).
type Place struct {
	Dir string
	Why string
}

// Find looks for rel (a slash-separated relative path) under each start
// directory and each of its parents, nearest first, starts in order, and
// returns the first candidate for which check returns "" (check says why
// a candidate would not do). It returns every place it looked, in order,
// each once, the one found last; found is "" when none would do. A
// relative start is taken from the working directory.
func Find(rel string, check func(dir string) (why string), starts ...string) (found string, looked []Place) {
	seen := map[string]bool{}
	for _, start := range starts {
		dir, err := filepath.Abs(start)
		if err != nil {
			continue
		}
		for {
			cand := filepath.Join(dir, filepath.FromSlash(rel))
			if !seen[cand] {
				seen[cand] = true
				why := check(cand)
				looked = append(looked, Place{Dir: cand, Why: why})
				if why == "" {
					return cand, looked
				}
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", looked
}

// HasFiles returns a check for Find that wants each of files (relative to
// the candidate) to exist: it says the candidate does not exist, or which
// file it lacks.
func HasFiles(files ...string) func(dir string) string {
	return func(dir string) string {
		if _, err := os.Stat(dir); err != nil {
			return "does not exist"
		}
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); err != nil {
				return "has no " + f
			}
		}
		return ""
	}
}

// Looked formats the places Find looked at, one per line, each indented
// by two spaces with why it would not do.
func Looked(places []Place) string {
	var b strings.Builder
	for i, p := range places {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "  %s: %s", p.Dir, p.Why)
	}
	return b.String()
}
