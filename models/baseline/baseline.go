// Package baseline implements the deterministic baselines of
// docs/specification.md section 4 as model backends. Each reads only the
// messages it is sent (what the rendered condition shows), never the
// corpus' ground truth, and answers with JSON text that goes through the
// same parser as a real model's.
package baseline

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/study"
)

// Backend is the registry name of the baselines.
const Backend = "baseline"

// The baseline model names a manifest may use.
const (
	AlwaysStop     = "always_stop"     // always stop_or_escalate
	CodeRegistry   = "code_registry"   // maps a shown cause code to the registry policy
	explicitPolicy = "explicit_policy" // follows a disclosed policy label
	NaiveRetry     = "naive_retry"     // always retry_now: the client that replays every failure at once
	ReplaySame     = "replay_same"     // naive_retry under the name of the action task's baseline that sends the failed call again
)

func init() {
	models.Register(Backend, models.Backend{New: New})
}

// baseline is one deterministic baseline.
type baseline struct {
	kind  string
	delay time.Duration // from the delay_ms option
}

// delayOption is the model option that makes every answer take that many
// milliseconds (0 to 600000), to simulate a slow server in tests.
const delayOption = "delay_ms"

var _ models.Model = (*baseline)(nil)

// New builds the baseline named by spec.Model.
func New(spec models.Spec) (models.Model, error) {
	if actKinds[spec.Model] {
		return &baseline{kind: spec.Model}, nil // the acting baselines (act.go)
	}
	var delay time.Duration
	if v, ok := spec.Options[delayOption]; ok {
		var ms float64
		switch x := v.(type) {
		case int:
			ms = float64(x)
		case int64:
			ms = float64(x)
		case uint64:
			ms = float64(x)
		case float64:
			ms = x
		default:
			return nil, fmt.Errorf("model %q: option %s: want a number of milliseconds, got %T", spec.Name, delayOption, v)
		}
		if ms < 0 || ms > 600000 {
			return nil, fmt.Errorf("model %q: option %s: want 0 to 600000 ms, got %v", spec.Name, delayOption, v)
		}
		delay = time.Duration(ms * float64(time.Millisecond))
	}
	switch spec.Model {
	case AlwaysStop, CodeRegistry, explicitPolicy, NaiveRetry:
		return &baseline{kind: spec.Model, delay: delay}, nil
	case ReplaySame:
		return &baseline{kind: NaiveRetry, delay: delay}, nil
	}
	return nil, fmt.Errorf("model %q: unknown baseline %q (want %s, %s, %s, %s, %s or %s)", spec.Name, spec.Model, AlwaysStop, CodeRegistry, explicitPolicy, NaiveRetry, ReplaySame, SchemaRepair)
}

var (
	codePattern   = regexp.MustCompile(`example\.mcp\.[a-z_]+(?:\.[a-z_]+)+`)
	policyPattern = regexp.MustCompile(`"policy"\s*:\s*"([a-z_]+)"`)
)

// Generate answers from the last user message. Where the baseline's input
// (a cause code, a disclosed policy) is absent or unknown, it stops.
func (b *baseline) Generate(ctx context.Context, req models.Request) (models.Reply, error) {
	if actKinds[b.kind] {
		return b.generateAct(ctx, req)
	}
	if err := ctx.Err(); err != nil {
		return models.Reply{}, err
	}
	if b.delay > 0 {
		t := time.NewTimer(b.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return models.Reply{}, ctx.Err()
		}
	}
	var last string
	for _, m := range req.Messages {
		if m.Role == "user" {
			last = m.Content
		}
	}
	policy := study.StopOrEscalate
	switch b.kind {
	case NaiveRetry:
		policy = study.RetryNow
	case CodeRegistry:
		if code := codePattern.FindString(last); code != "" {
			if cause, ok := study.CauseOfCode(code); ok {
				info, _ := cause.Info()
				policy = registryPolicy(cause, info)
			}
		}
	case explicitPolicy:
		if m := policyPattern.FindStringSubmatch(last); m != nil {
			if p := study.Policy(m[1]); p.Valid() {
				policy = p
			}
		}
	}
	text, err := json.Marshal(struct {
		Status study.Status `json:"operation_status"`
		Policy study.Policy `json:"recovery_policy"`
	}{study.Failed, policy})
	return models.Reply{Text: string(text)}, err
}

// registryPolicy is the host registry's choice for a cause. Note: for a
// transient code the registry cannot tell from the code alone whether a
// replay is safe, so it chooses the delayed retry.
func registryPolicy(c study.Cause, info study.CauseInfo) study.Policy {
	if c == study.Transient {
		return study.RetryLater
	}
	return info.Preferred[0]
}
