package results

import (
	"strings"
	"testing"
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
		return []string{SlurmTaskID, id, SlurmTaskMin, lo, SlurmTaskMax, hi, SlurmTaskCount, n, SlurmJobID, "77", SubmissionVar, "sub-1"}
	}
	for _, tc := range []struct {
		name  string
		env   []string
		count int
		want  Shard
		sched Scheduler
		err   string
	}{
		{"slurm first", slurm("0", "0", "3", "4"), 0, Shard{1, 4}, Scheduler{"slurm", "77", "0", "sub-1"}, ""},
		{"slurm from 5", slurm("7", "5", "8", "4"), 0, Shard{3, 4}, Scheduler{"slurm", "77", "7", "sub-1"}, ""},
		{"slurm resubmitted alone", slurm("2", "2", "2", "1"), 4, Shard{3, 4}, Scheduler{"slurm", "77", "2", "sub-1"}, ""},
		{"slurm outside the count", slurm("4", "0", "4", "5"), 4, Shard{}, Scheduler{}, "SLURM_ARRAY_TASK_ID=4 is outside -shards 4"},
		{"slurm step", slurm("0", "0", "6", "4"), 0, Shard{}, Scheduler{}, "a step other than 1"},
		{"slurm outside", slurm("9", "0", "3", "4"), 0, Shard{}, Scheduler{}, "SLURM_ARRAY_TASK_ID=9 is outside the array"},
		{"slurm no count", []string{SlurmTaskID, "1", SlurmTaskMin, "0"}, 0, Shard{}, Scheduler{}, `SLURM_ARRAY_TASK_COUNT is "", want a non-negative integer`},
		{"kubernetes", []string{KubeIndex, "2", "HOSTNAME", "job-2-abc"}, 3, Shard{3, 3}, Scheduler{"kubernetes", "job-2-abc", "2", ""}, ""},
		{"kubernetes no count", []string{KubeIndex, "2"}, 0, Shard{}, Scheduler{}, "give the job's completions as flag -shards N"},
		{"kubernetes outside", []string{KubeIndex, "3"}, 3, Shard{}, Scheduler{}, "JOB_COMPLETION_INDEX=3 is outside -shards 3"},
		{"kubernetes bad", []string{KubeIndex, "x"}, 3, Shard{}, Scheduler{}, `JOB_COMPLETION_INDEX is "x"`},
		{"both", append(slurm("0", "0", "0", "1"), KubeIndex, "0"), 1, Shard{}, Scheduler{}, "both SLURM_ARRAY_TASK_ID (Slurm) and JOB_COMPLETION_INDEX (Kubernetes) are set"},
		{"none", nil, 0, Shard{}, Scheduler{}, "no scheduler variable is set (SLURM_ARRAY_TASK_ID for a Slurm job array, JOB_COMPLETION_INDEX for a Kubernetes Indexed Job)"},
	} {
		sh, sched, err := ShardFromEnv(env(tc.env...), tc.count)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || sh != tc.want || sched == nil || *sched != tc.sched {
			t.Errorf("%s: %v %+v %v, want %v %+v", tc.name, sh, sched, err, tc.want, tc.sched)
		}
	}
}
