package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// TestUsage pins the usage text (testdata/usage.golden): stress help, -h
// and --help print it on stdout; stress alone prints it on stderr and is a
// usage error. No line is wider than 80 columns.
func TestUsage(t *testing.T) {
	out, errOut, err := runCmd(t, "help")
	if err != nil || errOut != "" {
		t.Fatalf("stress help: %v, stderr %q", err, errOut)
	}
	golden(t, "usage.golden", out)
	for _, arg := range []string{"-h", "-help", "--help"} {
		t.Run(arg, func(t *testing.T) {
			got, _, err := runCmd(t, arg)
			if err != nil || got != out {
				t.Errorf("stress %s: %v, prints otherwise than stress help:\n%s", arg, err, diff(out, got))
			}
		})
	}
	_, errOut, err = runCmd(t)
	if !errors.Is(err, errUsage) || errOut != out {
		t.Errorf("stress: %v, want a usage error with the usage text on stderr:\n%s", err, diff(out, errOut))
	}
	for i, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > usageWidth {
			t.Errorf("usage line %d is %d columns wide: %s", i+1, n, line)
		}
	}
	for _, c := range commands {
		for _, f := range c.forms {
			if !strings.Contains(out, f.short) {
				t.Errorf("the usage text lacks %s's %q", c.name, f.short)
			}
		}
	}
}

// TestHelp pins every command's help (testdata/help-NAME.golden): stress
// help NAME, NAME -h and NAME -help print it on stdout and succeed, also
// when -h follows an argument.
func TestHelp(t *testing.T) {
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, err := runCmd(t, "help", c.name)
			if err != nil || errOut != "" {
				t.Errorf("stress help %s: %v, stderr %q", c.name, err, errOut)
				return
			}
			golden(t, "help-"+c.name+".golden", out)
			for _, args := range [][]string{{c.name, "-h"}, {c.name, "-help"}, {c.name, "--help"}, {c.name, "ARG", "-h"}} {
				t.Run(argsName(args), func(t *testing.T) {
					got, errOut, err := runCmd(t, args...)
					if err != nil || errOut != "" || got != out {
						t.Errorf("stress %q: %v, stderr %q, prints otherwise than stress help %s:\n%s", args, err, errOut, c.name, diff(out, got))
					}
				})
			}
			for _, f := range c.forms {
				if !strings.Contains(out, f.short) {
					t.Errorf("stress help %s lacks %q", c.name, f.short)
				}
			}
			// Every flag is listed with its help.
			fs, _ := c.flagSet(io.Discard)
			fs.VisitAll(func(f *flag.Flag) {
				if !strings.Contains(out, "  -"+f.Name) {
					t.Errorf("stress help %s lacks flag -%s", c.name, f.Name)
				}
			})
		})
	}
	// render lists every condition the code knows, not only the paper's
	// four.
	out, _, _ := runCmd(t, "help", "render")
	if want := fmt.Sprint(study.AllConditions); !strings.Contains(out, want) || len(study.AllConditions) != 25 {
		t.Errorf("stress help render does not list the 25 conditions %s:\n%s", want, out)
	}
}

// TestHelpErrors: an unknown command or too many arguments to help are
// usage errors; a flag error prints the command's help on stderr.
func TestHelpErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "frobnicate"}, `help: unknown command "frobnicate"`},
		{[]string{"help", "run", "analyze"}, "help takes at most one command"},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			_, _, err := runCmd(t, tc.args...)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("stress %q: %v, want a usage error containing %q", tc.args, err, tc.want)
			}
		})
	}
	help, _, _ := runCmd(t, "help", "analyze")
	out, errOut, err := runCmd(t, "analyze", "-bogus", "DIR")
	if !errors.Is(err, errUsage) || out != "" || !strings.HasPrefix(errOut, "flag provided but not defined: -bogus\n") || !strings.HasSuffix(errOut, help) {
		t.Errorf("stress analyze -bogus: %v, stdout %q, stderr:\n%s\nwant the error, then the help on stderr", err, out, errOut)
	}
}

// line is form f of c as typed after "stress".
func (c *command) line(f form) string {
	if f.args == "" {
		return c.name
	}
	return c.name + " " + f.args
}

// flagRef matches a flag in a synopsis, and the blank after it if any.
var flagRef = regexp.MustCompile(`(?:^|[ \[(|])-([a-z][a-z0-9-]*)( ?)`)

// synopsisFlags returns the flags a form's args name, each with the value
// shown after it ("" for none), in order.
func synopsisFlags(args string) (names, values []string) {
	for _, m := range flagRef.FindAllStringSubmatchIndex(args, -1) {
		names = append(names, args[m[2]:m[3]])
		value := ""
		if m[5] > m[4] && m[5] < len(args) && !strings.ContainsRune("[(-", rune(args[m[5]])) {
			// The value runs to the first blank, ')', '|' or unmatched ']'.
			depth, end := 0, m[5]
		scan:
			for ; end < len(args); end++ {
				switch args[end] {
				case '[':
					depth++
				case ']':
					if depth == 0 {
						break scan
					}
					depth--
				case ' ', ')', '|':
					if depth == 0 {
						break scan
					}
				}
			}
			value = args[m[5]:end]
		}
		values = append(values, value)
	}
	return names, values
}

// TestSynopsesComplete checks that every flag a command accepts appears in
// one of its forms, with its value named as in its help (-out DIR where the
// help says "-out DIR"; a boolean flag with none), and that the forms name
// no other flag.
func TestSynopsesComplete(t *testing.T) {
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			fs, _ := c.flagSet(io.Discard)
			seen := map[string]bool{}
			for _, f := range c.forms {
				names, values := synopsisFlags(f.args)
				for i, name := range names {
					fl := fs.Lookup(name)
					if fl == nil {
						t.Errorf("%s: the form %q names -%s, which %s does not define", c.name, c.line(f), name, c.name)
						continue
					}
					seen[name] = true
					want, _ := flag.UnquoteUsage(fl)
					if values[i] != want {
						t.Errorf("%s: the form %q shows -%s %q, its help -%s %q", c.name, c.line(f), name, values[i], name, want)
					}
				}
			}
			fs.VisitAll(func(fl *flag.Flag) {
				if !seen[fl.Name] {
					t.Errorf("%s: flag -%s is in no form of the command", c.name, fl.Name)
				}
			})
		})
	}
	// The checker itself.
	names, values := synopsisFlags("-out DIR (-stdio LABEL=COMMAND | -http LABEL=URL)… [-pair A,B[,COL]]… [-json] [-manifest M | -corpus PATH] [-sentinel TOOL[:FIELD[=JSON]]]… SHARD_DIR…")
	if got, want := fmt.Sprint(names, values), "[out stdio http pair json manifest corpus sentinel] [DIR LABEL=COMMAND LABEL=URL A,B[,COL]  M PATH TOOL[:FIELD[=JSON]]]"; got != want {
		t.Errorf("synopsisFlags: %s, want %s", got, want)
	}
}

// readmeRow is a row of README.md's command table: its first cell, the
// synopsis in backquotes.
var readmeRow = regexp.MustCompile("(?m)^\\| `(stress [^`]*)` \\|")

// TestREADMECommands checks that the command table of README.md's
// "Commands" section lists every form of every command, in order, with the
// synopsis stress help prints. With -update it rewrites the synopses in the
// table (the rows themselves are edited by hand).
func TestREADMECommands(t *testing.T) {
	const file = "../../README.md"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "\n## Commands\n")
	if start < 0 {
		t.Fatalf("%s has no Commands section", file)
	}
	end := strings.Index(readme[start+1:], "\n## ")
	if end < 0 {
		end = len(readme)
	} else {
		end += start + 1
	}
	section := readme[start:end]
	var want []string
	for _, c := range commands {
		for _, f := range c.forms {
			want = append(want, "stress "+c.line(f))
		}
	}
	rows := readmeRow.FindAllStringSubmatchIndex(section, -1)
	if len(rows) != len(want) {
		t.Fatalf("%s: the command table has %d rows, want one per form of a command: %d (add or remove rows by hand)", file, len(rows), len(want))
	}
	var fixed strings.Builder
	last := 0
	for i, m := range rows {
		// In a Markdown table, | inside a code span is written \|.
		got := strings.ReplaceAll(section[m[2]:m[3]], `\|`, "|")
		if got != want[i] && !*update {
			t.Errorf("%s: command table row %d is\n\t%s\nwant (as stress help prints it; go test ./cmd/stress -run TestREADMECommands -update rewrites it)\n\t%s", file, i+1, got, want[i])
		}
		fixed.WriteString(section[last:m[2]] + strings.ReplaceAll(want[i], "|", `\|`))
		last = m[3]
	}
	fixed.WriteString(section[last:])
	if *update {
		if err := os.WriteFile(file, []byte(readme[:start]+fixed.String()+readme[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAnalyzeErrorCause checks that only an error about a -pair
// comparison is reported as a usage error naming -pair; the errors are
// Accumulator.Analyze's own.
func TestAnalyzeErrorCause(t *testing.T) {
	acc := analysis.NewAccumulator()
	spec, err := analysis.ParsePairSpec("envelope,normalized", simulator.Strict)
	if err != nil {
		t.Fatal(err)
	}
	opt := analysis.Options{Pairs: []analysis.PairSpec{spec}}
	_, aerr := acc.Analyze(context.Background(), opt)
	if aerr == nil {
		t.Fatal("Analyze of an empty bundle with a pair: no error")
	}
	if err := analyzeError("analyze", aerr); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "analyze: flag -pair: pair envelope,normalized,strict: no model/prompt arm") {
		t.Errorf("pair error: %v, want a usage error naming -pair", err)
	}
	opt = analysis.Options{B: -1, Pairs: []analysis.PairSpec{spec}}
	_, aerr = acc.Analyze(context.Background(), opt)
	if aerr == nil {
		t.Fatal("Analyze with B = -1: no error")
	}
	if err := analyzeError("report", aerr); errors.Is(err, errUsage) || strings.Contains(err.Error(), "-pair") || !strings.HasPrefix(err.Error(), "report: ") || !errors.Is(err, aerr) {
		t.Errorf("options error: %v, want a plain error wrapping %v", err, aerr)
	}
}
