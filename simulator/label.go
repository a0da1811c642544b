package simulator

import (
	"encoding/json"

	"github.com/mcpstress/stress/conditions"
)

// label is the decision loop of task Label: the model sees the rendered
// failure and names a policy; the replay mode carries it out (stored:
// the failure again after a retry_now; live: the environment's answer
// to any policy but stop_or_escalate) until the model stops, the cap is
// reached or the environment settles the decision.
func (pl *play) label(p *conditions.Prompt) {
	msgs, err := p.InitialOnce(pl.s, pl.d.Key.Condition)
	if err != nil {
		pl.d.Err = err
		return
	}
	mode, shown, err := pl.replayMode(p)
	if err != nil {
		pl.failedBeforeTurn0(err, msgs)
		return
	}
	defer mode.close()
	pl.msgs, pl.shown = msgs, shown
	if pl.turns(parseLabel, mode.step) {
		pl.end(mode.outcome(pl.scoring()))
	}
}

// replayMode starts the replay mode of the decision: live when the
// Config has an environment (started here, with what turn 0 shows), else
// stored.
func (pl *play) replayMode(p *conditions.Prompt) (replay, json.RawMessage, error) {
	c := pl.d.Key.Condition
	if pl.cfg.Env == nil {
		return &stored{p: p, s: pl.s, c: c, cap: pl.cfg.ReplayCap}, nil, nil
	}
	l, shown, err := startLive(pl.ctx, &pl.cfg, pl.s, pl.d.Key)
	if err != nil {
		return nil, nil, err
	}
	return liveLabel{live: l, p: p, c: c}, shown, nil
}
