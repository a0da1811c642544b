package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cmdSlurm defines slurm's flags on fs and returns the action that
// submits a study to a Slurm cluster as a job array of shards and a
// dependent merge job.
func cmdSlurm(fs *flag.FlagSet) action {
	shards := fs.Int("shards", 0, "number of shards `N`: the array's tasks 0 to N-1 (required, 1 to 10000)")
	out := fs.String("out", "", "directory `DIR` on a filesystem every node shares: shard-1…shard-N, merged, slurm/ (required)")
	dry := fs.Bool("dry-run", false, "print the scripts and the sbatch commands, submit nothing")
	wait := fs.Bool("wait", false, "wait until the merge job ends (sbatch --wait); exit status 1 if it failed or never ran")
	bin := fs.String("stress", "", "path `PATH` of the stress binary on the nodes (default: this executable)")
	var opts repeatedFlag
	fs.Var(&opts, "sbatch", "sbatch option `OPT` for both jobs, e.g. --partition=gpu, --time=04:00:00, --cpus-per-task=4, --mem=8G, --gpus=1 (repeatable)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 1 {
			return usageError("slurm takes one manifest, got %d arguments", len(args))
		}
		if *shards < 1 || *shards > 10000 {
			return usageError("slurm: flag -shards: want 1 to 10000, got %d", *shards)
		}
		for _, o := range opts {
			if err := checkSbatchOption(o); err != nil {
				return usageError("slurm: flag -sbatch: %q %v", o, err)
			}
		}
		if err := scriptSafe(args[0]); err != nil {
			return usageError("slurm: the manifest's path %q %v", args[0], err)
		}
		m, err := loadManifest(args[0])
		if err != nil {
			return err
		}
		if strings.HasPrefix(m.Source, "builtin:") {
			return usageError("slurm: the manifest must be a file the nodes can read, not %s (write it out: cp manifests/NAME.yaml DIR/)", m.Source)
		}
		s, err := newSlurmPlan(m.Source, *out, *bin, *shards, opts)
		if err != nil {
			return err
		}
		if *dry {
			return s.print(stdout)
		}
		if err := s.write(); err != nil {
			return err
		}
		return s.submit(ctx, *wait, stdout, stderr)
	}
}

// slurmPlan is a study's two Slurm jobs: the array of shards and the
// merge that depends on it.
type slurmPlan struct {
	dir, manifest, bin string
	shards             int
	opts               []string
	array, merge       string // the scripts
}

// newSlurmPlan writes the two scripts' text for the manifest at path,
// with absolute paths, since the jobs run in another working directory.
// Every path it writes into a script is free of control characters (a
// newline would end the line it is on, in a comment or an #SBATCH line
// too, where no quoting holds), and -out of backslashes (sbatch's
// --output reads one as "no %a substitution").
func newSlurmPlan(path, out, bin string, shards int, opts []string) (*slurmPlan, error) {
	manifest, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := scriptSafe(manifest); err != nil {
		return nil, usageError("slurm: the manifest's path %q %v", manifest, err)
	}
	dir, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("slurm: flag -out: %w", err)
	}
	if err := scriptSafe(dir); err != nil {
		return nil, usageError("slurm: flag -out: %q %v", dir, err)
	}
	if strings.Contains(dir, `\`) {
		return nil, usageError("slurm: flag -out: %q holds a backslash, which turns off the %%a in the array's log names (sbatch --output)", dir)
	}
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("slurm: finding this executable (give -stress PATH): %w", err)
		}
	} else if bin, err = filepath.Abs(bin); err != nil {
		return nil, fmt.Errorf("slurm: flag -stress: %w", err)
	}
	if err := scriptSafe(bin); err != nil {
		return nil, usageError("slurm: flag -stress: %q %v", bin, err)
	}
	s := &slurmPlan{dir: dir, manifest: manifest, bin: bin, shards: shards, opts: opts}
	q := shellQuote
	s.array = fmt.Sprintf(`#!/bin/sh
# One shard of the study per task of the array (stress slurm). A task
# resubmitted alone (sbatch --array=K %[1]s) resumes its own
# bundle, or starts it if it has none yet.
#SBATCH --job-name=stress-shards
#SBATCH --output=%[7]s
set -eu
export STRESS_SUBMISSION=%[6]s
dir=%[2]s/shard-$((SLURM_ARRAY_TASK_ID + 1))
if [ -e "$dir/manifest.json" ]; then
  exec %[3]s run -quiet -resume "$dir" %[4]s
fi
exec %[3]s run -quiet -shard auto -shards %[5]d -out "$dir" %[4]s
`, q(filepath.Join(dir, "slurm", "array.sh")), q(dir), q(bin), q(manifest), shards, submissionID(), slurmQuote(slurmFilename(dir)+"/slurm/shard-%a.log"))
	var dirs []string
	for i := 1; i <= shards; i++ {
		dirs = append(dirs, q(filepath.Join(dir, "shard-"+strconv.Itoa(i))))
	}
	s.merge = fmt.Sprintf(`#!/bin/sh
# Combines the finished shards into one bundle (stress slurm); it runs
# after every task of the array ended well (--dependency=afterok).
#SBATCH --job-name=stress-merge
#SBATCH --output=%[4]s
set -eu
exec %[2]s merge -quiet -out %[1]s %[3]s
`, q(filepath.Join(dir, "merged")), q(bin), strings.Join(dirs, " "), slurmQuote(slurmFilename(dir)+"/slurm/merge.log"))
	return s, nil
}

// shellQuote quotes s for sh: as it is if it is made of characters sh
// reads literally, else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// shellJoin quotes each of args for sh and joins them with spaces: a
// command line to paste.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// slurmQuote quotes s for an #SBATCH line, which sbatch splits at spaces
// and unquotes itself: in single quotes, a single quote written as '"'"'
// (sbatch, unlike sh, reads a backslash in quotes as an escape; s has
// none).
func slurmQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// slurmFilename escapes path for sbatch's --output, which reads %a, %j
// and the like in it: a % is written %%.
func slurmFilename(path string) string {
	return strings.ReplaceAll(path, "%", "%%")
}

// scriptSafe returns an error (to follow the value in a message) if s
// holds a control character: a byte below 0x20 or 0x7f (DEL). A newline
// ends the line of a script it is written into, whatever the quoting.
func scriptSafe(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("holds a control character (byte 0x%02x at %d), which stress slurm does not write into a script", c, i)
		}
	}
	return nil
}

func (s *slurmPlan) arrayArgs() []string {
	return append(append([]string{"--parsable", fmt.Sprintf("--array=0-%d", s.shards-1)}, s.opts...), filepath.Join(s.dir, "slurm", "array.sh"))
}

func (s *slurmPlan) mergeArgs(job string, wait bool) []string {
	a := []string{"--parsable", "--dependency=afterok:" + job, "--kill-on-invalid-dep=yes"}
	if wait {
		a = append(a, "--wait")
	}
	return append(append(a, s.opts...), filepath.Join(s.dir, "slurm", "merge.sh"))
}

// print shows the scripts and the commands submit would run.
func (s *slurmPlan) print(w io.Writer) error {
	_, err := fmt.Fprintf(w, "# %s\n%s\n# %s\n%s\n# submit:\nsbatch %s\nsbatch %s\n",
		filepath.Join(s.dir, "slurm", "array.sh"), s.array, filepath.Join(s.dir, "slurm", "merge.sh"), s.merge,
		shellJoin(s.arrayArgs()), shellJoin(s.mergeArgs("ARRAY_JOB_ID", false)))
	return err
}

// write creates the output directory and the scripts; the directory must
// not hold a study already (a second submission resubmits tasks with
// sbatch, see docs/long-runs.md).
func (s *slurmPlan) write() error {
	sd := filepath.Join(s.dir, "slurm")
	if _, err := os.Stat(sd); err == nil {
		return fmt.Errorf("slurm: flag -out: %s already holds a submission (resubmit a failed task with: sbatch --array=K %s)", s.dir, shellQuote(filepath.Join(sd, "array.sh")))
	}
	if err := os.MkdirAll(sd, 0o755); err != nil {
		return fmt.Errorf("slurm: flag -out: %w", err)
	}
	for name, text := range map[string]string{"array.sh": s.array, "merge.sh": s.merge} {
		if err := os.WriteFile(filepath.Join(sd, name), []byte(text), 0o755); err != nil {
			return fmt.Errorf("slurm: %w", err)
		}
	}
	return nil
}

// submit submits the array, then the merge depending on it.
func (s *slurmPlan) submit(ctx context.Context, wait bool, stdout, stderr io.Writer) error {
	job, err := sbatch(ctx, s.arrayArgs(), stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "submitted array job %s: %d shards in %s/shard-1…%d (logs in %s/slurm/)\n", job, s.shards, s.dir, s.shards, s.dir)
	merge, err := sbatch(ctx, s.mergeArgs(job, wait), stderr)
	if wait && err != nil {
		return fmt.Errorf("the merge job did not succeed: %w (see %s/slurm/; resubmit a failed task with sbatch --array=K %s, then sbatch %s)", err, s.dir, shellQuote(filepath.Join(s.dir, "slurm", "array.sh")), shellQuote(filepath.Join(s.dir, "slurm", "merge.sh")))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "submitted merge job %s: the merged bundle will be %s/merged\n", merge, s.dir)
	return nil
}

// sbatch runs sbatch with args and returns the job id it prints
// (--parsable: "ID" or "ID;CLUSTER").
func sbatch(ctx context.Context, args []string, stderr io.Writer) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "sbatch", args...)
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(out.String()), fmt.Errorf("sbatch %s: %w", shellJoin(args), err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out.String()), ";")
	return id, nil
}

// submissionID returns a fresh id for one submission of a study: the
// time and random bits, so two submissions never share one.
func submissionID() string {
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%x", time.Now().UTC().Format("20060102T150405Z"), b)
}
