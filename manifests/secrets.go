package manifests

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/mcpstress/stress/internal/input"
)

// credentialWords are the parts of a query parameter's name that mark it
// as a credential (token, access_token, api_key, X-Amz-Signature, …).
var credentialWords = []string{"token", "key", "secret", "pass", "pwd", "auth", "sig", "cred", "session", "jwt", "bearer", "cookie"}

// tokenLike is a value shaped like a generated secret: 20 or more
// characters of letters, digits and - _ . ~ + / = with at least one letter
// and one digit (sk-…, ghp_…, a JWT, a hex or base64 token).
var tokenLike = regexp.MustCompile(`^[A-Za-z0-9\-_.~+/=]{20,}$`)

// credentialIn says why the URL raw looks like it carries a credential,
// or "" when it does not: a password (user:password@; a user name alone
// is fine), a fragment (never
// sent over HTTP, so its only use is a token pasted from a browser), a
// query parameter whose name is a credential word, or one whose value is
// shaped like a generated secret. A URL without a scheme (an Ollama host
// such as localhost:11434) is read as http. Every URL a manifest names is
// checked: a manifest is stored whole in every bundle it runs.
func credentialIn(raw string) string {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	switch {
	case hasPassword(u):
		return "the URL carries a password (user:password@)"
	case u.Fragment != "" || strings.HasSuffix(raw, "#"):
		return "the URL has a fragment (#…), which an HTTP request never sends; a token there would only be stored"
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "the URL's query does not parse; it is refused rather than stored unread"
	}
	for name, values := range q {
		lower := strings.ToLower(name)
		for _, w := range credentialWords {
			if strings.Contains(lower, w) {
				return "query parameter " + input.Quote(name) + " looks like a credential"
			}
		}
		for _, v := range values {
			if tokenLike.MatchString(v) && strings.ContainsAny(v, "0123456789") && strings.IndexFunc(v, isLetter) >= 0 {
				return "query parameter " + input.Quote(name) + " has a value shaped like a token"
			}
		}
	}
	return ""
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

func hasPassword(u *url.URL) bool {
	if u.User == nil {
		return false
	}
	_, set := u.User.Password()
	return set
}
