package simulator

import (
	"errors"
	"fmt"
)

// coding is the decision loop of task Coding: one turn, rendered by the
// Config's Coder, its answer scored as a label answer under stored
// replay.
func (pl *play) coding() {
	switch {
	case pl.cfg.Coder == nil:
		pl.d.Err = errors.New("task code needs Config.Coder to render its request")
		return
	case pl.cfg.ReplayCap != 0 || pl.cfg.Env != nil:
		pl.d.Err = fmt.Errorf("task code needs replay cap 0 and stored replay, got cap %d (live: %t)", pl.cfg.ReplayCap, pl.cfg.Env != nil)
		return
	}
	msgs, err := pl.cfg.Coder.Messages(pl.d.Key, pl.s)
	if err != nil {
		pl.d.Err = err
		return
	}
	pl.msgs = msgs
	if pl.turns(parseLabel, once) {
		pl.d.Outcome = Score(pl.scoring())
	}
}
