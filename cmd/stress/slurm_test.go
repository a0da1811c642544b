package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSlurmDryRun checks the scripts stress slurm writes without a
// cluster: the array runs -shard auto with the count, resumes a bundle it
// finds, and the merge lists every shard; bad flags are refused.
func TestSlurmDryRun(t *testing.T) {
	out, _, err := runCmd(t, "slurm", "-shards", "3", "-out", "/shared/study", "-stress", "/opt/stress", "-sbatch", "--partition=gpu", "-dry-run", "../../manifests/baselines.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"exec /opt/stress run -quiet -shard auto -shards 3 -out \"$dir\" ",
		"exec /opt/stress run -quiet -resume \"$dir\" ",
		"dir=/shared/study/shard-$((SLURM_ARRAY_TASK_ID + 1))",
		"exec /opt/stress merge -quiet -out /shared/study/merged /shared/study/shard-1 /shared/study/shard-2 /shared/study/shard-3\n",
		"sbatch --parsable --array=0-2 --partition=gpu /shared/study/slurm/array.sh\n",
		"sbatch --parsable --dependency=afterok:ARRAY_JOB_ID --kill-on-invalid-dep=yes --partition=gpu /shared/study/slurm/merge.sh\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	for args, want := range map[string]string{
		"-shards 0 -out x m.yaml":                     "flag -shards: want 1 to 10000",
		"-shards 2 -out x -sbatch --array=0-9 m.yaml": `flag -sbatch: "--array=0-9" is --array, which stress slurm sets itself`,
		"-shards 2 -out x builtin:baselines.yaml":     "the manifest must be a file the nodes can read",
		"-shards 2 m.yaml":                            "flag -out is required",
	} {
		t.Run(args, func(t *testing.T) {
			_, _, err := runCmd(t, append([]string{"slurm"}, strings.Fields(args)...)...)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("slurm %s: %v, want %q", args, err, want)
			}
		})
	}
}

// TestSlurmCluster runs studies on a real one-node Slurm cluster
// (scripts/slurm/cluster.sh: munged, slurmctld and slurmd under a
// temporary directory): the default study as an array of 3 shards and the
// lab study (live environments in each shard) as an array of 4, each
// merged by the dependent job into a bundle whose decisions.parquet and
// analyze -json equal an unsharded run's; then the lab study again with
// one array task cancelled, resubmitted alone and merged again, with the
// same result. Every daemon it starts is stopped.
func TestSlurmCluster(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a Slurm node runs as root (scripts/slurm/cluster.sh)")
	}
	for _, p := range []string{"slurmctld", "slurmd", "sbatch", "munged"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is not installed: apt-get install slurmctld slurmd slurm-client munge (.ci/run does)", p)
		}
	}
	dir := t.TempDir()
	cluster, _ := filepath.Abs("../../scripts/slurm/cluster.sh")
	conf, err := exec.Command(cluster, "start", filepath.Join(dir, "cluster")).Output()
	t.Cleanup(func() { exec.Command(cluster, "stop", filepath.Join(dir, "cluster")).Run() })
	if err != nil {
		t.Fatalf("starting the cluster: %v", err)
	}
	t.Setenv("SLURM_CONF", strings.TrimSpace(string(conf)))
	bin := stressBinary(t)
	stress := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("stress %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	same := func(t *testing.T, merged, single string) {
		t.Helper()
		a, _ := os.ReadFile(filepath.Join(merged, "decisions.parquet"))
		b, _ := os.ReadFile(filepath.Join(single, "decisions.parquet"))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s/decisions.parquet differs from the unsharded run's", merged)
		}
		if stress(t, "analyze", "-json", merged) != stress(t, "analyze", "-json", single) {
			t.Errorf("analyze -json of %s differs from the unsharded run's", merged)
		}
	}
	for _, tc := range []struct {
		name     string
		manifest string
		shards   string
	}{
		{"baselines.yaml in 3 shards merges to the unsharded run", "baselines.yaml", "3"},
		{"lab.yaml in 4 shards merges to the unsharded run", "lab.yaml", "4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := filepath.Abs("../../manifests/" + tc.manifest)
			single := filepath.Join(dir, tc.manifest+"-single")
			stress(t, "run", "-quiet", "-out", single, m)
			study := filepath.Join(dir, tc.manifest+"-slurm")
			stress(t, "slurm", "-shards", tc.shards, "-out", study, "-stress", bin, "-wait", m)
			same(t, filepath.Join(study, "merged"), single)
			var sched struct {
				Scheduler struct{ Kind, TaskID string } `json:"scheduler"`
			}
			if b, err := os.ReadFile(filepath.Join(study, "shard-2", "manifest.json")); err != nil || !strings.Contains(string(b), `"scheduler": {`) {
				t.Errorf("shard-2 records no scheduler: %v %s", err, sched)
			}
		})
	}

	// One task cancelled: the merge cannot run; the task is resubmitted
	// alone, resumes or starts its shard, and the merge is resubmitted.
	m, _ := filepath.Abs("../../manifests/lab.yaml")
	study := filepath.Join(dir, "cancelled")
	out := stress(t, "slurm", "-shards", "4", "-out", study, "-stress", bin, m)
	job := strings.TrimSuffix(strings.Fields(strings.TrimPrefix(out, "submitted array job "))[0], ":")
	if err := exec.Command("scancel", job+"_2").Run(); err != nil {
		t.Fatalf("scancel %s_2: %v", job, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		q, _ := exec.Command("squeue", "-h").Output()
		if len(bytes.TrimSpace(q)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs still queued: %s", q)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(study, "merged")); err == nil {
		t.Fatal("the merge ran although a task was cancelled")
	}
	for _, args := range [][]string{{"--wait", "--array=2", filepath.Join(study, "slurm", "array.sh")}, {"--wait", filepath.Join(study, "slurm", "merge.sh")}} {
		if out, err := exec.Command("sbatch", args...).CombinedOutput(); err != nil {
			t.Fatalf("sbatch %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	same(t, filepath.Join(study, "merged"), filepath.Join(dir, "lab.yaml-single"))
}
