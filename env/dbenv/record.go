package dbenv

import (
	"encoding/json"
	"fmt"

	"github.com/mcpstress/stress/coding/rules"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// Record returns the corpus record of the decision's scenario from its
// first observation (obs, what Start returned): cause and code from the
// scenario's class, the target by the class's target kind, the control
// envelope, and the profile coding the rules propose (not confirmed by
// hand). Call it after Start.
func (e *Env) Record(obs json.RawMessage) (study.Scenario, error) {
	if e.srv == nil {
		return study.Scenario{}, fmt.Errorf("scenario %s: Record before Start", e.sc.ID)
	}
	sc := e.sc
	info, ok := sc.Class.Info()
	if !ok {
		return study.Scenario{}, fmt.Errorf("scenario %s: unknown class %q", sc.ID, sc.Class)
	}
	version := ""
	if r := e.srv.session.InitializeResult(); r != nil {
		version = r.ProtocolVersion
	}
	s := study.Scenario{
		ID: sc.ID, Server: e.f.set.pseudonym(), ProtocolVersion: version, Probe: study.ProxyCall,
		Cause: sc.Class, Surface: study.SurfaceOf(obs), Observation: obs, Code: info.Code,
		Target: sc.target(info.TargetKind), Preferred: sc.Preferred, PreferredSet: sc.PreferredSet, NonHarm: sc.NonHarm,
	}
	spec := study.EnvelopeSpec{Code: info.Code, Target: s.Target, Policy: s.Preferred,
		SameRequest: "unsafe", SideEffects: info.SideEffects, Text: s.ObservationText(), Words: info.Words}
	if s.Preferred == study.RetryNow || s.Preferred == study.RetryLater {
		spec.SameRequest = "safe"
	}
	if s.Preferred == study.RetryLater {
		ms := int64(simulator.DefaultRetryDelayMS)
		if d, ok := study.AnnouncedWait([]byte(s.ObservationText())); ok {
			ms = d.Milliseconds()
		}
		spec.AfterMS = &ms
	}
	var err error
	if s.ControlEnvelope, err = study.MarshalEnvelope(spec); err != nil {
		return study.Scenario{}, err
	}
	s.Profile = rules.Code(&s)
	return s, nil
}

// target is the repair target of the scenario by its class's target
// kind: the argument at fault, the first call's tool (and the tool of a
// server's own rate limit), the proxy's credential, or the database
// behind the server.
func (sc *Scenario) target(kind string) study.Target {
	if sc.Class == study.RateLimit && sc.Limit == "server" {
		return study.Target{Kind: "tool", Name: sc.Tool} // the server's own limit on the tool
	}
	switch kind {
	case "parameter":
		return study.Target{Kind: kind, Pointer: sc.Pointer}
	case "tool":
		return study.Target{Kind: kind, Name: sc.Tool}
	case "credential":
		return study.Target{Kind: kind, Name: "database credential"}
	}
	return study.Target{Kind: "dependency", Name: "database"}
}
