// Package lazyregexp is a regexp compiled on its first use, so that a
// package's patterns cost nothing at program start (every command of the
// one binary would otherwise compile every package's patterns; the
// patterns of capture and coding/rules took 2 ms of a one-decision run).
// It mirrors the Go tree's own internal/lazyregexp.
package lazyregexp

import (
	"regexp"
	"sync"
)

// Regexp is a regexp.Regexp compiled on first use; an invalid expression
// panics then, as regexp.MustCompile would at start.
type Regexp struct {
	compile func() *regexp.Regexp
}

// New returns the Regexp of expr.
func New(expr string) *Regexp {
	return &Regexp{compile: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })}
}

// Re returns the compiled regexp.
func (r *Regexp) Re() *regexp.Regexp { return r.compile() }

// MatchString is regexp.Regexp.MatchString.
func (r *Regexp) MatchString(s string) bool { return r.compile().MatchString(s) }

// FindString is regexp.Regexp.FindString.
func (r *Regexp) FindString(s string) string { return r.compile().FindString(s) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.compile().FindStringSubmatch(s) }

// FindAllStringIndex is regexp.Regexp.FindAllStringIndex.
func (r *Regexp) FindAllStringIndex(s string, n int) [][]int {
	return r.compile().FindAllStringIndex(s, n)
}

// FindAllStringSubmatchIndex is regexp.Regexp.FindAllStringSubmatchIndex.
func (r *Regexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return r.compile().FindAllStringSubmatchIndex(s, n)
}

// FindSubmatch is regexp.Regexp.FindSubmatch.
func (r *Regexp) FindSubmatch(b []byte) [][]byte { return r.compile().FindSubmatch(b) }
