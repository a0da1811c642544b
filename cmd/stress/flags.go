package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/simulator"
)

// parse parses flags wherever they stand among the positional arguments
// (stress analyze DIR -json), up to a "--", after which everything is
// positional; fs.Args() returns the positional arguments in order. Flag
// errors become usage errors; -h and -help return flag.ErrHelp.
func parse(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return usageError("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if endedFlags(fs, args[:len(args)-len(rest)]) {
			pos = append(pos, rest...)
			break
		}
		// Note: the flag package stops at the first positional argument;
		// keep it and parse the flags after it.
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	// A leading "--" makes fs.Args() exactly pos without parsing a flag.
	return fs.Parse(append([]string{"--"}, pos...))
}

// endedFlags reports whether the flag arguments fs.Parse consumed ended
// with the terminator "--" rather than with a flag's value that reads "--"
// (-out --).
func endedFlags(fs *flag.FlagSet, consumed []string) bool {
	for i := 0; i < len(consumed); i++ {
		a := consumed[i]
		if a == "--" {
			return true
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
			i++ // the next argument is the flag's value
		}
	}
	return false
}

// statFlags are the statistics flags of analyze, compare and report.
type statFlags struct {
	b        *int
	seed     *uint64
	pairs    *repeatedFlag
	column   *string
	interval *string
	family   *string
}

// repeatedFlag is a repeatable string flag: its values in order.
type repeatedFlag []string

func (l *repeatedFlag) String() string     { return strings.Join(*l, ", ") }
func (l *repeatedFlag) Set(s string) error { *l = append(*l, s); return nil }

// addStatFlags defines -b and -seed, and -pair and -column when pairs is
// set.
func addStatFlags(fs *flag.FlagSet, pairs bool) *statFlags {
	sf := &statFlags{
		b:    fs.Int("b", stats.DefaultB, "`N` bootstrap resamples per interval (1 to 1000000)"),
		seed: fs.Uint64("seed", analysis.DefaultSeed, "bootstrap seed `S` (recorded in the output)"),
	}
	if pairs {
		sf.pairs = &repeatedFlag{}
		fs.Var(sf.pairs, "pair", "also compare two levels `FACTOR:A,B[,COL]` (A − B) of a factor, condition:, prompt: or model:, within every combination of the other two, in column COL (default: -column's); without FACTOR, two conditions, else two prompts, else two models of the bundle; repeatable")
		sf.column = fs.String("column", "", "column `COL` of the -pair comparisons: "+analysis.ColumnList()+" (default strict)")
		sf.interval = fs.String("interval", analysis.IntervalWilson, "per-cell interval `METHOD`: wilson (score) or clopper-pearson (exact)")
		sf.family = fs.String("family", analysis.FamilyAll, "family `F` over which Holm and Benjamini-Hochberg adjust the p-values: all (predeclared and -pair comparisons), predeclared, or requested (-pair alone)")
	}
	return sf
}

// options checks the flags and returns the analysis options.
func (sf *statFlags) options(cmd string) (analysis.Options, error) {
	opt := analysis.Options{B: *sf.b, Seed: *sf.seed}
	if *sf.b < 1 || *sf.b > 1000000 {
		return opt, usageError("%s: flag -b: want 1 to 1000000 resamples, got %d", cmd, *sf.b)
	}
	if *sf.seed == 0 {
		return opt, usageError("%s: flag -seed: want a seed ≥ 1", cmd)
	}
	if sf.pairs == nil {
		return opt, nil
	}
	switch *sf.interval {
	case analysis.IntervalWilson, analysis.IntervalClopperPearson:
		opt.Interval = *sf.interval
	default:
		return opt, usageError("%s: flag -interval: unknown interval %q (want wilson or clopper-pearson)", cmd, *sf.interval)
	}
	switch *sf.family {
	case analysis.FamilyAll, analysis.FamilyPredeclared, analysis.FamilyRequested:
		opt.Family = *sf.family
	default:
		return opt, usageError("%s: flag -family: unknown family %q (want all, predeclared or requested)", cmd, *sf.family)
	}
	if *sf.family == analysis.FamilyRequested && len(*sf.pairs) == 0 {
		return opt, usageError("%s: flag -family requested: no -pair comparison is requested", cmd)
	}
	col := simulator.Strict
	if *sf.column != "" {
		c, err := analysis.ParseColumn(*sf.column)
		if err != nil {
			return opt, usageError("%s: flag -column: %v", cmd, err)
		}
		if len(*sf.pairs) == 0 {
			return opt, usageError("%s: flag -column applies to -pair comparisons; give at least one -pair A,B", cmd)
		}
		col = c
	}
	for _, p := range *sf.pairs {
		spec, err := analysis.ParsePairSpec(p, col)
		if err != nil {
			return opt, usageError("%s: flag -pair: %v", cmd, err)
		}
		opt.Pairs = append(opt.Pairs, spec)
	}
	return opt, nil
}

// analyzeError reports an error of Accumulator.Analyze for cmd: a usage
// error naming -pair when it is about one of the -pair comparisons
// (analysis.ErrPair: no arm of the bundle has both conditions), else a
// plain error.
func analyzeError(cmd string, err error) error {
	if errors.Is(err, analysis.ErrPair) {
		return usageError("%s: flag -pair: %v", cmd, err)
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// bundleArgs checks what analyze and report share: one bundle directory,
// the statistics flags, -against and -match-label.
func bundleArgs(cmd string, args []string, sf *statFlags, against string, matchLabel bool) (dir string, opt analysis.Options, err error) {
	if len(args) != 1 {
		return "", opt, usageError("%s takes one bundle directory", cmd)
	}
	if opt, err = sf.options(cmd); err != nil {
		return "", opt, err
	}
	if against != "" && against != "paper" {
		return "", opt, usageError("%s: flag -against: unknown table %q (want paper)", cmd, against)
	}
	if matchLabel && against == "" {
		return "", opt, usageError("%s: flag -match-label applies to -against paper", cmd)
	}
	return args[0], opt, nil
}
