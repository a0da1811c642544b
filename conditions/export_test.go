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
