package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// sbatchValue is whether an sbatch option takes a value.
type sbatchValue byte

const (
	argNone     sbatchValue = iota // a switch: --hold, -H
	argRequired                    // --partition=P, --partition P, -pP, -p P
	argOptional                    // only attached: --exclusive=user, -kV
)

// sbatchReserved is the options stress slurm sets itself, on sbatch's
// command line (arrayArgs, mergeArgs) or in the scripts' #SBATCH lines,
// with the script: -sbatch refuses every spelling of them.
var sbatchReserved = []string{"array", "dependency", "kill-on-invalid-dep", "parsable", "wait", "job-name", "output", "wrap"}

// sbatchLong is sbatch's long options and whether each takes a value
// (Slurm 22.05, hidden ones too: TestSbatchOptions reads them from
// sbatch itself).
var sbatchLong = map[string]sbatchValue{
	"account": argRequired, "acctg-freq": argRequired, "array": argRequired, "batch": argRequired,
	"bb": argRequired, "bbf": argRequired, "begin": argRequired, "chdir": argRequired,
	"cluster": argRequired, "cluster-constraint": argRequired, "clusters": argRequired, "comment": argRequired,
	"constraint": argRequired, "container": argRequired, "context": argRequired, "contiguous": argNone,
	"core-spec": argRequired, "cores-per-socket": argRequired, "cpu-freq": argRequired, "cpus-per-gpu": argRequired,
	"cpus-per-task": argRequired, "deadline": argRequired, "delay-boot": argRequired, "dependency": argRequired,
	"distribution": argRequired, "error": argRequired, "exclude": argRequired, "exclusive": argOptional,
	"export": argRequired, "export-file": argRequired, "extra-node-info": argRequired, "get-user-env": argOptional,
	"gid": argRequired, "gpu-bind": argRequired, "gpu-freq": argRequired, "gpus": argRequired,
	"gpus-per-node": argRequired, "gpus-per-socket": argRequired, "gpus-per-task": argRequired, "gres": argRequired,
	"gres-flags": argRequired, "help": argNone, "hint": argRequired, "hold": argNone,
	"ignore-pbs": argNone, "input": argRequired, "job-name": argRequired, "kill-on-invalid-dep": argRequired,
	"licenses": argRequired, "mail-type": argRequired, "mail-user": argRequired, "mcs-label": argRequired,
	"mem": argRequired, "mem-bind": argRequired, "mem-per-cpu": argRequired, "mem-per-gpu": argRequired,
	"mincpus": argRequired, "network": argRequired, "nice": argOptional, "no-kill": argOptional,
	"no-requeue": argNone, "nodefile": argRequired, "nodelist": argRequired, "nodes": argRequired,
	"ntasks": argRequired, "ntasks-per-core": argRequired, "ntasks-per-gpu": argRequired, "ntasks-per-node": argRequired,
	"ntasks-per-socket": argRequired, "ntasks-per-tres": argRequired, "open-mode": argRequired, "output": argRequired,
	"overcommit": argNone, "oversubscribe": argNone, "parsable": argNone, "partition": argRequired,
	"power": argRequired, "prefer": argRequired, "priority": argRequired, "profile": argRequired,
	"propagate": argOptional, "qos": argRequired, "quiet": argNone, "reboot": argNone,
	"requeue": argNone, "reservation": argRequired, "signal": argRequired, "sockets-per-node": argRequired,
	"spread-job": argNone, "switches": argRequired, "tasks-per-node": argRequired, "test-only": argNone,
	"thread-spec": argRequired, "threads-per-core": argRequired, "time": argRequired, "time-min": argRequired,
	"tmp": argRequired, "uid": argRequired, "usage": argNone, "use-min-nodes": argNone,
	"verbose": argNone, "version": argNone, "wait": argNone, "wait-all-nodes": argRequired,
	"wckey": argRequired, "wrap": argRequired,
}

// sbatchShort is sbatch's short options: the long option each letter is
// (Slurm 22.05, read from sbatch by TestSbatchOptions).
var sbatchShort = map[byte]string{
	'a': "array", 'A': "account", 'b': "begin", 'B': "extra-node-info", 'c': "cpus-per-task",
	'C': "constraint", 'd': "dependency", 'D': "chdir", 'e': "error", 'F': "nodefile",
	'G': "gpus", 'h': "help", 'H': "hold", 'i': "input", 'J': "job-name", 'k': "no-kill",
	'L': "licenses", 'm': "distribution", 'M': "clusters", 'n': "ntasks", 'N': "nodes",
	'o': "output", 'O': "overcommit", 'p': "partition", 'q': "qos", 'Q': "quiet",
	's': "oversubscribe", 'S': "core-spec", 't': "time", 'v': "verbose", 'V': "version",
	'w': "nodelist", 'W': "wait", 'x': "exclude",
}

// checkSbatchOption returns an error (to follow the value in a message)
// unless o is one sbatch option, with its value if it takes one, that
// stress slurm leaves to the user. sbatch reads options as getopt_long
// does: a long option by any unambiguous prefix of its name (--arr=1 is
// --array=1), its value after = or as the next argument, and short
// options bundled (-Ha1 is -H -a 1). Every spelling of an option in
// sbatchReserved is refused, and so is an option whose value would be
// the next argument (the next -sbatch, or the script).
func checkSbatchOption(o string) error {
	if err := scriptSafe(o); err != nil {
		return err
	}
	reserved := func(spelling, name string) error {
		hint := ""
		if name == "wait" {
			hint = "; give stress slurm -wait"
		}
		return fmt.Errorf("is %s, which stress slurm sets itself (it leaves you every sbatch option but --%s and the script%s)", spelling, strings.Join(sbatchReserved, ", --"), hint)
	}
	if o == "-" || o == "--" || !strings.HasPrefix(o, "-") {
		return errors.New("is not an sbatch option: give one option and its value in each -sbatch (--partition=gpu)")
	}
	if name, ok := strings.CutPrefix(o, "--"); ok {
		name, _, hasValue := strings.Cut(name, "=")
		// Note: a prefix of a reserved option that begins another option
		// too (--wa: --wait, --wait-all-nodes) is ambiguous, and sbatch
		// refuses it: refusing it here costs nothing.
		for _, r := range sbatchReserved {
			if strings.HasPrefix(r, name) {
				return reserved("--"+r, r)
			}
		}
		if long, v, ok := sbatchLookup(name); ok && v == argRequired && !hasValue {
			return fmt.Errorf("takes a value: give it in the same -sbatch (--%s=VALUE)", long)
		}
		return nil
	}
	for i := 1; i < len(o); i++ {
		long, ok := sbatchShort[o[i]]
		if !ok {
			continue // sbatch refuses the letter; the rest is read as letters too
		}
		if slices.Contains(sbatchReserved, long) {
			return reserved(fmt.Sprintf("-%c (--%s)", o[i], long), long)
		}
		switch sbatchLong[long] {
		case argRequired:
			if i == len(o)-1 {
				return fmt.Errorf("takes a value: give it in the same -sbatch (-%cVALUE or --%s=VALUE)", o[i], long)
			}
			return nil // the rest is the value
		case argOptional:
			return nil
		}
	}
	return nil
}

// sbatchLookup returns the long option name stands for, as getopt_long
// finds it: the option of that name, else the only one it begins, else
// (ok false) none or several that differ in taking a value.
func sbatchLookup(name string) (long string, v sbatchValue, ok bool) {
	if v, ok := sbatchLong[name]; ok {
		return name, v, true
	}
	for n, nv := range sbatchLong {
		if !strings.HasPrefix(n, name) {
			continue
		}
		if ok && nv != v {
			return "", 0, false
		}
		if !ok || n < long {
			long, v, ok = n, nv, true
		}
	}
	return long, v, ok
}
