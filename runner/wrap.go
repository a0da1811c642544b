package runner

import "github.com/mcpstress/stress/models"

// Wrap replaces every model of the plan by wrap(model), e.g. to trace
// calls or inject faults in tests: each model's instance for every one of
// its endpoints. Call it before Run.
func (p *Plan) Wrap(wrap func(models.Model) models.Model) {
	for i := range p.models {
		p.models[i] = wrap(p.models[i])
		for e := 1; e < len(p.endpoints[i]); e++ {
			p.endpoints[i][e] = wrap(p.endpoints[i][e])
		}
	}
}
