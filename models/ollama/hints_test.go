package ollama_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/ollama/ollama/envconfig"

	"github.com/mcpstress/stress/internal/testserver/faultserver"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/models/ollama"
	"github.com/mcpstress/stress/models/transport"
)

// TestUnreachableSaysWhatToDo: a server nobody listens at is a
// *models.UnreachableError naming the URL tried (password masked), where
// it came from, and how to start Ollama or name another server; Verify
// adds the model's name.
func TestUnreachableSaysWhatToDo(t *testing.T) {
	addr := faultserver.ClosedPort(t)
	ctx := context.Background()
	_, err := ollama.List(ctx, addr)
	var ue *models.UnreachableError
	if !errors.As(err, &ue) || ue.Host != "http://"+addr || ue.Reason != "connection refused" {
		t.Fatalf("List: %#v, want an UnreachableError at http://%s", err, addr)
	}
	want := "cannot reach Ollama at http://" + addr + `: connection refused: is Ollama running? start it with "ollama serve", or set OLLAMA_HOST, the manifest's host or stress models -host to the server's URL`
	if err.Error() != want {
		t.Errorf("List:\n%v\nwant\n%s", err, want)
	}

	t.Setenv("OLLAMA_HOST", addr)
	if _, err := ollama.List(ctx, ""); err == nil || !strings.Contains(err.Error(), "at http://"+addr+" (from OLLAMA_HOST):") {
		t.Errorf("List from OLLAMA_HOST: %v", err)
	}

	m, err := ollama.New(models.Spec{Name: "tiny", Backend: ollama.Backend, Model: "tiny:latest", Host: "http://u:secret@" + addr}, transport.Options{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Verify(ctx)
	if !errors.As(err, &ue) || len(ue.Models) != 1 || ue.Models[0] != "tiny" {
		t.Fatalf("Verify: %v, want an UnreachableError naming the model", err)
	}
	if s := err.Error(); !strings.Contains(s, "at http://u:xxxxx@"+addr+` (model "tiny"): connection refused`) || strings.Contains(s, "secret") {
		t.Errorf("Verify: %v, want the host with its password masked", err)
	}
}

// TestPullCommand: the pull command sets OLLAMA_HOST only when the ollama
// client would use another server, and never to a URL with a password.
func TestPullCommand(t *testing.T) {
	t.Setenv("OLLAMA_HOST", "")
	for _, tc := range []struct{ env, host, want string }{
		{"", "", "ollama pull m"},
		{"", "127.0.0.1:11434", "ollama pull m"},
		{"", "http://gpu:11434", "OLLAMA_HOST=http://gpu:11434 ollama pull m"},
		{"", "http://u:pw@gpu:11434", "ollama pull m"},
		{"gpu:11434", "", "ollama pull m"},
		{"gpu:11434", "http://gpu:11434", "ollama pull m"},
		{"gpu:11434", "127.0.0.1:11434", "OLLAMA_HOST=http://127.0.0.1:11434 ollama pull m"},
	} {
		t.Run(fmt.Sprintf("OLLAMA_HOST=%s host=%s", tc.env, tc.host), func(t *testing.T) {
			t.Setenv("OLLAMA_HOST", tc.env)
			if got := ollama.PullCommand(tc.host, "m"); got != tc.want {
				t.Errorf("OLLAMA_HOST=%q host %q: %q, want %q", tc.env, tc.host, got, tc.want)
			}
		})
	}
}

// TestResolveHostAsOllama: with OLLAMA_HOST set and no host of its own,
// ResolveHost reaches the server the ollama client itself reaches
// (envconfig.Host, Ollama's reading of OLLAMA_HOST): the same scheme,
// host, port (a URL without a port has its scheme's) and path. A host
// given explicitly reads the same way.
func TestResolveHostAsOllama(t *testing.T) {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		return map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for _, env := range []string{
		"", "0.0.0.0", "gpu", "gpu:1234", "127.0.0.1", "[::1]", "::1", "[::1]:9999",
		"http://gpu", "https://gpu", "http://gpu:8080", "https://gpu:8443/ollama", "gpu/ollama",
		"ollama.com", " gpu:1234 ", `"gpu"`, "'10.0.0.7'",
	} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("OLLAMA_HOST", env)
			want := envconfig.Host()
			for _, host := range []string{"", strings.Trim(strings.TrimSpace(env), `"'`)} {
				got, err := ollama.ResolveHost(host)
				if err != nil {
					t.Errorf("OLLAMA_HOST=%q, host %q: %v", env, host, err)
					continue
				}
				if got.Scheme != want.Scheme || got.Hostname() != want.Hostname() || port(got) != port(want) ||
					strings.Trim(got.Path, "/") != strings.Trim(want.Path, "/") {
					t.Errorf("OLLAMA_HOST=%q, host %q: ResolveHost = %s, the ollama client uses %s", env, host, got, want)
				}
			}
		})
	}
	// A port that is not a number is an error (the ollama client warns
	// and uses its default port).
	if _, err := ollama.ResolveHost("gpu:abc"); err == nil {
		t.Error(`ResolveHost("gpu:abc") succeeded`)
	}
}

// TestOptionsCheckedAsTheServerReadsThem: an option of the wrong type is
// refused when the model is built, naming it, as the server's 500 on
// every call would; integers from YAML, floats, lists, think and names
// the api package does not know pass.
func TestOptionsCheckedAsTheServerReadsThem(t *testing.T) {
	for _, tc := range []struct {
		options map[string]any
		err     string
	}{
		{map[string]any{"num_predict": "many"}, `model "m": options: option "num_predict" must be of type integer`},
		{map[string]any{"stop": "END"}, `model "m": options: option "stop" must be of type array`},
		{map[string]any{"use_mmap": 1}, `model "m": options: option "use_mmap" must be of type boolean`},
		{map[string]any{"num_predict": 4, "num_ctx": uint64(2048), "temperature": 0.2, "top_p": 1, "stop": []any{"a"}, "think": false, "a_newer_option": "x"}, ""},
	} {
		t.Run(tc.err, func(t *testing.T) {
			_, err := ollama.New(models.Spec{Name: "m", Model: "tiny", Options: tc.options}, transport.Options{})
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || err.Error() != tc.err) {
				t.Errorf("options %v: %v, want %q", tc.options, err, tc.err)
			}
		})
	}
}
