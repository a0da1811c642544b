package manifests

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpstress/stress/internal/input"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

const head = "name: t\ncorpus: corpus/paper\nprompts: [{name: default, path: prompts/default.txt}]\nconditions: [normalized]\nreplicates: 1\nseed: 1\ntemperature: 0\n"

// TestParseBounded: the alias bomb of issue 46 (1.3 KB under an openai
// model's options.chat_template_kwargs reached 4.2 GB and kept
// growing) and 100,000 levels of nesting, YAML or JSON (14.8 GB), are
// refused before the YAML parser builds a tree, naming the line and
// the limit, in a few MiB.
func TestParseBounded(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString(head + "models:\n  - name: m\n    backend: openai\n    model: x\n    options:\n      chat_template_kwargs:\n")
	bomb.WriteString("        a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		p := "*a" + string(rune('0'+i-1))
		bomb.WriteString("        a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat(p+", ", 9) + p + "]\n")
	}
	deep := 100000
	for _, c := range []struct {
		name, in, want string
		kind           error
	}{
		{"bomb", bomb.String(), "manifest x.yaml: line 15: alias *a0 inside an anchored node", input.ErrAliases},
		{"yaml flow", head + "models: " + strings.Repeat("[", deep) + strings.Repeat("]", deep) + "\n", "manifest x.yaml: line 8: nesting deeper than 64 levels", input.ErrTooDeep},
		{"yaml block", head + "models:\n" + strings.Repeat("- ", deep) + "x\n", "manifest x.yaml: line 9: nesting deeper than 64 levels", input.ErrTooDeep},
		{"json", `{"name": "t", "models": ` + strings.Repeat(`{"a": `, deep) + "1" + strings.Repeat("}", deep+1), "manifest x.yaml: line 1: nesting deeper than 64 levels", input.ErrTooDeep},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = Parse("x.yaml", []byte(c.in)) })
			if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.Is(err, c.kind) {
				t.Errorf("%s: got %v, want %q", c.name, err, c.want)
			}
			if n > 8<<20 {
				t.Errorf("%s: %d MiB allocated to refuse %d bytes", c.name, n>>20, len(c.in))
			}
		})
	}
}

// TestParseMaxSize parses the worst manifest the limits let through, at
// the manifest cap: 1 MiB of collections nested 64 levels, under a
// field the decoder keeps (a model's options). The nesting costs no
// more than a tenth over the same megabyte nested one level (the
// parser's cost per token, about 850 MiB allocated per MiB, dominates).
func TestParseMaxSize(t *testing.T) {
	if testing.Short() {
		t.Skip("parses two 1 MiB manifests")
	}
	cost := func(depth int) uint64 {
		pre := head + "models:\n  - name: m\n    backend: baseline\n    model: always_stop\n    options:\n      x: ["
		chain := strings.Repeat("[", depth) + strings.Repeat("]", depth) + ","
		in := pre + strings.Repeat(chain, (maxBytes-len(pre)-2)/len(chain)) + "]\n"
		if err := input.CheckYAML([]byte(in)); err != nil {
			t.Fatal(err)
		}
		var err error
		n := allocated(func() { _, err = Parse("x.yaml", []byte(in)) })
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d bytes nested %d levels: %d MiB allocated", len(in), depth+6, n>>20)
		return n
	}
	flat, deep := cost(1), cost(input.MaxDepth-6)
	if deep > flat+flat/4 {
		t.Errorf("nested %d levels, 1 MiB allocates %d MiB; nested 7, %d MiB", input.MaxDepth, deep>>20, flat>>20)
	}
}
