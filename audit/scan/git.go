package scan

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpstress/stress/audit/registry"
	"github.com/mcpstress/stress/internal/input"
)

// gitDirs returns the git directory of the checkout at root (.git, or
// where a .git file points, for worktrees and submodules) and its common
// directory (where refs and config live), "" when root has none.
func gitDirs(root string) (gitDir, common string) {
	p := filepath.Join(root, ".git")
	fi, err := os.Stat(p)
	if err != nil {
		return "", ""
	}
	gitDir = p
	if !fi.IsDir() {
		b, err := input.ReadFile(p, input.GitMeta)
		if err != nil {
			return "", ""
		}
		rest, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
		if !ok {
			return "", ""
		}
		gitDir = strings.TrimSpace(rest)
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(root, gitDir)
		}
	}
	common = gitDir
	if b, err := input.ReadFile(filepath.Join(gitDir, "commondir"), input.GitMeta); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = c
	}
	return gitDir, common
}

// commit returns the commit checked out at root, read from its .git
// (HEAD, the ref it names, loose or packed), "" when root is not a git
// checkout. It runs no git command.
func commit(root string) (string, error) {
	gitDir, common := gitDirs(root)
	if gitDir == "" {
		return "", nil
	}
	head, err := input.ReadFile(filepath.Join(gitDir, "HEAD"), input.GitMeta)
	if err != nil {
		return "", err
	}
	h := strings.TrimSpace(string(head))
	ref, isRef := strings.CutPrefix(h, "ref:")
	if !isRef {
		return checkHash(h)
	}
	ref = strings.TrimSpace(ref)
	for _, dir := range []string{gitDir, common} {
		if b, err := input.ReadFile(filepath.Join(dir, filepath.FromSlash(ref)), input.GitMeta); err == nil {
			return checkHash(strings.TrimSpace(string(b)))
		}
	}
	packed, err := input.ReadFile(filepath.Join(common, "packed-refs"), input.GitMeta)
	if err == nil {
		sc := bufio.NewScanner(bytes.NewReader(packed))
		for sc.Scan() {
			hash, name, ok := strings.Cut(sc.Text(), " ")
			if ok && name == ref {
				return checkHash(hash)
			}
		}
	}
	return "", errors.New("HEAD names " + ref + ", which has no commit yet")
}

func checkHash(h string) (string, error) {
	if len(h) != 40 && len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", errors.New("HEAD holds no commit hash")
	}
	return h, nil
}

// Origin returns the canonical GitHub name (github.com/owner/name) of
// the checkout's "origin" remote, "" when it has none or it is not on
// GitHub.
func Origin(root string) string {
	_, common := gitDirs(root)
	if common == "" {
		return ""
	}
	f, err := input.Open(filepath.Join(common, "config"), input.GitMeta)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			in = line == `[remote "origin"]`
			continue
		}
		if k, v, ok := strings.Cut(line, "="); in && ok && strings.TrimSpace(k) == "url" {
			repo, err := registry.NormalizeGitHub(strings.TrimSpace(v))
			if err != nil {
				return ""
			}
			return repo
		}
	}
	return ""
}
