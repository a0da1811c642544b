package conditions

import (
	"encoding/json"

	"github.com/mcpstress/stress/study"
)

// What the tests of package conditions_test check beyond the package's
// API: the renderers behind Prompt.
var (
	Annotation         = annotation
	ContractResult     = contractResult
	DataFor            = dataFor
	Explanation        = explanation
	Factorial          = factorial
	FactorialCondition = factorialCondition
	FalseTarget        = falseTarget
	OwnRateLimit       = ownRateLimit
)

// CategoryResult is category's result (categoryResultOf).
func CategoryResult(s *study.Scenario) (json.RawMessage, bool, error) {
	return categoryResultOf(s, study.Category)
}

// contractResult returns the tool result that condition c shows after its
// label line: for envelope, category and the conditions derived from them
// (ok is false for any other condition, and for a category condition when
// the cause has no category). From the category result of category:
//
//   - category_structured: the contract in structuredContent only; content
//     is an empty array (a host that drops the text copy).
//   - category_text: the serialized copy in content only; no
//     structuredContent (a host that drops the structured channel).
//   - category_false_retryable: both channels, with isRetryable inverted:
//     true on a validation, permission or business failure (false on a
//     transient one).
//
// From the scenario's control envelope, key order kept, with members of
// error replaced:
//
//   - envelope_false_replay: policy retry_now, retry {"sameRequest":
//     "safe"} and sideEffects "committed": an immediate replay of the
//     unchanged request declared safe after a committed side effect.
//   - envelope_false_target: a target of another kind than the code's,
//     naming a tool or parameter the observation does not mention (see
//     falseTarget), and the policy that target implies (select_tool for a
//     tool, revise_arguments for a parameter).
//
// The code and the base content stay the record's, so each lie is the one
// documented contradiction.
func contractResult(s *study.Scenario, c study.Condition) (raw json.RawMessage, ok bool, err error) {
	sp, known := specs[c]
	if !known || sp.result == nil {
		return nil, false, nil
	}
	return sp.result(s, c)
}
