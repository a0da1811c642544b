package transport

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpstress/stress/internal/testserver/faultserver"
	"github.com/mcpstress/stress/models"
)

// key holds a '/' and a '+', which JSON and URL encoders may escape.
const key = "sk-canary/Q7x+Zr9LmN3pT0vW8yB2cD4eF6gH1jK"

// fragment returns the first run of MinSecret bytes of secret in b, or "".
func fragment(b, secret string) string {
	for i := 0; i+MinSecret <= len(secret); i++ {
		if f := secret[i : i+MinSecret]; strings.Contains(b, f) {
			return f
		}
	}
	return ""
}

func TestScrubForms(t *testing.T) {
	s := NewScrubber(key)
	for _, tc := range []struct{ name, in, want string }{
		{"whole", "Bearer " + key + " denied", "Bearer [redacted] denied"},
		{"twice", key + key + " " + key, "[redacted] [redacted]"},
		{"json slash", `{"k":"sk-canary\/Q7x+Zr9LmN3pT0vW8yB2cD4eF6gH1jK"}`, `{"k":"[redacted]"}`},
		{"json unicode", `{"k":"sk-canary\u002FQ7x\u002bZr9LmN3pT0vW8yB2cD4eF6gH1jK"}`, `{"k":"[redacted]"}`},
		{"all escaped", `"` + strings.Join(hexEscapes(key), "") + `"`, `"[redacted]"`},
		{"nested json", `{"content":"{\"k\": \"sk-canary\\\/Q7x\\u002bZr9LmN3pT0vW8yB2cD4eF6gH1jK\"}"}`, `{"content":"{\"k\": \"[redacted]\"}"}`},
		{"url", "GET /v1?key=sk-canary%2FQ7x%2bZr9LmN3pT0vW8yB2cD4eF6gH1jK&x=1", "GET /v1?key=[redacted]&x=1"},
		{"server clip", `{"error":"bad key sk-canary/Q7…"}`, `{"error":"bad key [redacted]…"}`},
		{"masked", "Incorrect API key provided: sk-canary/Q7x+Zr9L********************6gH1jK.", "Incorrect API key provided: [redacted]********************6gH1jK."},
		{"suffix", "...B2cD4eF6gH1jK", "...[redacted]"},
		{"short runs stay", "sk-cana and 6gH1jK", "sk-cana and 6gH1jK"},
		{"none", `{"choices":[]}`, `{"choices":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := s.String(tc.in)
			if got != tc.want || changed != (tc.in != tc.want) {
				t.Errorf("%s: %q -> %q, %v; want %q", tc.name, tc.in, got, changed, tc.want)
			}
			if again, ch := s.String(got); ch || again != got {
				t.Errorf("%s: a second scrub changed %q to %q", tc.name, got, again)
			}
		})
	}
}

// hexEscapes writes each byte of x as a JSON \u escape.
func hexEscapes(x string) []string {
	out := make([]string, len(x))
	for i := range x {
		out[i] = fmt.Sprintf(`\u%04x`, x[i])
	}
	return out
}

// TestScrubJSONBodies embeds the key, whole or in part, in random places
// and encodings of a JSON body: the scrubbed body is still JSON that
// decodes to the same shape, and neither its bytes nor its decoded
// strings hold any MinSecret-byte run of the key.
func TestScrubJSONBodies(t *testing.T) {
	s := NewScrubber(key)
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 2000 {
		part := key
		if rng.IntN(3) == 0 {
			i := rng.IntN(len(key) - MinSecret)
			part = key[i : i+MinSecret+rng.IntN(len(key)-MinSecret-i+1)]
		}
		var enc string
		switch rng.IntN(4) {
		case 0: // as Go writes it
			b, _ := json.Marshal(part)
			enc = string(b[1 : len(b)-1])
		case 1: // slashes escaped, as PHP writes it
			enc = strings.ReplaceAll(part, "/", `\/`)
		case 2: // some bytes as \u escapes
			var sb strings.Builder
			for i := range part {
				if rng.IntN(3) == 0 {
					sb.WriteString(hexEscapes(part[i : i+1])[0])
				} else {
					sb.WriteByte(part[i])
				}
			}
			enc = sb.String()
		default: // inside a JSON answer inside the string
			inner, _ := json.Marshal(map[string]string{"k": strings.ReplaceAll(part, "/", `\/`)})
			outer, _ := json.Marshal(string(inner))
			enc = string(outer[1 : len(outer)-1])
		}
		pre := strings.Repeat("ab", rng.IntN(5))
		body := `{"id":"c` + fmt.Sprint(n) + `","msg":"` + pre + enc + ` tail","n":[1,2]}`
		out, changed := s.Bytes([]byte(body))
		if !changed {
			t.Fatalf("%s: not scrubbed", body)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil || len(v) != 3 {
			t.Fatalf("%s -> %s: %v", body, out, err)
		}
		msg, _ := v["msg"].(string)
		var inner map[string]string
		if json.Unmarshal([]byte(msg[len(pre):len(msg)-len(" tail")]), &inner) == nil {
			msg += inner["k"]
		}
		if f := fragment(string(out), key) + fragment(msg, key); f != "" {
			t.Fatalf("%s -> %s: %q survives", body, out, f)
		}
	}
}

func TestScrubNoSecret(t *testing.T) {
	b := []byte("Bearer EMPTY x")
	for _, tc := range []struct {
		name string
		s    *Scrubber
	}{{"nil", nil}, {"no secrets", NewScrubber()}, {"placeholder and short secrets", NewScrubber("EMPTY", "x", "")}} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			if s.Active() {
				t.Errorf("%v is active", s)
			}
			if out, changed := s.Bytes(b); changed || &out[0] != &b[0] {
				t.Errorf("a scrubber without a secret changed %q", b)
			}
		})
	}
	s := NewScrubber(key)
	if out, changed := s.Bytes(b); changed || &out[0] != &b[0] {
		t.Errorf("a clean input was copied or changed")
	}
}

func TestScrubErrorAndValue(t *testing.T) {
	s := NewScrubber(key)
	err := s.Error(fmt.Errorf("server said %s: %w", key, context.Canceled))
	if err.Error() != "server said [redacted]: context canceled" || !errors.Is(err, context.Canceled) {
		t.Errorf("error %q (is canceled: %v)", err, errors.Is(err, context.Canceled))
	}
	clean := errors.New("clean")
	if s.Error(clean) != clean || s.Error(nil) != nil {
		t.Error("a clean error was replaced")
	}
	in := map[string]any{"id": "chatcmpl-" + key, "n": 3, "list": []any{"a", key}, "sub": map[string]any{"k": "x"}}
	out, changed := s.Value(in)
	m := out.(map[string]any)
	if !changed || m["id"] != "chatcmpl-[redacted]" || m["list"].([]any)[1] != "[redacted]" || m["n"] != 3 {
		t.Errorf("value %v", out)
	}
	if in["id"] != "chatcmpl-"+key || in["list"].([]any)[1] != key {
		t.Error("Value changed its input")
	}
	if _, changed := s.Value(map[string]any{"k": "v"}); changed {
		t.Error("a clean map changed")
	}
}

func TestURLSecrets(t *testing.T) {
	u, _ := url.Parse("http://alice:pa55w0rd-long@host:11434/v1")
	got := URLSecrets(u)
	if len(got) != 2 || got[0] != "pa55w0rd-long" || got[1] != "YWxpY2U6cGE1NXcwcmQtbG9uZw==" {
		t.Errorf("secrets %q", got)
	}
	for _, raw := range []string{"http://host:1", "http://alice@host:1"} {
		t.Run(raw, func(t *testing.T) {
			u, _ := url.Parse(raw)
			if s := URLSecrets(u); s != nil {
				t.Errorf("%s: %q", raw, s)
			}
		})
	}
}

// TestClientScrubs: a server echoes the key in a 503 body where it
// straddles the 300-byte clip of error texts, then in a 2xx body. No event
// or error text holds a run of the key, the check sees the scrubbed body,
// and the response keeps the sha256 of the body the server sent.
func TestClientScrubs(t *testing.T) {
	// The key starts at byte 290 of the body: 10 bytes of it fall inside
	// the clip.
	pre := `{"error":{"message":"` + strings.Repeat("é", 131)
	sent := `{"message":{"content":"your key is ` + key + `"}}`
	srv := faultserver.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(sent))
	}), faultserver.Fault{Kind: faultserver.KindOK})
	defer srv.Close()
	status := faultserver.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, pre+"Bearer "+key+`"}}`, http.StatusServiceUnavailable)
	}))
	defer status.Close()

	c := client(t, &fakeClock{}, func(o *Options) { o.Secrets = []string{key}; o.MaxAttempts = 2 })
	_, events, err := c.Do(context.Background(), get(status.URL), checkJSON)
	var ce *models.CallError
	if !errors.As(err, &ce) || len(events) != 2 {
		t.Fatalf("err %v, %d events", err, len(events))
	}
	for _, e := range events {
		if f := fragment(e.Error, key); f != "" || !strings.Contains(e.Error, "[redacted]") || !strings.HasPrefix(e.Error, "HTTP 503: ") {
			t.Errorf("event %q holds %q", e.Error, f)
		}
	}
	if f := fragment(err.Error(), key); f != "" {
		t.Errorf("error %q holds %q", err, f)
	}

	// Without the secret, the same clip keeps the first bytes of the key
	// (the defect this guards against).
	plain := client(t, &fakeClock{}, func(o *Options) { o.MaxAttempts = 1 })
	_, events, _ = plain.Do(context.Background(), get(status.URL), checkJSON)
	if len(events) != 1 || fragment(events[0].Error, key) == "" || !strings.HasSuffix(events[0].Error, "…") {
		t.Errorf("unscrubbed events %+v", events)
	}

	var seen string
	resp, _, err := c.Do(context.Background(), get(srv.URL), func(b []byte) error { seen = string(b); return checkJSON(b) })
	sum := sha256.Sum256([]byte(sent))
	if err != nil || string(resp.Body) != `{"message":{"content":"your key is [redacted]"}}` || seen != string(resp.Body) || resp.OriginalSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("response %+v, check saw %q, err %v", resp, seen, err)
	}
	r := c.Reply(resp, nil, "your key is "+key, map[string]any{"id": key, "n": 1})
	if !r.Redacted || r.Text != "your key is [redacted]" || r.Meta["id"] != "[redacted]" || r.OriginalBodySHA256 != resp.OriginalSHA256 {
		t.Errorf("reply %+v", r)
	}
	clean := c.Reply(&Response{Body: []byte("{}")}, nil, "ok", map[string]any{"id": "c1"})
	if clean.Redacted || clean.OriginalBodySHA256 != "" || clean.Text != "ok" || clean.Meta["id"] != "c1" {
		t.Errorf("clean reply %+v", clean)
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{{"abc", 3, "abc"}, {"abcd", 3, "abc…"}, {"aé", 2, "a…"}, {"aéb", 3, "aé…"}, {"日本", 4, "日…"}} {
		t.Run(tc.in, func(t *testing.T) {
			if got := string(clip([]byte(tc.in), tc.n)); got != tc.want || !utf8.ValidString(got) {
				t.Errorf("clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}

// BenchmarkScrub measures the scrub of a 1 KiB body without a secret in
// it, the common case for every call of a model with an API key.
func BenchmarkScrub(b *testing.B) {
	s := NewScrubber(key)
	body := []byte(strings.Repeat(`{"a":"b\/c","n":12345},`, 45))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		s.Bytes(body)
	}
}

// TestScrubBase64: a key echoed as base64 or base64url, at any alignment
// in the encoded bytes and inside longer encoded text, is removed; text
// that merely shares its first bytes is not.
func TestScrubBase64(t *testing.T) {
	key := "sk-live-0123456789abcdef?>~"
	s := NewScrubber(key)
	for _, pre := range []string{"", "x", "xy", "Bearer ", "{\"k\":\""} {
		t.Run(pre, func(t *testing.T) {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
				b64 := enc.EncodeToString([]byte(pre + key + " and more"))
				text := "bad key b64=" + b64 + " (rejected)"
				got, changed := s.String(text)
				if !changed || strings.Contains(got, b64) {
					t.Errorf("prefix %q, %v: %s not scrubbed: %s", pre, enc == base64.URLEncoding || enc == base64.RawURLEncoding, b64, got)
				}
				// Whatever stays must not decode to the key.
				for _, part := range strings.Fields(strings.NewReplacer("=", " ", "(", " ", ")", " ", "[redacted]", " ").Replace(got)) {
					if dec, err := enc.DecodeString(part); err == nil && strings.Contains(string(dec), key[:MinSecret]) {
						t.Errorf("prefix %q: %q still decodes to the key", pre, part)
					}
				}
			}
		})
	}
	if got, changed := s.String("SGVsbG8sIHdvcmxkIQ== is hello world"); changed {
		t.Errorf("unrelated base64 scrubbed: %s", got)
	}
}
