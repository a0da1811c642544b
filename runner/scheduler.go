package runner

import (
	"fmt"
	"strconv"

	"github.com/mcpstress/stress/results"
)

// submissionVar is the variable that carries results.Scheduler.Submission.
const submissionVar = "STRESS_SUBMISSION"

// The scheduler variables ShardFromEnv reads.
const (
	slurmTaskID    = "SLURM_ARRAY_TASK_ID"
	slurmTaskMin   = "SLURM_ARRAY_TASK_MIN"
	slurmTaskMax   = "SLURM_ARRAY_TASK_MAX"
	slurmTaskCount = "SLURM_ARRAY_TASK_COUNT"
	slurmJobID     = "SLURM_ARRAY_JOB_ID"
	kubeIndex      = "JOB_COMPLETION_INDEX"
)

// ShardFromEnv returns the shard a scheduler's environment (getenv)
// assigns to this task, for stress run -shard auto: a Slurm job array's
// SLURM_ARRAY_TASK_ID counted from SLURM_ARRAY_TASK_MIN, of
// SLURM_ARRAY_TASK_COUNT tasks (a step other than 1 is refused) or, when
// count > 0, as the 0-based index of count tasks (so a task resubmitted
// alone runs its own shard again), or a Kubernetes Indexed Job's 0-based
// JOB_COMPLETION_INDEX, of count tasks (required).
// Shards count from 1, so the first task is shard 1/n. Errors name the
// variables.
func ShardFromEnv(getenv func(string) string, count int) (results.Shard, *results.Scheduler, error) {
	id, kube := getenv(slurmTaskID), getenv(kubeIndex)
	num := func(name string) (int, error) {
		v := getenv(name)
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s is %q, want a non-negative integer", name, v)
		}
		return n, nil
	}
	switch {
	case id != "" && kube != "":
		return results.Shard{}, nil, fmt.Errorf("both %s (Slurm) and %s (Kubernetes) are set: cannot tell which scheduler assigns the shard", slurmTaskID, kubeIndex)
	case id != "":
		task, err := num(slurmTaskID)
		if err != nil {
			return results.Shard{}, nil, err
		}
		sched := &results.Scheduler{Kind: "slurm", JobID: getenv(slurmJobID), TaskID: strconv.Itoa(task), Submission: getenv(submissionVar)}
		if count > 0 {
			// Note: with the count given, the task id is the shard's
			// 0-based index, so a task resubmitted alone (--array=K) runs
			// the same shard as in the whole array.
			if task >= count || count > 100000 {
				return results.Shard{}, nil, fmt.Errorf("%s=%d is outside -shards %d (the array's ids run 0 to %d)", slurmTaskID, task, count, count-1)
			}
			return results.Shard{I: task + 1, N: count}, sched, nil
		}
		lo, err := num(slurmTaskMin)
		if err != nil {
			return results.Shard{}, nil, err
		}
		n, err := num(slurmTaskCount)
		if err != nil {
			return results.Shard{}, nil, err
		}
		if hi, err := num(slurmTaskMax); err == nil && hi-lo+1 != n {
			return results.Shard{}, nil, fmt.Errorf("%s=%d, %s=%d and %s=%d: the array has gaps or a step other than 1 (want --array=0-%d, or give -shards)", slurmTaskMin, lo, slurmTaskMax, hi, slurmTaskCount, n, n-1)
		}
		if task < lo || task-lo >= n || n > 100000 {
			return results.Shard{}, nil, fmt.Errorf("%s=%d is outside the array %s=%d, %s=%d", slurmTaskID, task, slurmTaskMin, lo, slurmTaskCount, n)
		}
		return results.Shard{I: task - lo + 1, N: n}, sched, nil
	case kube != "":
		i, err := num(kubeIndex)
		if err != nil {
			return results.Shard{}, nil, err
		}
		if count < 1 || count > 100000 {
			return results.Shard{}, nil, fmt.Errorf("%s is set (a Kubernetes Indexed Job): give the job's completions as flag -shards N", kubeIndex)
		}
		if i >= count {
			return results.Shard{}, nil, fmt.Errorf("%s=%d is outside -shards %d (indexes run 0 to %d)", kubeIndex, i, count, count-1)
		}
		return results.Shard{I: i + 1, N: count}, &results.Scheduler{Kind: "kubernetes", JobID: getenv("HOSTNAME"), TaskID: strconv.Itoa(i), Submission: getenv(submissionVar)}, nil
	}
	return results.Shard{}, nil, fmt.Errorf("no scheduler variable is set (%s for a Slurm job array, %s for a Kubernetes Indexed Job)", slurmTaskID, kubeIndex)
}
