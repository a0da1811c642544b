package dbenv

import (
	"bytes"
	"context"
	"fmt"

	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// ExecutionTable executes every policy's canonical recovery of every
// scenario of f's set, each on a fresh database (simulator.Executions,
// replay cap replayCap), and returns the table (simulator's format) and
// what disagrees with the scenarios' declared preferred and non-harm
// sets (simulator.CheckPreferred), one line each: a set is proven when
// the list is empty.
func ExecutionTable(ctx context.Context, f *Factory, replayCap int) ([]byte, []string, error) {
	var rows []simulator.ExecutionRow
	var problems []string
	for _, sc := range f.set.Scenarios {
		ex, err := simulator.Executions(ctx, f, sc.ID, 1, replayCap)
		if err != nil {
			return nil, nil, err
		}
		for _, msg := range simulator.CheckPreferred(ex, sc.PreferredSet, sc.NonHarm, true) {
			problems = append(problems, fmt.Sprintf("%s (%s): %s", sc.ID, sc.Class, msg))
		}
		rows = append(rows, simulator.ExecutionRow{Scenario: sc.ID, Class: string(sc.Class), Executions: ex})
	}
	var b bytes.Buffer
	if err := simulator.WriteExecutionTable(&b, rows); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), problems, nil
}

// Records returns the corpus record of every scenario of f's set, from
// its first call (Env.Record: the profile coding proposed by the rules,
// for a person to check and confirm).
func Records(ctx context.Context, f *Factory) ([]study.Scenario, error) {
	var out []study.Scenario
	for _, sc := range f.set.Scenarios {
		e, err := f.Actor(sc.ID)
		if err != nil {
			return nil, err
		}
		obs, err := e.Start(ctx)
		if err != nil {
			e.Close()
			return nil, err
		}
		r, err := e.Record(obs)
		e.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
