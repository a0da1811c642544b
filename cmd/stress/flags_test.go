package main

import (
	"errors"
	"strings"
	"testing"
)

// TestInterspersedFlags checks that flags may follow the positional
// arguments in every command (one mechanism, parse), and that "--" ends
// the flags.
func TestInterspersedFlags(t *testing.T) {
	a := mockBundle(t, paperKinds, 1, nil)
	b := mockBundle(t, map[string]string{"llama3.2-3b": "steady-v2", "qwen3.5-0.8b": "erratic"}, 1, nil)
	same := func(name string, flagsFirst, mixed []string) {
		t.Helper()
		want, _, err := runCmd(t, flagsFirst...)
		if err != nil {
			t.Fatalf("%s: stress %q: %v", name, flagsFirst, err)
		}
		got, _, err := runCmd(t, mixed...)
		if err != nil {
			t.Errorf("%s: stress %q: %v", name, mixed, err)
		} else if got != want {
			t.Errorf("%s: stress %q prints otherwise than stress %q:\n%s", name, mixed, flagsFirst, diff(want, got))
		}
	}
	same("analyze", []string{"analyze", "-json", "-b", "50", a}, []string{"analyze", a, "-json", "-b", "50"})
	same("analyze, flags on both sides", []string{"analyze", "-json", "-b", "50", a}, []string{"analyze", "-b", "50", a, "-json"})
	same("compare", []string{"compare", "-json", "-b", "50", a, b}, []string{"compare", a, "-json", b, "-b", "50"})
	same("compare, flags last", []string{"compare", "-b", "50", a, b}, []string{"compare", a, b, "-b=50"})
	same("verify", []string{"verify", "-json", "../../manifests/baselines.yaml"}, []string{"verify", "../../manifests/baselines.yaml", "-json"})

	for _, tc := range []struct {
		args []string
		want string
	}{
		// The flag after the manifest is parsed (and checked).
		{[]string{"run", "../../manifests/baselines.yaml", "-grace", "0s"}, "flags -grace and -progress want a positive duration"},
		{[]string{"run", "../../manifests/baselines.yaml", "-shard", "9/2"}, "run: flag -shard"},
		{[]string{"render", "-scenario", "S07", "stray", "-condition", "prose"}, "render takes no arguments"},
		{[]string{"profile", "stray", "-json"}, "profile takes no arguments"},
		{[]string{"analyze", a, "-nosuchflag"}, "-nosuchflag"},
		// "--" ends the flags: what follows is positional.
		{[]string{"analyze", "-b", "50", "--", a, "-json"}, "analyze takes one bundle directory"},
		{[]string{"analyze", a, "--", "-json"}, "analyze takes one bundle directory"},
		{[]string{"compare", a, "--", "-b", b}, "compare takes two bundle directories"},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			_, _, err := runCmd(t, tc.args...)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("stress %q: error %v, want a usage error containing %q", tc.args, err, tc.want)
			}
		})
	}
	// After "--" an argument that looks like a flag is an argument, here a
	// bundle directory that does not exist.
	if _, _, err := runCmd(t, "analyze", "--", "-json"); err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "-json") {
		t.Errorf(`stress analyze -- -json: %v, want a failure naming the directory "-json"`, err)
	}
	// "--" as the value of a flag is a value, not the end of the flags.
	if _, _, err := runCmd(t, "synth", "-out", "--", "-scenarios", "0"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "-scenarios") {
		t.Errorf("stress synth -out -- -scenarios 0: %v, want the -scenarios flag parsed and refused", err)
	}
}
