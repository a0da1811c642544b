package results

// Scheduler is the cluster scheduler a shard ran under, as its
// environment named it: the job and task ids that find the shard's logs.
type Scheduler struct {
	Kind   string `json:"kind"`             // "slurm" or "kubernetes"
	JobID  string `json:"job_id,omitempty"` // Slurm: SLURM_ARRAY_JOB_ID; Kubernetes: the pod's host name
	TaskID string `json:"task_id"`          // Slurm: SLURM_ARRAY_TASK_ID; Kubernetes: JOB_COMPLETION_INDEX
	// Submission is the id stress slurm gives one submission of a study
	// (STRESS_SUBMISSION in its array script, kept when a task is
	// resubmitted): runner.Merge refuses shards of different submissions.
	Submission string `json:"submission,omitempty"`
}
