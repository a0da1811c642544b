package runner

import (
	"strings"
	"testing"

	"github.com/mcpstress/stress/results"
)

func TestShardFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	slurm := func(id, lo, hi, n string) []string {
		return []string{slurmTaskID, id, slurmTaskMin, lo, slurmTaskMax, hi, slurmTaskCount, n, slurmJobID, "77", submissionVar, "sub-1"}
	}
	for _, tc := range []struct {
		name  string
		env   []string
		count int
		want  results.Shard
		sched results.Scheduler
		err   string
	}{
		{"slurm first", slurm("0", "0", "3", "4"), 0, results.Shard{I: 1, N: 4}, results.Scheduler{Kind: "slurm", JobID: "77", TaskID: "0", Submission: "sub-1"}, ""},
		{"slurm from 5", slurm("7", "5", "8", "4"), 0, results.Shard{I: 3, N: 4}, results.Scheduler{Kind: "slurm", JobID: "77", TaskID: "7", Submission: "sub-1"}, ""},
		{"slurm resubmitted alone", slurm("2", "2", "2", "1"), 4, results.Shard{I: 3, N: 4}, results.Scheduler{Kind: "slurm", JobID: "77", TaskID: "2", Submission: "sub-1"}, ""},
		{"slurm outside the count", slurm("4", "0", "4", "5"), 4, results.Shard{}, results.Scheduler{}, "SLURM_ARRAY_TASK_ID=4 is outside -shards 4"},
		{"slurm step", slurm("0", "0", "6", "4"), 0, results.Shard{}, results.Scheduler{}, "a step other than 1"},
		{"slurm outside", slurm("9", "0", "3", "4"), 0, results.Shard{}, results.Scheduler{}, "SLURM_ARRAY_TASK_ID=9 is outside the array"},
		{"slurm no count", []string{slurmTaskID, "1", slurmTaskMin, "0"}, 0, results.Shard{}, results.Scheduler{}, `SLURM_ARRAY_TASK_COUNT is "", want a non-negative integer`},
		{"kubernetes", []string{kubeIndex, "2", "HOSTNAME", "job-2-abc"}, 3, results.Shard{I: 3, N: 3}, results.Scheduler{Kind: "kubernetes", JobID: "job-2-abc", TaskID: "2", Submission: ""}, ""},
		{"kubernetes no count", []string{kubeIndex, "2"}, 0, results.Shard{}, results.Scheduler{}, "give the job's completions as flag -shards N"},
		{"kubernetes outside", []string{kubeIndex, "3"}, 3, results.Shard{}, results.Scheduler{}, "JOB_COMPLETION_INDEX=3 is outside -shards 3"},
		{"kubernetes bad", []string{kubeIndex, "x"}, 3, results.Shard{}, results.Scheduler{}, `JOB_COMPLETION_INDEX is "x"`},
		{"both", append(slurm("0", "0", "0", "1"), kubeIndex, "0"), 1, results.Shard{}, results.Scheduler{}, "both SLURM_ARRAY_TASK_ID (Slurm) and JOB_COMPLETION_INDEX (Kubernetes) are set"},
		{"none", nil, 0, results.Shard{}, results.Scheduler{}, "no scheduler variable is set (SLURM_ARRAY_TASK_ID for a Slurm job array, JOB_COMPLETION_INDEX for a Kubernetes Indexed Job)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh, sched, err := ShardFromEnv(env(tc.env...), tc.count)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || sh != tc.want || sched == nil || *sched != tc.sched {
				t.Errorf("%v %+v %v, want %v %+v", sh, sched, err, tc.want, tc.sched)
			}
		})
	}
}
