package input

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	for _, s := range []string{"", "xml", `a "b" \c`, "tab\there\nnew", "\x00\x01\xff", "naïve ☃", "\u200b"} {
		t.Run(fmt.Sprintf("%q", s), func(t *testing.T) {
			if got, want := Quote(s), strconv.Quote(s); got != want {
				t.Errorf("Quote(%q) = %s, want %s as strconv.Quote", s, got, want)
			}
		})
	}
	long := strings.Repeat("x", 50<<20)
	q := Quote(long)
	if len(q) > MaxQuote+40 || !strings.HasSuffix(q, `"… (52428600 more bytes)`) {
		t.Errorf("Quote of 50 MiB: %d bytes, ends %q", len(q), q[max(0, len(q)-40):])
	}
	bin := string([]byte{0xff, 0x00, 0xfe, 0x1b})
	if q := Quote(strings.Repeat(bin, 1000)); len(q) > MaxQuote+40 || !Printable(q) {
		t.Errorf("Quote of binary: %d bytes, %q", len(q), q)
	}
	// A rune is never split.
	if q := Quote(strings.Repeat("☃", 100)); !utf8.ValidString(q) || !strings.Contains(q, "more bytes") {
		t.Errorf("Quote of snowmen: %q", q)
	}
}

func TestSnippet(t *testing.T) {
	msg := "[1:1] unknown field \"x\"\n>  1 | x: 1\n       ^"
	if got := Snippet(msg); got != msg {
		t.Errorf("Snippet changed printable text:\n%s", got)
	}
	junk := strings.Repeat("\x00\xffa\x1b[31m\r\t", 1<<20) + "\n" + strings.Repeat("line\n", 1000)
	got := Snippet(junk)
	if !Printable(got) || len(got) > 1000 || strings.Count(got, "\n") < 5 {
		t.Errorf("Snippet of junk: %d bytes, %d lines, printable %v", len(got), strings.Count(got, "\n"), Printable(got))
	}
	if !strings.HasPrefix(got, `\x00\xffa\x1b[31m\r\t`) || !strings.HasSuffix(got, "\n…") {
		t.Errorf("Snippet of junk: %.60q … %q", got, got[len(got)-20:])
	}
}
