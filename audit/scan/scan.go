// Package scan is the paper's deliberately narrow lexical scanner
// (section IV-A): it finds where repositories construct MCP tool-error
// results, in TypeScript, JavaScript, Python, Go, Rust, Java, Kotlin and
// C#. A match is a construct that sets isError, is_error
// or IsError to the literal true (in an object, dict, struct or composite
// literal, a named argument, an initializer, an assignment or an index
// assignment), or a call of an SDK helper that builds an error result in
// a file that imports that SDK; a call of a same-named function that does
// not resolve to the SDK is a repository's own wrapper, whose definition
// is the match, and its call sites are listed apart (Result.WrapperCalls).
// It reads tokens, not text: a key in a comment, a string, a regexp or a
// TypeScript type does not match, nor does isError: false, isError: cond
// or a Python case clause's pattern. Dependencies and build output are not
// entered; every other path is classed (Class) and only
// production matches are adjudicated. It depends on nothing else of
// stress but registry (for GitHub names) and internal helpers; `stress
// scan` wires it.
package scan

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// DefaultMaxFileSize is the largest source file read by default: 16 MiB.
const DefaultMaxFileSize = 16 << 20

// Options are the scanner's tunables; zero fields take the defaults.
type Options struct {
	// IncludeBuild enters build output directories (dist, build, …) and
	// classes their files Build, never Production: published packages
	// ship only their build output.
	IncludeBuild bool
	// MaxFileSize is the largest file read, in bytes (default
	// DefaultMaxFileSize); larger files are skipped and reported.
	MaxFileSize int64
	// Workers is how many files are read at once (default GOMAXPROCS).
	Workers int
}

// Repo is a directory to scan and the name it goes by in the outputs.
type Repo struct {
	// Name is the repository's name: github.com/owner/name, or any label.
	Name string
	// Dir is the checkout's directory.
	Dir string
	// FS reads the checkout, os.DirFS(Dir) when nil. Its ReadDir must
	// report symbolic links as such (os.DirFS does), for they are not
	// followed.
	FS fs.FS
}

// Candidate is one match: where it is and what it is.
type Candidate struct {
	// ID identifies the match: "c" and the first 12 hex digits of
	// sha256(repository 0x00 file 0x00 line 0x00 column 0x00 key).
	ID         string `json:"id"`
	Repository string `json:"repository"`
	// Commit is the commit checked out, "" when the directory is not a
	// git checkout.
	Commit string `json:"commit,omitempty"`
	// File is slash-separated, relative to the repository.
	File string `json:"file"`
	// Line is 1-based; Column counts Unicode code points from 1.
	Line     int      `json:"line"`
	Column   int      `json:"column"`
	Language Language `json:"language"`
	Class    Class    `json:"class"`
	// Construct is how the match sets the flag (property,
	// named_argument, initializer, assignment, index_assignment,
	// helper, builder); Key the flag or helper it sets or
	// calls; Match the construct written out (isError: true).
	Construct string `json:"construct"`
	Key       string `json:"key"`
	Match     string `json:"match"`
	// Function is the enclosing function where the scanner can tell
	// cheaply, "" otherwise.
	Function string `json:"function,omitempty"`
	// Text is the source line (at most 240 bytes around the match).
	Text string `json:"text"`
	// LineSHA256 and ContextSHA256 hash the line and its context (see
	// Projection); they stand for the text in the projection.
	LineSHA256    string `json:"line_sha256"`
	ContextSHA256 string `json:"context_sha256"`
}

// maxText bounds Candidate.Text, in bytes.
const maxText = 240

// Skip is a path the scanner did not read.
type Skip struct {
	Repository string `json:"repository"`
	// Path is slash-separated, relative to the repository ("" for the
	// repository itself).
	Path string `json:"path"`
	// Reason says why: "symbolic link (not followed)", "binary", "too
	// large (N bytes)", "unreadable: …".
	Reason string `json:"reason"`
	// Failed says the skip leaves the scan incomplete (an unreadable file
	// or directory), not that the rules excluded the path.
	Failed bool `json:"failed"`
}

// RepoResult is what the scan found of one repository.
type RepoResult struct {
	Name   string `json:"name"`
	Commit string `json:"commit,omitempty"`
	// Files and Bytes count the source files read.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Count is the number of files (or matches) of a class and language.
type Count struct {
	Class    Class    `json:"class"`
	Language Language `json:"language"`
	N        int      `json:"n"`
}

// Result is a scan's findings, in a deterministic order.
type Result struct {
	Repos []RepoResult
	// Candidates are the matches, sorted by repository (in the order
	// given), file, line and column.
	Candidates []Candidate
	// WrapperCalls are the calls of functions named like SDK helpers that
	// do not resolve to the SDK (construct WrapperCall: a repository's
	// own wrapper, whose definition is the match), in the same order.
	// They are listed apart: not matches, never in the ledger.
	WrapperCalls []Candidate
	// Skipped are sorted by repository and path.
	Skipped []Skip
	// ExcludedDirs counts the directories not entered (dependencies,
	// build output).
	ExcludedDirs int
	// Files counts the source files read by class and language; Bytes
	// their bytes.
	Files []Count
	Bytes int64
}

// Failed counts the skips that leave the scan incomplete.
func (r *Result) Failed() int {
	n := 0
	for _, s := range r.Skipped {
		if s.Failed {
			n++
		}
	}
	return n
}

// job is one source file to read.
type job struct {
	repo       int
	rel        string // slash-separated, relative to the repository
	lang       Language
	underBuild bool
}

// fileResult is what one file gave.
type fileResult struct {
	repo  int
	rel   string
	class Class
	lang  Language
	bytes int64
	cands []Candidate
	// wrappers are the file's wrapper calls (WrapperCall).
	wrappers []Candidate
	skip     *Skip
}

// Scan scans the repositories and returns its findings. Unreadable files
// and directories, binary and oversized files and symbolic links (never
// followed, so a link loop is harmless) are skipped and listed; the rest
// of the scan goes on. It stops early only when ctx is cancelled.
func Scan(ctx context.Context, repos []Repo, opt Options) (*Result, error) {
	repos = slices.Clone(repos)
	if opt.MaxFileSize <= 0 {
		opt.MaxFileSize = DefaultMaxFileSize
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	res := &Result{Repos: make([]RepoResult, len(repos))}
	for i := range repos {
		r := &repos[i]
		if r.FS == nil {
			r.FS = os.DirFS(r.Dir)
		}
		res.Repos[i].Name = r.Name
		if r.Dir == "" {
			continue
		}
		c, err := commit(r.Dir)
		if err != nil {
			res.Skipped = append(res.Skipped, Skip{Repository: r.Name, Path: ".git", Reason: "no commit: " + err.Error()})
		}
		res.Repos[i].Commit = c
	}
	jobs := make(chan job, 256)
	results := make(chan fileResult, 256)
	var wg sync.WaitGroup
	for range opt.Workers {
		wg.Go(func() {
			w := worker{opt: opt}
			for j := range jobs {
				if ctx.Err() != nil {
					continue // drain the queue: the walk stops too
				}
				results <- w.file(repos[j.repo].FS, j, repos[j.repo].Name, res.Repos[j.repo].Commit)
			}
		})
	}
	var walkErr error
	go func() {
		defer close(jobs)
		for i, r := range repos {
			if err := walk(ctx, i, r, opt, jobs, results); err != nil {
				walkErr = err
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	files := map[Count]int{}
	var found []fileResult // the files with matches
	for fr := range results {
		if fr.skip != nil {
			if fr.skip.Reason == excludedDir {
				res.ExcludedDirs++
				continue
			}
			res.Skipped = append(res.Skipped, *fr.skip)
			continue
		}
		files[Count{Class: fr.class, Language: fr.lang}]++
		res.Bytes += fr.bytes
		res.Repos[fr.repo].Files++
		res.Repos[fr.repo].Bytes += fr.bytes
		if len(fr.cands) > 0 || len(fr.wrappers) > 0 {
			found = append(found, fr)
		}
	}
	if walkErr != nil {
		return nil, walkErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Files = tabulate(files)
	// A file's matches are in the order of its tokens: order the files.
	slices.SortFunc(found, func(a, b fileResult) int { return cmp.Or(a.repo-b.repo, strings.Compare(a.rel, b.rel)) })
	n := 0
	for _, fr := range found {
		n += len(fr.cands)
	}
	res.Candidates = make([]Candidate, 0, n)
	for _, fr := range found {
		res.Candidates = append(res.Candidates, fr.cands...)
		res.WrapperCalls = append(res.WrapperCalls, fr.wrappers...)
	}
	order := map[string]int{}
	for i, r := range repos {
		order[r.Name] = i
	}
	slices.SortStableFunc(res.Skipped, func(a, b Skip) int {
		return cmp.Or(order[a.Repository]-order[b.Repository], strings.Compare(a.Path, b.Path))
	})
	return res, nil
}

// excludedDir is the reason of a directory skipDir excludes (counted, not
// listed).
const excludedDir = "excluded"

// walk sends the source files of r to jobs and its skips to results.
func walk(ctx context.Context, i int, r Repo, opt Options, jobs chan<- job, results chan<- fileResult) error {
	skip := func(p, reason string, failed bool) {
		results <- fileResult{repo: i, skip: &Skip{Repository: r.Name, Path: p, Reason: reason, Failed: failed}}
	}
	// buildRoots are the build directories the walk is in.
	var buildRoots []string
	return fs.WalkDir(r.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			skip(p, "unreadable: "+unwrapPath(err).Error(), true)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		for len(buildRoots) > 0 && !within(p, buildRoots[len(buildRoots)-1]) {
			buildRoots = buildRoots[:len(buildRoots)-1]
		}
		if d.Type()&fs.ModeSymlink != 0 {
			skip(p, "symbolic link (not followed)", false)
			return nil
		}
		if d.IsDir() {
			if p == "." {
				return nil
			}
			s, build := skipDir(d.Name(), opt.IncludeBuild)
			if s {
				results <- fileResult{repo: i, skip: &Skip{Reason: excludedDir}}
				return fs.SkipDir
			}
			if build {
				buildRoots = append(buildRoots, p)
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		lang := languageOf(d.Name())
		if lang == "" {
			return nil
		}
		jobs <- job{repo: i, rel: p, lang: lang, underBuild: len(buildRoots) > 0}
		return nil
	})
}

// within reports whether the slash-separated path p is dir or under it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// unwrapPath returns the cause of a *fs.PathError (its path is named
// separately), else err.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// worker reads and scans files, reusing its buffers.
type worker struct {
	opt  Options
	buf  []byte
	toks []token
}

// binaryBytes is how much of a file's start is searched for a NUL byte.
const binaryBytes = 8000

func (w *worker) file(fsys fs.FS, j job, repo, commit string) fileResult {
	fr := fileResult{repo: j.repo, rel: j.rel, lang: j.lang}
	skip := func(reason string, failed bool) fileResult {
		fr.skip = &Skip{Repository: repo, Path: j.rel, Reason: reason, Failed: failed}
		return fr
	}
	f, err := fsys.Open(j.rel)
	if err != nil {
		return skip("unreadable: "+unwrapPath(err).Error(), true)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return skip("unreadable: "+unwrapPath(err).Error(), true)
	}
	if fi.Size() > w.opt.MaxFileSize {
		return skip(fmt.Sprintf("too large (%d bytes; the limit is %d)", fi.Size(), w.opt.MaxFileSize), false)
	}
	if int64(cap(w.buf)) < fi.Size()+bytes.MinRead {
		w.buf = make([]byte, 0, fi.Size()+bytes.MinRead)
	}
	// Note: the buffer has room for the file and the read that finds its
	// end, so that reading it does not grow the buffer.
	b := bytes.NewBuffer(w.buf[:0])
	if _, err := b.ReadFrom(io.LimitReader(f, w.opt.MaxFileSize+1)); err != nil {
		return skip("unreadable: "+unwrapPath(err).Error(), true)
	}
	data := b.Bytes()
	w.buf = data
	if int64(len(data)) > w.opt.MaxFileSize {
		return skip(fmt.Sprintf("too large (over %d bytes)", w.opt.MaxFileSize), false)
	}
	if bytes.IndexByte(data[:min(len(data), binaryBytes)], 0) >= 0 {
		return skip("binary (a NUL byte in its first 8000 bytes)", false)
	}
	fr.bytes = int64(len(data))
	fr.class = classOf(j.rel, j.underBuild, data)
	if declarations(j.rel) || !prefilter(data) {
		return fr
	}
	w.toks = lex(data, syntaxes[j.lang], w.toks)
	hits := findMatches(data, w.toks, j.lang)
	fr.cands = make([]Candidate, 0, len(hits))
	var cur lineOf
	for _, h := range hits {
		c := candidate(data, w.toks[h.tok], h, repo, commit, j, fr.class, &cur)
		if h.construct == WrapperCall {
			fr.wrappers = append(fr.wrappers, c)
		} else {
			fr.cands = append(fr.cands, c)
		}
	}
	return fr
}

// contextLines is how many lines either side of the match the context
// hash covers.
const contextLines = 3

// lineOf is what the candidates of one line share: the line, its hashes
// and its context's, and the column of the last match, so that a file
// whose matches crowd one long line (a minified bundle) costs time linear
// in its size, not in matches × line length.
type lineOf struct {
	num        int32  // the line's number
	ls, le     int    // its start and end offsets
	line       []byte // without its newline and carriage return
	lineSHA    string
	contextSHA string
	at, col    int // an offset on the line and its column (1-based, in characters)
	valid      bool
}

// of returns the shared facts of the line of token t in data, computing
// them once per line.
func (c *lineOf) of(data []byte, t token) *lineOf {
	if c.valid && c.num == t.line {
		return c
	}
	ls := int(lineStart(data, t.s))
	*c = lineOf{num: t.line, ls: ls, at: ls, col: 1, valid: true}
	c.le = ls + bytes.IndexByte(data[ls:], '\n')
	if c.le < ls {
		c.le = len(data)
	}
	c.line = bytes.TrimSuffix(data[ls:c.le], []byte("\r"))
	c.lineSHA = sha(c.line)
	// The context: contextLines lines before and after.
	cs := ls
	for k := 0; k < contextLines && cs > 0; k++ {
		cs = bytes.LastIndexByte(data[:cs-1], '\n') + 1
	}
	ce := c.le
	for k := 0; k < contextLines && ce < len(data); k++ {
		n := bytes.IndexByte(data[ce+1:], '\n')
		if n < 0 {
			ce = len(data)
			break
		}
		ce += 1 + n
	}
	ctx := data[cs:ce]
	if bytes.IndexByte(ctx, '\r') >= 0 {
		ctx = bytes.ReplaceAll(ctx, []byte("\r\n"), []byte("\n"))
		if ce < len(data) {
			ctx = bytes.TrimSuffix(ctx, []byte("\r"))
		}
	}
	c.contextSHA = sha(ctx)
	return c
}

// column returns the 1-based column, in characters, of offset s on the
// line, counting on from the last offset asked when s is past it.
func (c *lineOf) column(data []byte, s int) int {
	if s < c.at {
		c.at, c.col = c.ls, 1
	}
	c.col += utf8.RuneCount(data[c.at:s])
	c.at = s
	return c.col
}

// candidate describes hit h at token t of file data; cur carries what
// the candidates of one line share.
func candidate(data []byte, t token, h hit, repo, commit string, j job, class Class, cur *lineOf) Candidate {
	l := cur.of(data, t)
	col := l.column(data, int(t.s))
	c := Candidate{
		Repository: repo, Commit: commit, File: j.rel, Line: int(t.line), Column: col,
		Language: j.lang, Class: class, Construct: h.construct, Key: h.key, Match: h.match,
		Function: h.function, Text: excerpt(l.line, int(t.s)-l.ls),
		LineSHA256: l.lineSHA, ContextSHA256: l.contextSHA,
	}
	c.ID = "c" + sha([]byte(repo + "\x00" + j.rel + "\x00" + strconv.Itoa(c.Line) + "\x00" + strconv.Itoa(col) + "\x00" + h.key))[:12]
	return c
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// excerpt returns line without its surrounding blanks, or, when longer
// than maxText, maxText bytes around offset at (the match), marked with
// "…" where cut.
func excerpt(line []byte, at int) string {
	t := bytes.TrimSpace(line)
	if len(t) <= maxText {
		return string(t)
	}
	s := max(0, at-maxText/3)
	e := min(len(line), s+maxText)
	for s > 0 && !utf8.RuneStart(line[s]) {
		s--
	}
	for e < len(line) && !utf8.RuneStart(line[e]) {
		e++
	}
	out := string(bytes.TrimSpace(line[s:e]))
	if s > 0 {
		out = "…" + out
	}
	if e < len(line) {
		out += "…"
	}
	return out
}
