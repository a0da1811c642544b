package mcpenv

import (
	"encoding/json"
	"fmt"

	"github.com/mcpstress/stress/capture"
	"github.com/mcpstress/stress/coding/rules"
	"github.com/mcpstress/stress/study"
)

// pseudonyms are the server pseudonyms of the reference scenarios'
// corpus records (the bootstrap clusters), by Servers key.
var pseudonyms = map[string]string{"memory": "RM", "filesystem": "RF", "everything": "RE"}

// classProbes are the probe and cause of each class, in the corpus
// vocabulary: a missing argument is the missing_required probe, whose
// cause is invalid_type (see study.MissingRequired).
var classProbes = map[study.Cause]struct {
	probe study.Probe
	cause study.Cause
}{
	"invalid_type":  {study.WrongType, study.InvalidType},
	"missing_field": {study.MissingRequired, study.InvalidType},
	"unknown_tool":  {study.NonexistentTool, study.UnknownTool},
	"invalid_value": {study.Sentinel, study.InvalidValue},
}

// Record returns the corpus record of the decision's scenario from its
// first observation (obs, what Start returned): cause, code and target
// from the scenario's class, the control envelope, and the profile coding
// the rules propose (coding/rules, the coder capture uses; not confirmed
// by hand). Call it after Start.
func (e *Env) Record(obs json.RawMessage) (study.Scenario, error) {
	if e.session == nil {
		return study.Scenario{}, fmt.Errorf("scenario %s: Record before Start", e.sc.ID)
	}
	pc, ok := classProbes[e.sc.Class]
	if !ok {
		return study.Scenario{}, fmt.Errorf("scenario %s: unknown class %q", e.sc.ID, e.sc.Class)
	}
	info, _ := pc.cause.Info()
	target := study.Target{Kind: info.TargetKind, Pointer: e.sc.Pointer}
	if pc.cause == study.UnknownTool {
		target = study.Target{Kind: info.TargetKind, Name: e.sc.Tool}
	}
	surface := study.SurfaceOf(obs)
	s := study.Scenario{ID: e.sc.ID, Observation: obs}
	text := s.ObservationText()
	env, err := capture.Envelope(info.Code, target, e.sc.Preferred, text, info.Words)
	if err != nil {
		return study.Scenario{}, err
	}
	version := ""
	if r := e.session.InitializeResult(); r != nil {
		version = r.ProtocolVersion
	}
	rec := study.Scenario{
		ID: e.sc.ID, Server: pseudonyms[e.sc.Server], ProtocolVersion: version,
		Probe: pc.probe, Cause: pc.cause, Surface: surface, Observation: obs,
		Code: info.Code, Target: target, Preferred: e.sc.Preferred, PreferredSet: e.sc.PreferredSet, NonHarm: e.sc.NonHarm,
		ControlEnvelope: env,
	}
	rec.Profile = rules.Code(&rec)
	return rec, nil
}
