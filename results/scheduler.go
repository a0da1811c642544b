package results

import (
	"fmt"
	"strconv"
)

// Scheduler is the cluster scheduler a shard ran under, as its
// environment named it: the job and task ids that find the shard's logs.
type Scheduler struct {
	Kind   string `json:"kind"`             // "slurm" or "kubernetes"
	JobID  string `json:"job_id,omitempty"` // Slurm: SLURM_ARRAY_JOB_ID; Kubernetes: the pod's host name
	TaskID string `json:"task_id"`          // Slurm: SLURM_ARRAY_TASK_ID; Kubernetes: JOB_COMPLETION_INDEX
	// Submission is the id stress slurm gives one submission of a study
	// (STRESS_SUBMISSION in its array script, kept when a task is
	// resubmitted): merge refuses shards of different submissions.
	Submission string `json:"submission,omitempty"`
}

// SubmissionVar is the variable that carries Scheduler.Submission.
const SubmissionVar = "STRESS_SUBMISSION"

// The scheduler variables ShardFromEnv reads.
const (
	SlurmTaskID    = "SLURM_ARRAY_TASK_ID"
	SlurmTaskMin   = "SLURM_ARRAY_TASK_MIN"
	SlurmTaskMax   = "SLURM_ARRAY_TASK_MAX"
	SlurmTaskCount = "SLURM_ARRAY_TASK_COUNT"
	SlurmJobID     = "SLURM_ARRAY_JOB_ID"
	KubeIndex      = "JOB_COMPLETION_INDEX"
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
func ShardFromEnv(getenv func(string) string, count int) (Shard, *Scheduler, error) {
	id, kube := getenv(SlurmTaskID), getenv(KubeIndex)
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
		return Shard{}, nil, fmt.Errorf("both %s (Slurm) and %s (Kubernetes) are set: cannot tell which scheduler assigns the shard", SlurmTaskID, KubeIndex)
	case id != "":
		task, err := num(SlurmTaskID)
		if err != nil {
			return Shard{}, nil, err
		}
		sched := &Scheduler{Kind: "slurm", JobID: getenv(SlurmJobID), TaskID: strconv.Itoa(task), Submission: getenv(SubmissionVar)}
		if count > 0 {
			// Note: with the count given, the task id is the shard's
			// 0-based index, so a task resubmitted alone (--array=K) runs
			// the same shard as in the whole array.
			if task >= count || count > 100000 {
				return Shard{}, nil, fmt.Errorf("%s=%d is outside -shards %d (the array's ids run 0 to %d)", SlurmTaskID, task, count, count-1)
			}
			return Shard{I: task + 1, N: count}, sched, nil
		}
		lo, err := num(SlurmTaskMin)
		if err != nil {
			return Shard{}, nil, err
		}
		n, err := num(SlurmTaskCount)
		if err != nil {
			return Shard{}, nil, err
		}
		if hi, err := num(SlurmTaskMax); err == nil && hi-lo+1 != n {
			return Shard{}, nil, fmt.Errorf("%s=%d, %s=%d and %s=%d: the array has gaps or a step other than 1 (want --array=0-%d, or give -shards)", SlurmTaskMin, lo, SlurmTaskMax, hi, SlurmTaskCount, n, n-1)
		}
		if task < lo || task-lo >= n || n > 100000 {
			return Shard{}, nil, fmt.Errorf("%s=%d is outside the array %s=%d, %s=%d", SlurmTaskID, task, SlurmTaskMin, lo, SlurmTaskCount, n)
		}
		return Shard{I: task - lo + 1, N: n}, sched, nil
	case kube != "":
		i, err := num(KubeIndex)
		if err != nil {
			return Shard{}, nil, err
		}
		if count < 1 || count > 100000 {
			return Shard{}, nil, fmt.Errorf("%s is set (a Kubernetes Indexed Job): give the job's completions as flag -shards N", KubeIndex)
		}
		if i >= count {
			return Shard{}, nil, fmt.Errorf("%s=%d is outside -shards %d (indexes run 0 to %d)", KubeIndex, i, count, count-1)
		}
		return Shard{I: i + 1, N: count}, &Scheduler{Kind: "kubernetes", JobID: getenv("HOSTNAME"), TaskID: strconv.Itoa(i), Submission: getenv(SubmissionVar)}, nil
	}
	return Shard{}, nil, fmt.Errorf("no scheduler variable is set (%s for a Slurm job array, %s for a Kubernetes Indexed Job)", SlurmTaskID, KubeIndex)
}
