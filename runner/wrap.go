package runner

import "github.com/mcpstress/stress/models"

// Wrap replaces every model of the plan by wrap(model), e.g. to trace
// calls or inject faults in tests: each model's instance for every one of
// its endpoints. Call it before Run.
func (p *Plan) Wrap(wrap func(models.Model) models.Model) {
	for _, insts := range p.endpoints {
		for e := range insts {
			insts[e] = wrap(insts[e])
		}
	}
}
