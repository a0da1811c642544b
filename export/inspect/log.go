// Package inspect writes a stress bundle as Inspect eval logs (UK AISI
// Inspect's log format, version 2): one log per (model, prompt,
// condition) of the bundle, each decision a sample, so that Inspect's log
// viewer, its log dataframes and the tools built on them read every
// decision's messages, raw model output, tool calls and outcome columns.
//
// The log header's parts are written with encoding/json from the types
// below, in the order Inspect declares its fields (a reader of the header
// alone stops at "samples", so the header comes first); the samples are
// assembled from pre-encoded pieces (sample.go), one decision at a time.
package inspect

import "encoding/json"

// LogVersion is the version of Inspect's log format the logs are written
// in (inspect_ai's LOG_SCHEMA_VERSION).
const LogVersion = 2

// header is an EvalLog without its samples.
type header struct {
	Version     int            `json:"version"`
	Status      string         `json:"status"` // success, or error for a partial bundle
	Eval        evalSpec       `json:"eval"`
	Plan        plan           `json:"plan"`
	Results     *evalResults   `json:"results,omitempty"`
	Stats       stats          `json:"stats"`
	Error       *evalError     `json:"error,omitempty"`
	Invalidated bool           `json:"invalidated"`
	Tags        []string       `json:"tags"`
	Metadata    map[string]any `json:"metadata"`
}

// evalSpec is the log's eval: the task, the model and the configuration.
type evalSpec struct {
	EvalID              string            `json:"eval_id"`
	RunID               string            `json:"run_id"`
	Created             string            `json:"created"`
	Task                string            `json:"task"`
	TaskID              string            `json:"task_id"`
	TaskVersion         int               `json:"task_version"`
	TaskDisplayName     string            `json:"task_display_name"`
	TaskAttribs         struct{}          `json:"task_attribs"`
	TaskArgs            map[string]any    `json:"task_args"`
	TaskArgsPassed      map[string]any    `json:"task_args_passed"`
	Solver              string            `json:"solver"`
	Dataset             dataset           `json:"dataset"`
	Model               string            `json:"model"`
	ModelGenerateConfig generateConfig    `json:"model_generate_config"`
	ModelBaseURL        string            `json:"model_base_url,omitempty"`
	ModelArgs           map[string]any    `json:"model_args"`
	Config              evalConfig        `json:"config"`
	Packages            map[string]string `json:"packages"`
	Metadata            map[string]any    `json:"metadata"`
}

// dataset describes the corpus the samples come from.
type dataset struct {
	Name     string `json:"name"`
	Location string `json:"location,omitempty"`
	Samples  int    `json:"samples"`
	Shuffled bool   `json:"shuffled"`
}

// generateConfig is Inspect's GenerateConfig: the sampling settings.
type generateConfig struct {
	Temperature *float64 `json:"temperature,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
}

// evalConfig is Inspect's EvalConfig, as far as a study has one.
type evalConfig struct {
	Epochs        int      `json:"epochs"`
	EpochsReducer []string `json:"epochs_reducer"`
	FailOnError   bool     `json:"fail_on_error"`
	LogSamples    bool     `json:"log_samples"`
	ScoreDisplay  bool     `json:"score_display"`
}

// plan is the log's plan: one step, the task's trajectory.
type plan struct {
	Name   string     `json:"name"`
	Steps  []planStep `json:"steps"`
	Config struct{}   `json:"config"`
}

// planStep is one solver of a plan.
type planStep struct {
	Solver string         `json:"solver"`
	Params map[string]any `json:"params"`
	// ParamsPassed are the parameters the manifest passed: all of them
	// (as Inspect fills them in reading a log written without them).
	ParamsPassed map[string]any `json:"params_passed"`
}

// evalResults are the cell's counts: a score per outcome column.
type evalResults struct {
	TotalSamples     int         `json:"total_samples"`
	CompletedSamples int         `json:"completed_samples"`
	Scores           []evalScore `json:"scores"`
}

// evalScore is one outcome column over the cell: its decisions, or,
// with Reducer "pass^k", its scenarios reduced over their replicates
// (Inspect's epochs) to pass^k.
type evalScore struct {
	Name            string   `json:"name"`
	Scorer          string   `json:"scorer"`
	Reducer         string   `json:"reducer,omitempty"`
	ScoredSamples   int      `json:"scored_samples"`
	UnscoredSamples int      `json:"unscored_samples"`
	Params          struct{} `json:"params"`
	Metrics         metrics  `json:"metrics"`
}

// metrics are a score's metrics, the mean first (Inspect's viewer and
// listing show a log's first metric of its first score).
type metrics struct {
	Mean  evalMetric `json:"mean"`
	Count evalMetric `json:"count"`
}

// evalMetric is one metric of a score.
type evalMetric struct {
	Name   string   `json:"name"`
	Value  float64  `json:"value"`
	Params struct{} `json:"params"`
}

// stats are the run's times and token usage.
type stats struct {
	StartedAt              string           `json:"started_at"`
	CompletedAt            string           `json:"completed_at"`
	ModelUsage             map[string]usage `json:"model_usage"`
	RoleUsage              struct{}         `json:"role_usage"`
	ConnectionLimitHistory []struct{}       `json:"connection_limit_history"`
}

// usage is Inspect's ModelUsage.
type usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// add adds the tokens of one call.
func (u *usage) add(in, out int) {
	u.InputTokens += int64(in)
	u.OutputTokens += int64(out)
	u.TotalTokens += int64(in + out)
}

// evalError is Inspect's EvalError (a log's or a sample's).
type evalError struct {
	Message       string `json:"message"`
	Traceback     string `json:"traceback"`
	TracebackANSI string `json:"traceback_ansi"`
}

// listingEntry is one log in listing.json, the index the static viewer
// reads from a log directory (Inspect's LogOverview).
type listingEntry struct {
	EvalID        string      `json:"eval_id"`
	RunID         string      `json:"run_id"`
	Task          string      `json:"task"`
	TaskID        string      `json:"task_id"`
	TaskVersion   int         `json:"task_version"`
	Version       int         `json:"version"`
	Status        string      `json:"status"`
	Invalidated   bool        `json:"invalidated"`
	Model         string      `json:"model"`
	StartedAt     string      `json:"started_at"`
	CompletedAt   string      `json:"completed_at"`
	PrimaryMetric *evalMetric `json:"primary_metric,omitempty"`
	Error         *evalError  `json:"error,omitempty"`
}

// marshalHead returns h as JSON without its closing brace, so that the
// samples can follow.
func marshalHead(h *header) ([]byte, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return b[:len(b)-1], nil
}
