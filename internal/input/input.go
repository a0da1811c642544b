// Package input prepares user-supplied files and text for the packages
// that read them: Decode turns file bytes into UTF-8 text (dropping a
// byte-order mark, refusing UTF-16 and UTF-32); Quote and Snippet make the
// bounded, printable excerpts of that input an error message may show;
// WithPath names a file in an error as the user wrote it.
package input

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxQuote is the most bytes Quote shows of a value (escapes included);
// the rest is summarized as "… (N more bytes)".
const MaxQuote = 200

// maxLine and maxSnippet bound Snippet: each line shows at most maxLine
// bytes, and the whole at most maxSnippet (escapes and line breaks
// included), then "…".
const (
	maxLine    = 160
	maxSnippet = 800
)

// Quote returns s double-quoted for an error message, like strconv.Quote
// (control characters, invalid UTF-8 and non-printable runes escaped), but
// cut after MaxQuote bytes with the length of the rest: a 50 MB value
// stays a short line.
func Quote(s string) string {
	q, rest := escape(s, true, MaxQuote)
	return `"` + q + `"` + more(rest)
}

// Snippet returns free text that quotes user input (a decoder's message
// with the offending source lines, say) for an error message: escaped as
// Quote does but unquoted, with its line breaks kept, each line cut after
// 160 bytes and the whole after 800 bytes.
func Snippet(s string) string {
	var b strings.Builder
	for {
		budget := min(maxLine, maxSnippet-b.Len())
		if budget <= 0 {
			b.WriteString("…")
			break
		}
		line, rest, found := strings.Cut(s, "\n")
		q, left := escape(line, false, budget)
		b.WriteString(q + more(left))
		if !found {
			break
		}
		b.WriteByte('\n')
		s = rest
	}
	return b.String()
}

func more(rest int) string {
	if rest == 0 {
		return ""
	}
	return fmt.Sprintf("… (%d more bytes)", rest)
}

// escape returns the printable form of s up to limit bytes and the number
// of bytes of s it leaves out. Invalid UTF-8 bytes become \xNN,
// other non-printable runes their Go escape; with quote, `"` and `\` are
// escaped too.
func escape(s string, quote bool, limit int) (string, int) {
	var b strings.Builder
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		var e string
		switch {
		case r == utf8.RuneError && size == 1:
			e = fmt.Sprintf(`\x%02x`, s[i])
		case quote && (r == '"' || r == '\\'):
			e = `\` + string(r)
		case unicode.IsPrint(r):
			e = s[i : i+size]
		default:
			q := strconv.QuoteRune(r)
			e = q[1 : len(q)-1]
		}
		if b.Len()+len(e) > limit {
			break
		}
		b.WriteString(e)
		i += size
	}
	return b.String(), len(s) - i
}

// Printable reports whether s is valid UTF-8 made of printable runes and
// line breaks only, as every Quote and Snippet is.
func Printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r != '\n' && !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
