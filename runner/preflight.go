package runner

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mcpstress/stress/results"

	"github.com/mcpstress/stress/models"
)

// Verify resolves every model that can be verified on its server, at
// every endpoint, and checks its pinned identity, before any inference. It
// returns what each model's first endpoint reported and one joined error
// listing each failed model and endpoint, and each server that could not
// be reached once (models.JoinErrors).
func (p *Plan) Verify(ctx context.Context) (map[string]*results.ModelCheck, error) {
	checks := map[string]*results.ModelCheck{}
	var errs []error
	for i, md := range p.m.Models {
		for e, inst := range p.endpoints[i] {
			v, ok := inst.(models.Verifier)
			if !ok {
				continue
			}
			facts, err := v.Verify(ctx)
			if e == 0 {
				checks[md.Name] = &results.ModelCheck{Facts: facts}
			}
			var down *models.UnreachableError
			if err != nil && len(md.Endpoints) > 1 && !errors.As(err, &down) { // that one names its host
				err = fmt.Errorf("model %q endpoint %s: %w", md.Name, md.Endpoints[e], err)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return checks, models.JoinErrors(errs...)
}

// Preflight runs Verify, then the seed probe of every model that has one
// (unless its manifest entry says seed_check: off). A server that ignores
// seeds is a loud warning on log, or an error with seed_check: error. The
// results are recorded in the bundle's manifest.json.
func (p *Plan) Preflight(ctx context.Context, log io.Writer) error {
	checks, err := p.Verify(ctx)
	if err != nil {
		return fmt.Errorf("preflight, before any call:\n%w", err)
	}
	var errs []error
	for i, md := range p.m.Models {
		sc, ok := p.endpoints[i][0].(models.SeedChecker)
		if !ok || md.SeedCheck == "off" {
			continue
		}
		honoured, detail, err := sc.SeedCheck(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("model %q: %w", md.Name, err))
			continue
		}
		c := checks[md.Name]
		if c == nil {
			c = &results.ModelCheck{}
			checks[md.Name] = c
		}
		c.SeedHonoured, c.SeedDetail = &honoured, detail
		if !honoured {
			if md.SeedCheck == "error" {
				errs = append(errs, fmt.Errorf("model %q: the server does not honour seeds (%s) and seed_check is error", md.Name, detail))
				continue
			}
			fmt.Fprintf(log, "WARNING: model %q: the server does not honour seeds: %s\nWARNING: replicates will not be reproducible; set seed_check: error to refuse such a run\n", md.Name, detail)
		}
	}
	p.checks = checks
	return errors.Join(errs...)
}
