package main

import (
	"bufio"
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileDir makes a directory whose name holds every character sh or an
// #SBATCH line could misread short of a control character (spaces, both
// quotes, $(…), backticks, ;, &, #, %a, *) and a manifest in it that
// names the repository's corpus and prompts by absolute paths.
func hostileDir(t *testing.T) (dir, manifest string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), `a b'c"d $(touch pwned) `+"`touch pwned2`"+`; & #e %a*`)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("../../manifests")
	b, err := os.ReadFile(filepath.Join(root, "baselines.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("corpus: corpus/paper", "corpus: "+filepath.Join(root, "corpus", "paper"),
		"path: prompts/", "path: "+filepath.Join(root, "prompts")+"/").Replace(string(b))
	manifest = filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(manifest, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, manifest
}

// TestSlurmScriptsRunAsWritten writes the two scripts for paths full of
// characters sh reads specially and runs them with sh against a stand-in
// stress (a shell script, in that directory too, recording its
// arguments): both scripts pass sh -n, the stand-in receives exactly the
// paths given, and nothing in a path runs.
func TestSlurmScriptsRunAsWritten(t *testing.T) {
	dir, manifest := hostileDir(t)
	record := filepath.Join(t.TempDir(), "args")
	bin := filepath.Join(dir, "bin stress")
	standIn := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$STANDIN_ARGS\"\n"
	if err := os.WriteFile(bin, []byte(standIn), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	s, err := newSlurmPlan(manifest, out, bin, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.write(); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	runScript := func(t *testing.T, name string, env ...string) []string {
		t.Helper()
		script := filepath.Join(out, "slurm", name)
		if b, err := exec.Command("sh", "-n", script).CombinedOutput(); err != nil {
			t.Fatalf("sh -n %s: %v\n%s", name, err, b)
		}
		os.Remove(record)
		cmd := exec.Command("sh", script)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), append(env, "STANDIN_ARGS="+record)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sh %s: %v\n%s", name, err, b)
		}
		b, err := os.ReadFile(record)
		if err != nil {
			t.Fatalf("the stand-in stress did not run from %s: %v", name, err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	}
	shard := filepath.Join(out, "shard-2")
	for _, tc := range []struct {
		name string
		env  []string
		want []string
	}{
		{"array.sh", []string{"SLURM_ARRAY_TASK_ID=1"}, []string{"run", "-quiet", "-shard", "auto", "-shards", "3", "-out", shard, manifest}},
		{"array.sh (resume)", []string{"SLURM_ARRAY_TASK_ID=1"}, []string{"run", "-quiet", "-resume", shard, manifest}},
		{"merge.sh", nil, []string{"merge", "-quiet", "-out", filepath.Join(out, "merged"), filepath.Join(out, "shard-1"), shard, filepath.Join(out, "shard-3")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.HasSuffix(tc.name, "(resume)") {
				os.MkdirAll(shard, 0o755)
				os.WriteFile(filepath.Join(shard, "manifest.json"), []byte("{}"), 0o644)
			}
			if got := runScript(t, strings.Fields(tc.name)[0], tc.env...); !slices.Equal(got, tc.want) {
				t.Errorf("%s: the stand-in got\n%q\nwant\n%q", tc.name, got, tc.want)
			}
		})
	}
	if left, _ := os.ReadDir(cwd); len(left) > 0 {
		t.Errorf("a path ran as a command: %s holds %v", cwd, left)
	}
}

// TestSlurmRefusesControlCharacters checks that a control character in
// any path or option stress slurm writes into a script or command is
// refused, naming the flag: a newline in -out used to end the #SBATCH
// line and run the rest of the path in every array task.
func TestSlurmRefusesControlCharacters(t *testing.T) {
	dir, manifest := hostileDir(t)
	nl := filepath.Join(dir, "x\ntouch pwned")
	os.MkdirAll(nl, 0o755)
	nlManifest := filepath.Join(nl, "m.yaml")
	b, _ := os.ReadFile(manifest)
	os.WriteFile(nlManifest, b, 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a newline in -out", []string{"-out", nl}, "flag -out: "},
		{"a carriage return in -out", []string{"-out", dir + "/x\r"}, "flag -out: "},
		{"a DEL in -out", []string{"-out", dir + "/x\x7f"}, "flag -out: "},
		{"a backslash in -out", []string{"-out", dir + "/x\\y"}, "flag -out: "},
		{"a newline in -stress", []string{"-out", dir + "/o", "-stress", "/opt/x\ny"}, "flag -stress: "},
		{"a newline in -sbatch", []string{"-out", dir + "/o", "-sbatch", "--comment=a\nb"}, "flag -sbatch: "},
		{"a tab in -sbatch", []string{"-out", dir + "/o", "-sbatch", "--comment=a\tb"}, "flag -sbatch: "},
		{"a newline in the manifest's path", []string{"-out", dir + "/o", nlManifest}, "the manifest's path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"slurm", "-shards", "2", "-dry-run"}, tc.args...)
			if !strings.HasSuffix(args[len(args)-1], ".yaml") {
				args = append(args, manifest)
			}
			out, _, err := runCmd(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("slurm %q: %v, want an error naming %q\n%s", tc.args, err, tc.want, out)
			}
		})
	}
}

// TestSlurmSubmitLinesQuoted checks that the dry run's submit lines are
// sh-quoted: read back by sh, they are sbatch's arguments exactly, and a
// $(…) in an option does not run.
func TestSlurmSubmitLinesQuoted(t *testing.T) {
	dir, manifest := hostileDir(t)
	opt := "--comment=$(touch pwned) `touch pwned2` it's"
	out, _, err := runCmd(t, "slurm", "-shards", "2", "-out", filepath.Join(dir, "out"), "-stress", "/opt/stress", "-sbatch", opt, "-dry-run", manifest)
	if err != nil {
		t.Fatal(err)
	}
	_, submit, _ := strings.Cut(out, "# submit:\n")
	lines := strings.Split(strings.TrimSpace(submit), "\n")
	s, err := newSlurmPlan(manifest, filepath.Join(dir, "out"), "/opt/stress", 2, []string{opt})
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	for i, want := range [][]string{s.arrayArgs(), s.mergeArgs("ARRAY_JOB_ID", false)} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], "sbatch ") {
			t.Fatalf("submit lines: %q", lines)
		}
		// sh reads the line with printf in place of sbatch.
		cmd := exec.Command("sh", "-c", "printf '%s\\0' "+strings.TrimPrefix(lines[i], "sbatch "))
		cmd.Dir = cwd
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		if got := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"); !slices.Equal(got, want) {
			t.Errorf("submit line %d reads as\n%q\nwant\n%q", i+1, got, want)
		}
	}
	if left, _ := os.ReadDir(cwd); len(left) > 0 {
		t.Errorf("pasting a submit line ran a command: %s holds %v", cwd, left)
	}
}

// TestSlurmStressMadeAbsolute checks that a relative -stress PATH is
// written into the scripts as an absolute path: the jobs run in another
// working directory.
func TestSlurmStressMadeAbsolute(t *testing.T) {
	wd, _ := os.Getwd()
	out, _, err := runCmd(t, "slurm", "-shards", "2", "-out", "/shared/study", "-stress", "bin/stress", "-dry-run", "../../manifests/baselines.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := "exec " + shellQuote(filepath.Join(wd, "bin", "stress")) + " run "
	if !strings.Contains(out, want) || strings.Contains(out, "exec bin/stress") {
		t.Errorf("dry run lacks %q:\n%s", want, out)
	}
}

// TestSlurmSbatchSpellings checks that -sbatch refuses every spelling of
// an option stress slurm sets (long, abbreviated, short, bundled, with =
// or a separate value) and an option whose value would be the next
// argument, naming the flag and the option, and keeps the others.
func TestSlurmSbatchSpellings(t *testing.T) {
	for _, tc := range []struct {
		opts []string
		want string // "" for accepted
	}{
		{[]string{"--array=0-9"}, "is --array,"},
		{[]string{"--arr=0-9"}, "is --array,"},
		{[]string{"--a=0-9"}, "is --array,"},
		{[]string{"--array", "0-9"}, "is --array,"},
		{[]string{"-a"}, "is -a (--array),"},
		{[]string{"-a0-9"}, "is -a (--array),"},
		{[]string{"-Ha0-9"}, "is -a (--array),"},
		{[]string{"-d", "afterok:1"}, "is -d (--dependency),"},
		{[]string{"--depend=afterok:1"}, "is --dependency,"},
		{[]string{"--wra=id"}, "is --wrap,"},
		{[]string{"--wait"}, "give stress slurm -wait"},
		{[]string{"-W"}, "is -W (--wait),"},
		{[]string{"-vW"}, "is -W (--wait),"},
		{[]string{"--kill-on=no"}, "is --kill-on-invalid-dep,"},
		{[]string{"--parsable"}, "is --parsable,"},
		{[]string{"-o/tmp/x"}, "is -o (--output),"},
		{[]string{"--out=/tmp/x"}, "is --output,"},
		{[]string{"-Jname"}, "is -J (--job-name),"},
		{[]string{"--job=name"}, "is --job-name,"},
		{[]string{"--=x"}, "is --array,"},
		{[]string{"--"}, "is not an sbatch option"},
		{[]string{"gpu"}, "is not an sbatch option"},
		{[]string{"--partition"}, "takes a value: give it in the same -sbatch (--partition=VALUE)"},
		{[]string{"--part"}, "takes a value: give it in the same -sbatch (--partition=VALUE)"},
		{[]string{"-p"}, "takes a value: give it in the same -sbatch (-pVALUE or --partition=VALUE)"},
		{[]string{"-Hp"}, "takes a value"},
		{[]string{"--partition=gpu"}, ""},
		{[]string{"--part=gpu"}, ""},
		{[]string{"-pgpu"}, ""},
		{[]string{"-pdebug"}, ""}, // the d is the partition's, not -d
		{[]string{"-Hpa"}, ""},
		{[]string{"-kado"}, ""}, // -k's optional value
		{[]string{"--time=04:00:00"}, ""},
		{[]string{"--gpus=1", "--mem=8G", "--cpus-per-task=4"}, ""},
		{[]string{"--exclusive"}, ""},
		{[]string{"--hold"}, ""},
		{[]string{"--wait-all-nodes=1"}, ""},
		{[]string{"--comment=$(id) `id`"}, ""},
	} {
		t.Run(strings.Join(tc.opts, " "), func(t *testing.T) {
			args := []string{"slurm", "-shards", "2", "-out", t.TempDir(), "-stress", "/opt/stress", "-dry-run"}
			for _, o := range tc.opts {
				args = append(args, "-sbatch", o)
			}
			_, _, err := runCmd(t, append(args, "../../manifests/baselines.yaml")...)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("-sbatch %q: %v", tc.opts, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "flag -sbatch: ") || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("-sbatch %q: %v, want an error with %q", tc.opts, err, tc.want)
			}
		})
	}
}

// TestRunShardsPositive checks that run -shard auto refuses -shards 0
// or below, which it used to ignore (taking the count from the array).
func TestRunShardsPositive(t *testing.T) {
	t.Setenv("SLURM_ARRAY_TASK_ID", "0")
	t.Setenv("SLURM_ARRAY_TASK_MIN", "0")
	t.Setenv("SLURM_ARRAY_TASK_MAX", "0")
	t.Setenv("SLURM_ARRAY_TASK_COUNT", "1")
	for _, n := range []string{"0", "-5"} {
		t.Run("-shards "+n, func(t *testing.T) {
			_, _, err := runCmd(t, "run", "-quiet", "-shard", "auto", "-shards", n, "-out", filepath.Join(t.TempDir(), "b"), "../../manifests/baselines.yaml")
			if err == nil || !strings.Contains(err.Error(), "flag -shards: want 1 to 100000, got "+n) {
				t.Errorf("run -shard auto -shards %s: %v", n, err)
			}
		})
	}
}

// sbatchParser runs the real sbatch's option parsing: sbatch -v with a
// slurm.conf naming a controller that does not run lists the options it
// defined ("end of defined options") before it tries to submit, and is
// stopped there. It needs sbatch (Debian's slurm-client, which .ci/run
// installs), not a cluster.
type sbatchParser struct {
	conf, script string
}

func newSbatchParser(t *testing.T) *sbatchParser {
	t.Helper()
	if _, err := exec.LookPath("sbatch"); err != nil {
		missing(t, "sbatch is not installed (.ci/run installs slurm-client)")
	}
	dir := t.TempDir()
	p := &sbatchParser{conf: filepath.Join(dir, "slurm.conf"), script: filepath.Join(dir, "job.sh")}
	conf := "ClusterName=parse\nSlurmctldHost=localhost\nSlurmctldPort=1\nAuthType=auth/none\nNodeName=localhost CPUs=1 State=UNKNOWN\nPartitionName=debug Nodes=localhost Default=YES\n"
	os.WriteFile(p.conf, []byte(conf), 0o644)
	os.WriteFile(p.script, []byte("#!/bin/sh\ntrue\n"), 0o755)
	return p
}

var sbatchListed = regexp.MustCompile(`^sbatch: (\S+)\s+: (.*)$`)

// parse returns the options sbatch -v args defined (name → value, without
// verbose), or what it printed if it stopped before listing them.
func (p *sbatchParser) parse(t *testing.T, args ...string) (map[string]string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sbatch", append([]string{"-v"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SLURM_CONF=" + p.conf}
	cmd.Stdin = bytes.NewReader(nil)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	var text strings.Builder
	set := map[string]string{}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		text.WriteString(line + "\n")
		if strings.Contains(line, "end of defined options") {
			return set, ""
		}
		if m := sbatchListed.FindStringSubmatch(line); m != nil && m[1] != "verbose" && !strings.HasPrefix(m[1], "---") {
			set[m[1]] = m[2]
		}
	}
	return nil, text.String()
}

// TestSbatchOptions checks -sbatch against sbatch's own option parsing
// (Slurm 22.05 in CI): the option table stress slurm keeps is sbatch's
// (every long option, found through getopt_long's "ambiguous" message,
// and every letter, each with whether it takes a value); every spelling
// of an option sbatch reads as one stress slurm sets is refused (each
// prefix of such an option, = and separate values, short, bundled), and
// every option sbatch reads as another is kept; and the #SBATCH lines of
// scripts for a hostile -out read back as the paths written.
func TestSbatchOptions(t *testing.T) {
	p := newSbatchParser(t)
	ambiguous := regexp.MustCompile(`is ambiguous; possibilities:(.*)`)
	named := regexp.MustCompile(`option '--([^'=]+)' (requires|doesn't allow) an argument`)

	// The long options: a letter's "ambiguous" message lists every
	// option it begins; a letter only one option begins is that option.
	long := map[string]sbatchValue{}
	for c := 'a'; c <= 'z'; c++ {
		_, msg := p.parse(t, "--"+string(c)+"=x", p.script)
		var names []string
		switch m := ambiguous.FindStringSubmatch(msg); {
		case m != nil:
			for _, f := range strings.Fields(m[1]) {
				names = append(names, strings.Trim(f, "'-"))
			}
		case strings.Contains(msg, "unrecognized option"):
		default:
			_, msg := p.parse(t, "--"+string(c))
			m := named.FindStringSubmatch(msg)
			if m == nil {
				t.Fatalf("sbatch --%c: cannot tell the option: %s", c, msg)
			}
			names = append(names, m[1])
		}
		for _, n := range names {
			v := argOptional
			if _, msg := p.parse(t, "--"+n+"=x", p.script); strings.Contains(msg, "doesn't allow an argument") {
				v = argNone
			} else if _, msg := p.parse(t, "--"+n); strings.Contains(msg, "requires an argument") {
				v = argRequired
			}
			long[n] = v
		}
	}
	for n, v := range long {
		if w, ok := sbatchLong[n]; !ok || w != v {
			t.Errorf("sbatch has --%s (value %d), sbatchLong %d (listed %v)", n, v, w, ok)
		}
	}
	for n := range sbatchLong {
		if _, ok := long[n]; !ok {
			t.Errorf("sbatchLong has --%s, sbatch does not", n)
		}
	}

	// The letters: each one's option and whether it takes a value. -h,
	// -V and -Q print and exit or silence -v: only their presence is
	// checked.
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") {
		t.Run("-"+string(c), func(t *testing.T) {
			_, msg := p.parse(t, "-"+string(c))
			want, ok := sbatchShort[c]
			if strings.Contains(msg, "invalid option") {
				if ok {
					t.Errorf("sbatch has no -%c, sbatchShort has", c)
				}
				return
			}
			if !ok {
				t.Errorf("sbatch has -%c, sbatchShort not", c)
				return
			}
			if strings.ContainsRune("hVQ", rune(c)) {
				return
			}
			v := argOptional
			if strings.Contains(msg, "requires an argument") {
				v = argRequired
			} else if set, _ := p.parse(t, "-"+string(c)+"H", p.script); set["hold"] != "" {
				v = argNone
			}
			if v != sbatchLong[want] {
				t.Errorf("sbatch -%c takes value %d, --%s in sbatchLong %d", c, v, want, sbatchLong[want])
			}
			value := "1"
			if v == argNone {
				value = ""
			}
			set, msg := p.parse(t, "-"+string(c)+value, p.script)
			if _, ok := set[want]; !ok && want != "verbose" && !strings.Contains(msg, "--"+want+" ") {
				t.Errorf("sbatch -%c%s defines %v (%s), want --%s", c, value, set, msg, want)
			}
		})
	}

	// Spellings: every prefix of each reserved option, and each other
	// option by its whole name, with = and separate values; each letter
	// alone, attached, separate and bundled after -H.
	var spellings [][]string
	for n, v := range sbatchLong {
		prefixes := []string{n}
		if slices.Contains(sbatchReserved, n) {
			for i := 1; i < len(n); i++ {
				prefixes = append(prefixes, n[:i])
			}
		}
		value := "1"
		if n == "kill-on-invalid-dep" {
			value = "yes"
		}
		for _, pre := range prefixes {
			switch v {
			case argRequired:
				spellings = append(spellings, []string{"--" + pre + "=" + value}, []string{"--" + pre, value})
			case argOptional:
				spellings = append(spellings, []string{"--" + pre + "=" + value}, []string{"--" + pre})
			default:
				spellings = append(spellings, []string{"--" + pre})
			}
		}
	}
	for c := range sbatchShort {
		if strings.ContainsRune("hVQ", rune(c)) {
			continue
		}
		s := "-" + string(c)
		spellings = append(spellings, []string{s + "1"}, []string{s, "1"}, []string{"-H" + string(c) + "1"}, []string{s})
	}
	type verdict struct {
		spelling []string
		set      map[string]string
		msg      string
	}
	verdicts := make([]verdict, len(spellings))
	var wg sync.WaitGroup
	work := make(chan int)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				set, msg := p.parse(t, append(slices.Clone(spellings[i]), p.script)...)
				verdicts[i] = verdict{spellings[i], set, msg}
			}
		}()
	}
	for i := range spellings {
		work <- i
	}
	close(work)
	wg.Wait()
	invalid := regexp.MustCompile(`Invalid --(\S+) specification`)
	checked := 0
	for _, v := range verdicts {
		var refused error
		for _, o := range v.spelling {
			if refused = checkSbatchOption(o); refused != nil {
				break
			}
		}
		var sets []string
		for n := range v.set {
			sets = append(sets, n)
		}
		if m := invalid.FindStringSubmatch(v.msg); m != nil {
			sets = append(sets, m[1])
		}
		if len(sets) == 0 {
			continue // sbatch refused it (ambiguous, no such option, no value allowed)
		}
		checked++
		reserved := slices.ContainsFunc(sets, func(n string) bool { return slices.Contains(sbatchReserved, n) })
		switch {
		case reserved && refused == nil:
			t.Errorf("-sbatch %q: kept, but sbatch reads it as %v", v.spelling, sets)
		case !reserved && refused != nil && len(v.spelling) == 1 && !strings.HasPrefix(refused.Error(), "takes a value"):
			t.Errorf("-sbatch %q: %v, but sbatch reads it as %v", v.spelling, refused, sets)
		}
	}
	if checked < 300 {
		t.Errorf("sbatch read only %d of %d spellings", checked, len(spellings))
	}

	// The #SBATCH lines of scripts for a hostile -out: sbatch reads the
	// paths written (with % doubled, as --output wants).
	dir, manifest := hostileDir(t)
	out := filepath.Join(dir, "out")
	s, err := newSlurmPlan(manifest, out, "/opt/stress", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.write(); err != nil {
		t.Fatal(err)
	}
	for script, want := range map[string]map[string]string{
		"array.sh": {"job-name": "stress-shards", "output": strings.ReplaceAll(out, "%", "%%") + "/slurm/shard-%a.log"},
		"merge.sh": {"job-name": "stress-merge", "output": strings.ReplaceAll(out, "%", "%%") + "/slurm/merge.log"},
	} {
		set, msg := p.parse(t, filepath.Join(out, "slurm", script))
		if !maps.Equal(set, want) {
			t.Errorf("sbatch reads %s's #SBATCH lines as %q (%s), want %q", script, set, msg, want)
		}
	}
}
