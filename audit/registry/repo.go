package registry

import (
	"errors"
	"strings"
)

// ErrNotGitHub is the error of a repository URL on another host than
// github.com.
var ErrNotGitHub = errors.New("not a GitHub repository")

// NormalizeGitHub returns the canonical name of the GitHub repository a
// URL points to, "github.com/owner/name", lower-cased (GitHub's owner and
// repository names are case-insensitive). It accepts the forms registry
// records use: any scheme (https, http, git, ssh, git+https) or none,
// git@github.com:owner/name, a "www." host, a ".git" suffix, a trailing
// slash, a query or fragment, and deeper paths (/tree/main/src/x), which
// name the same repository. A URL on another host is ErrNotGitHub; a
// github.com URL without an owner and a name, or with characters GitHub
// does not allow in them, is another error.
func NormalizeGitHub(url string) (string, error) {
	u := strings.TrimSpace(url)
	if u == "" {
		return "", errors.New("empty repository URL")
	}
	u = strings.TrimPrefix(u, "git+")
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	} else if rest, ok := strings.CutPrefix(strings.ToLower(u), "git@github.com:"); ok {
		u = "github.com/" + u[len(u)-len(rest):]
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	host, path, _ := strings.Cut(u, "/")
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:] // user info
	}
	host = strings.ToLower(host)
	if h, port, ok := strings.Cut(host, ":"); ok && port != "" {
		host = h
	}
	host = strings.TrimPrefix(host, "www.")
	if host != "github.com" {
		return "", ErrNotGitHub
	}
	var parts []string
	for _, p := range strings.Split(path, "/") {
		if p != "" {
			parts = append(parts, p)
		}
		if len(parts) == 2 {
			break
		}
	}
	if len(parts) < 2 {
		return "", errors.New("a github.com URL without an owner and a repository name")
	}
	owner := strings.ToLower(parts[0])
	name := strings.ToLower(strings.TrimSuffix(parts[1], ".git"))
	if !validName(owner, false) || !validName(name, true) {
		return "", errors.New("not a GitHub owner/repository name")
	}
	return "github.com/" + owner + "/" + name, nil
}

// validName reports whether s is a possible GitHub owner (letters, digits,
// hyphens, underscores) or, with repo, repository name (also '.', not "."
// or "..").
func validName(s string, repo bool) bool {
	if s == "" || len(s) > 100 || (repo && (s == "." || s == "..")) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		case repo && c == '.':
		default:
			return false
		}
	}
	return true
}
